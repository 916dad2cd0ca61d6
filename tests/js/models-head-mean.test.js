// forward's `attentions: 'mean'` and the exported headMean: PyTorch's
// average_attn_weights=True (nn.MultiheadAttention's attn_output_weights.mean(dim=1)),
// [1, H, Lq, Lk] → [1, Lq, Lk], for a decoder's attentions (tests/golden/models/gpt2)
// and an encoder-decoder's encoder, decoder and cross attentions
// (tests/golden/models/marian). References: a float64 mean over heads taken here,
// (a) of the per-head attentions the same model returns with attentions: true, and
// (b) of the per-head float64 attentions in the folder's expected.json (the
// independent numpy generator of tests/reference/). Then the bad values.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init, headMean } from '../../web/node.js';
import { BACKENDS } from './helpers.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODELS = path.join(HERE, '..', 'golden', 'models');

function folder(name) {
  const dir = path.join(MODELS, name);
  const read = (f) => fs.readFileSync(path.join(dir, f));
  return { read, config: JSON.parse(read('config.json')), tokenizer: JSON.parse(read('tokenizer.json')), expected: JSON.parse(read('expected.json')) };
}

/** float64 mean over dim 1 of a flat [1, H, Lq, Lk] → a flat Float64Array [Lq·Lk]. */
function mean64(flat, H, Lq, Lk) {
  const per = Lq * Lk;
  const out = new Float64Array(per);
  for (let hh = 0; hh < H; hh++) for (let i = 0; i < per; i++) out[i] += flat[hh * per + i];
  for (let i = 0; i < per; i++) out[i] /= H;
  return out;
}

function maxAbs(a, b) {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** The mean tensor `got` against both references for one layer. */
function checkLayer(got, perHead, ref, H, Lq, Lk) {
  expect(got.shape).toEqual([1, Lq, Lk]);
  expect(got.data).toBeInstanceOf(Float32Array);
  expect(perHead.shape).toEqual([1, H, Lq, Lk]);
  // (a) the returned heads, averaged in float64: one float32 rounding apart
  expect(maxAbs(got.data, mean64(perHead.data, H, Lq, Lk))).toBeLessThan(1e-7);
  // (b) the reference's heads (float64), averaged: the model's own float32 error
  expect(maxAbs(got.data, mean64(ref.flat(Infinity), H, Lq, Lk))).toBeLessThan(1e-4);
  // rows of a mean of softmax rows still sum to 1
  for (let q = 0; q < Lq; q++) {
    let s = 0;
    for (let k = 0; k < Lk; k++) s += got.data[q * Lk + k];
    expect(Math.abs(s - 1)).toBeLessThan(1e-5);
  }
}

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

async function load(lab, name) {
  const f = folder(name);
  return lab.loadModel({ config: f.config, weights: f.read('model.safetensors'), tokenizer: f.tokenizer });
}

describe.each(BACKENDS)("attentions: 'mean' — %s", (backend) => {
  test('gpt2 (a decoder): every layer, every case, forward and forwardSync', async () => {
    const model = await load(labs[backend], 'gpt2');
    const { numHeads: H, numLayers: N } = model.config;
    let layers = 0;
    for (const c of folder('gpt2').expected.cases) {
      const L = c.ids.length;
      const heads = model.forwardSync(c.ids, { attentions: true });
      for (const r of [model.forwardSync(c.ids, { attentions: 'mean' }), await model.forward(c.ids, { attentions: 'mean' })]) {
        expect(r.attentions).toHaveLength(N);
        expect(Array.from(r.logits.data)).toEqual(Array.from(heads.logits.data));
        r.attentions.forEach((a, l) => {
          checkLayer(a, heads.attentions[l], c.attentions[l], H, L, L);
          // the exported helper gives the same tensor
          expect(headMean(heads.attentions[l])).toEqual(a);
          layers++;
        });
      }
    }
    expect(layers).toBe(2 * 3 * N);
    model.dispose();
  });

  test('marian (an encoder-decoder): encoder, decoder and cross attentions of every layer and case', async () => {
    const model = await load(labs[backend], 'marian');
    const { numHeads: H, numLayers: N, encoderHeads: He, encoderLayers: Ne } = model.config;
    let layers = 0;
    for (const c of folder('marian').expected.cases) {
      const Le = c.ids.length, Ld = c.decoder_input_ids.length;
      const o = { decoderInputIds: c.decoder_input_ids };
      const heads = model.forwardSync(c.text, { ...o, attentions: true });
      for (const r of [model.forwardSync(c.text, { ...o, attentions: 'mean' }), await model.forward(c.text, { ...o, attentions: 'mean' })]) {
        expect(r.decoderInputIds).toEqual(c.decoder_input_ids);
        expect(r.encoderAttentions).toHaveLength(Ne);
        expect(r.decoderAttentions).toHaveLength(N);
        expect(r.crossAttentions).toHaveLength(N);
        r.encoderAttentions.forEach((a, l) => checkLayer(a, heads.encoderAttentions[l], c.encoder_attentions[l], He, Le, Le));
        r.decoderAttentions.forEach((a, l) => checkLayer(a, heads.decoderAttentions[l], c.decoder_attentions[l], H, Ld, Ld));
        r.crossAttentions.forEach((a, l) => {
          checkLayer(a, heads.crossAttentions[l], c.cross_attentions[l], H, Ld, Le);
          expect(headMean(heads.crossAttentions[l])).toEqual(a);
        });
        layers += Ne + 2 * N;
      }
    }
    expect(layers).toBe(2 * 3 * (Ne + 2 * N));
    model.dispose();
  });
});

describe('attentions: bad values and headMean: bad tensors', () => {
  const BAD = ['avg', 'Mean', 1, 0, null, {}, ['mean']];

  test.each(['gpt2', 'marian'])('%s: forward and forwardSync refuse anything but true, false or \'mean\'; the model stays usable', async (name) => {
    const model = await load(labs.wasm, name);
    const c = folder(name).expected.cases[0];
    const opts = name === 'marian' ? { decoderInputIds: c.decoder_input_ids } : {};
    for (const v of BAD) {
      const msg = /^model\.forward: attentions must be true, false or 'mean'.*got /;
      expect(() => model.forwardSync(c.ids, { ...opts, attentions: v })).toThrow(msg);
      await expect(model.forward(c.ids, { ...opts, attentions: v })).rejects.toThrow(msg);
    }
    const ok = model.forwardSync(c.ids, { ...opts, attentions: false });
    expect(name === 'marian' ? ok.crossAttentions : ok.attentions).toBeNull();
    expect(model.forwardSync(c.ids, { ...opts, attentions: 'mean' }).logits.shape[0]).toBe(1);
    model.dispose();
  });

  test('headMean names what was wrong', () => {
    expect(() => headMean(null)).toThrow(/^headMean: the attention must be a tensor \{ data, shape \[B, H, Lq, Lk\] \}, got null/);
    expect(() => headMean({ data: new Float32Array(4), shape: [2, 2] })).toThrow(/shape must be \[B, H, Lq, Lk\].*got \[2, 2\]/);
    expect(() => headMean({ data: new Float32Array(5), shape: [1, 2, 1, 2] })).toThrow(/has 5 values, its shape \[1, 2, 1, 2\] needs 4/);
    expect(() => headMean({ data: new Float32Array(0), shape: [1, 0, 1, 2] })).toThrow(/no heads/);
    // B > 1: each batch row averaged on its own
    const m = headMean({ data: Float32Array.of(1, 3, 5, 7, 0, 2, 4, 6), shape: [2, 2, 1, 2] });
    expect(m.shape).toEqual([2, 1, 2]);
    expect(Array.from(m.data)).toEqual([3, 5, 2, 4]);
  });
});

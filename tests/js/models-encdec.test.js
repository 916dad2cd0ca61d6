// The encoder-decoders of issue 34 item 2 (marian, bart), each against the
// independent float64 reference of tests/reference/hf_encdec.py (numpy,
// transformers' modeling files; its batched and cached formulations agree to
// 1e-10): the tiny checkpoints of tests/golden/models/<family>/, in F32 and
// F16, on both wasm backends. Logits, the encoder, decoder and cross
// attentions, the encoder's last hidden state, the greedy continuation
// (generate with topK 1, which decodes on the key/value cache with the
// memory's cross keys and values projected once), nextTokens with
// decoderInputIds, the parameter count (num_parameters()), and the bad inputs.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { BACKENDS, maxRel } from './helpers.js';
import { architectureOf } from '../../web/lib/model/families/index.js';
import { checkGpuRuns } from '../../web/lib/model/gpu.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODELS = path.join(HERE, '..', 'golden', 'models');
const FAMILIES = ['marian', 'bart', 't5', 't5-v1_1'];

function folder(name) {
  const dir = path.join(MODELS, name);
  const read = (f) => fs.readFileSync(path.join(dir, f));
  return {
    read,
    config: JSON.parse(read('config.json')),
    tokenizer: JSON.parse(read('tokenizer.json')),
    expected: JSON.parse(read('expected.json')),
  };
}

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

async function load(name, { lab = labs.wasm, file = 'model.safetensors', config, weights } = {}) {
  const f = folder(name);
  return lab.loadModel({ config: config ?? f.config, weights: weights ?? f.read(file), tokenizer: f.tokenizer });
}

async function collect(iter) {
  const out = [];
  for await (const t of iter) out.push(t);
  return out;
}

const CASES = FAMILIES.flatMap((name) => folder(name).expected.dtype_files.map((file) => [name, file]));

describe.each(BACKENDS)('encoder-decoders, float64 references — %s', (backend) => {
  test.each(CASES)('%s from %s', async (name, file) => {
    const f = folder(name);
    const e = f.expected;
    const model = await load(name, { lab: labs[backend], file });
    expect(model.config.modelType).toBe(e.model_type);
    expect(model.config.isEncoderDecoder).toBe(true);
    expect(model.config.decoderStartTokenId).toBe(e.decoder_start_token_id);
    expect(model.config.parameters).toBe(e.parameters);
    const { numHeads: H, numLayers: N, encoderLayers: Ne, encoderHeads: He, vocabSize: V, embedDim: E } = model.config;
    for (const c of e.cases) {
      const Le = c.ids.length, Ld = c.decoder_input_ids.length;
      expect(model.encode(c.text)).toEqual(c.ids);
      const r = model.forwardSync(c.text, { decoderInputIds: c.decoder_input_ids, attentions: true });
      expect(r.ids).toEqual(c.ids);
      expect(r.decoderInputIds).toEqual(c.decoder_input_ids);
      expect(r.logits.shape).toEqual([1, Ld, V]);
      expect(maxRel(r.logits.data, c.logits)).toBeLessThan(1e-4);
      expect(r.encoderAttentions).toHaveLength(Ne);
      r.encoderAttentions.forEach((a, l) => {
        expect(a.shape).toEqual([1, He, Le, Le]);
        expect(maxRel(a.data, c.encoder_attentions[l])).toBeLessThan(1e-4);
      });
      expect(r.decoderAttentions).toHaveLength(N);
      r.decoderAttentions.forEach((a, l) => {
        expect(a.shape).toEqual([1, H, Ld, Ld]);
        expect(maxRel(a.data, c.decoder_attentions[l])).toBeLessThan(1e-4);
      });
      expect(r.crossAttentions).toHaveLength(N);
      r.crossAttentions.forEach((a, l) => {
        expect(a.shape).toEqual([1, H, Ld, Le]);
        expect(maxRel(a.data, c.cross_attentions[l])).toBeLessThan(1e-4);
      });
      expect(r.encoderLastHiddenState.shape).toEqual([1, Le, E]);
      expect(maxRel(r.encoderLastHiddenState.data, c.encoder_hidden)).toBeLessThan(1e-4);
      // greedy: topK 1, on the cache
      const gen = await collect(model.generate(c.text, { topK: 1, maxNewTokens: 4, seed: 3 }));
      expect(gen.map((t) => t.id)).toEqual(c.greedy);
      // nextTokens after the decoder ids: the reference's arg max of the last row
      const [top] = await model.nextTokens(c.ids, { decoderInputIds: c.decoder_input_ids, k: 1 });
      const last = c.logits[Ld - 1];
      expect(top.id).toBe(last.indexOf(Math.max(...last)));
    }
    model.dispose();
  });
});

describe('encoder-decoders: generation', () => {
  test.each(FAMILIES)('%s: seeded sampling repeats, an abort stops it, and a forward between steps changes nothing', async (name) => {
    const model = await load(name);
    const c = folder(name).expected.cases[1];
    const opts = { maxNewTokens: 6, temperature: 1.5, seed: 42 };
    const a = (await collect(model.generate(c.ids, opts))).map((t) => t.id);
    const b = (await collect(model.generate(c.ids, opts))).map((t) => t.id);
    expect(a).toEqual(b);
    expect(a.length).toBeGreaterThan(0);
    // another call between the steps (which replaces the decoder's memory and cache)
    const other = folder(name).expected.cases[0];
    const got = [];
    for await (const t of model.generate(c.ids, opts)) {
      got.push(t.id);
      model.forwardSync(other.ids, { attentions: false });
    }
    expect(got).toEqual(a);
    // text pieces add up to the decoded target
    const pieces = await collect(model.generate(c.text, { topK: 1, maxNewTokens: 4 }));
    expect(pieces.map((t) => t.text).join('')).toBe(model.decode(pieces.map((t) => t.id), { skipSpecialTokens: true }));
    const ctl = new AbortController();
    const stopped = [];
    for await (const t of model.generate(c.ids, { maxNewTokens: 4, topK: 1, signal: ctl.signal })) {
      stopped.push(t);
      ctl.abort();
    }
    expect(stopped).toHaveLength(1);
    model.dispose();
    expect(() => model.forwardSync(c.ids)).toThrow(/disposed|load it again/);
  });
});

describe('encoder-decoders: bad input', () => {
  test('decoder ids: too long, empty, out of range; unknown options; what is not available', async () => {
    const model = await load('marian');
    const c = folder('marian').expected.cases[0];
    const P = model.config.maxPositions;
    expect(() => model.forwardSync(c.ids, { decoderInputIds: new Array(P + 1).fill(3) })).toThrow(new RegExp(`decoderInputIds has ${P + 1} tokens, more than the decoder's ${P} positions`));
    expect(() => model.forwardSync(c.ids, { decoderInputIds: [] })).toThrow(/decoderInputIds has no tokens \(start it with decoder_start_token_id/);
    expect(() => model.forwardSync(c.ids, { decoderInputIds: [1, 9999] })).toThrow(/decoderInputIds\[1\] is 9999/);
    expect(() => model.forwardSync(c.ids, { decoderInputIds: 'abc' })).toThrow(/decoderInputIds must be an array of token ids/);
    expect(() => model.forwardSync(c.ids, { hiddenStates: true })).toThrow(/unknown option "hiddenStates"; allowed: decoderInputIds, attentions/);
    await expect(model.nextTokens(c.ids, { topK: 1 })).rejects.toThrow(/unknown option "topK"/);
    expect(() => model.generate(c.ids, { decoderInputIds: [1] })).toThrow(/unknown option "decoderInputIds"/);
    expect(() => model.save()).toThrow(/not available for encoder-decoder models \(marian\)/);
    await expect(model.fillMask('x')).rejects.toThrow(/not available for encoder-decoder/);
    // without decoderInputIds: the start token alone
    const r = model.forwardSync(c.ids, { attentions: false });
    expect(r.decoderInputIds).toEqual([model.config.decoderStartTokenId]);
    expect(r.crossAttentions).toBeNull();
    model.dispose();
  });

  test('decoderInputIds on an encoder-only or a decoder-only model names the problem', async () => {
    for (const name of ['bert', 'gpt2']) {
      const dir = path.join(MODELS, name);
      const model = await labs.wasm.loadModel({ config: JSON.parse(fs.readFileSync(path.join(dir, 'config.json'))), weights: fs.readFileSync(path.join(dir, 'model.safetensors')) });
      expect(() => model.forwardSync([1, 2, 3], { decoderInputIds: [0] })).toThrow(/decoderInputIds is for encoder-decoder models/);
      model.dispose();
    }
  });

  test('config.json: a missing decoder_start_token_id, unsupported keys', async () => {
    const f = folder('marian');
    const { decoder_start_token_id: _, ...noStart } = f.config;
    await expect(load('marian', { config: noStart })).rejects.toThrow(/no "decoder_start_token_id": marian's decoder starts from it/);
    await expect(load('marian', { config: { ...f.config, share_encoder_decoder_embeddings: false } })).rejects.toThrow(/share_encoder_decoder_embeddings: false is not supported/);
    await expect(load('marian', { config: { ...f.config, activation_function: 'tanh' } })).rejects.toThrow(/activation_function "tanh" is not supported for marian; allowed: gelu, gelu_new, swish, silu, relu/);
    await expect(load('bart', { config: { ...folder('bart').config, decoder_vocab_size: 7 } })).rejects.toThrow(/decoder_vocab_size \(7\) differs from vocab_size/);
    const t5 = folder('t5').config;
    await expect(load('t5', { config: { ...t5, relative_attention_max_distance: 4 } })).rejects.toThrow(/relative_attention_max_distance \(4\) must exceed relative_attention_num_buckets \/ 2 \(4\)/);
    await expect(load('t5', { config: { ...t5, feed_forward_proj: 'gated-relu' } })).rejects.toThrow(/feed_forward_proj "gated-relu" is not supported for t5; allowed: relu, gelu, silu, gated-gelu, gated-silu/);
  });

  test('missing or wrong-shaped tensors: the tensor and both shapes', async () => {
    const lab = labs.wasm;
    const names = {
      marian: ['model.decoder.layers.1.encoder_attn.k_proj.weight', 'model.encoder.layers.0.fc1.weight'],
      bart: ['model.decoder.layers.1.encoder_attn.k_proj.weight', 'model.encoder.layers.0.fc1.weight'],
      t5: ['decoder.block.1.layer.1.EncDecAttention.k.weight', 'encoder.block.0.layer.1.DenseReluDense.wi.weight'],
      't5-v1_1': ['decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight', 'encoder.block.0.layer.1.DenseReluDense.wi_1.weight'],
    };
    for (const name of FAMILIES) {
      const f = folder(name);
      const [gone, fcName] = names[name];
      const { tensors } = lab.readSafetensors(f.read('model.safetensors'));
      const { [gone]: _, ...missing } = tensors;
      const re = (x) => x.replace(/[.[\]]/g, '\\$&');
      await expect(load(name, { weights: lab.writeSafetensors(missing) })).rejects.toThrow(new RegExp(`lack 1 tensor a ${f.expected.model_type} model with this config.json needs: "${re(gone)}"`));
      const fc = tensors[fcName];
      const bad = { ...tensors, [fcName]: { data: fc.data.subarray(0, 16 * 31), shape: [31, 16], dtype: 'F32' } };
      await expect(load(name, { weights: lab.writeSafetensors(bad) })).rejects.toThrow(new RegExp(`tensor "${re(fcName)}" has shape \\[31, 16\\], but config.json implies \\[32, 16\\]`));
    }
  });

  test('a failed load leaves the wasm heap at its baseline; load → forward → generate → dispose cycles leave it flat', async () => {
    const lab = labs.wasm;
    const backend = lab._backend;
    const f = folder('t5-v1_1');
    const { tensors } = lab.readSafetensors(f.read('model.safetensors'));
    // the last tensor of the plan bad: both graphs were allocated and filled when it fails
    const head = tensors['lm_head.weight'];
    const bad = lab.writeSafetensors({ ...tensors, 'lm_head.weight': { data: head.data.map((v, i) => (i === 7 ? NaN : v)), shape: head.shape, dtype: 'F32' } });
    let before = 0;
    for (let run = 0; run < 2; run++) {
      before = backend.heapBytesInUse();
      await expect(load('t5-v1_1', { weights: bad })).rejects.toThrow(/weights must be finite: head\.weight element 7/);
    }
    expect(backend.heapBytesInUse()).toBe(before);
    const cycle = async () => {
      const model = await load('marian');
      model.forwardSync('the cat sat', { decoderInputIds: [52, 3] });
      for await (const t of model.generate('the cat', { maxNewTokens: 3 })) void t;
      model.dispose();
    };
    await cycle();
    const start = backend.heapBytesInUse();
    for (let i = 0; i < 4; i++) await cycle();
    expect(Math.abs(backend.heapBytesInUse() - start)).toBeLessThan(64 * 1024);
  });

  test('a Marian folder with source.spm / target.spm and no tokenizer.json runs by ids and says what to convert', async () => {
    const f = folder('marian');
    const files = [
      new File([f.read('config.json')], 'config.json'),
      new File([f.read('model.safetensors')], 'model.safetensors'),
      new File([new Uint8Array([1, 2, 3])], 'source.spm'),
      new File([new Uint8Array([1, 2, 3])], 'target.spm'),
    ];
    const model = await labs.wasm.loadModel(files);
    const c = f.expected.cases[0];
    expect(() => model.encode(c.text)).toThrow(/source\.spm and target\.spm \(SentencePiece models\) but no tokenizer\.json.*convert_slow_tokenizer\.py/);
    expect(() => model.forwardSync(c.text)).toThrow(/no tokenizer\.json/);
    const r = model.forwardSync(c.ids, { decoderInputIds: c.decoder_input_ids });
    expect(maxRel(r.logits.data, c.logits)).toBeLessThan(1e-4);
    expect(r.tokens).toBeNull();
    model.dispose();
  });

  test('the webgpu model path refuses them, naming why, before any tensor is read', () => {
    for (const name of FAMILIES) {
      const hf = folder(name).config;
      const { type, arch } = architectureOf(hf);
      const c = { modelType: type, ...arch.config(hf, new Set()) };
      expect(() => checkGpuRuns(c)).toThrow(/does not run .*crossAttention \(an encoder-decoder's decoder reading the encoder\).*load it on backend 'wasm'/);
      if (type === 't5') expect(() => checkGpuRuns(c)).toThrow(/relativeBuckets \(T5's relative position bias\)/);
    }
  });
});

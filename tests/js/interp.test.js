// model.logitLens, model.attribute, model.patch and the `ablate` option (web/lib/model/interp.js,
// src/train/transformer_interp.cpp) against tests/reference/interp.py: float64 numpy of the
// committed tiny gpt2 and llama goldens, each value computed there two ways (the cache's residuals
// vs reruns of the first r blocks; the attribution's sum vs the logit difference; z hooks vs
// zeroed o_proj columns; hooked full reruns vs recomputation from the patched block).
// Regenerate: /usr/bin/python3 tests/reference/interp.py
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const MODELS = path.join(ROOT, 'tests', 'golden', 'models');
const BACKENDS = ['wasm', 'wasm-scalar'];

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});
afterAll(() => BACKENDS.forEach((b) => labs[b].dispose()));

function load(lab, family, weights = 'model.safetensors') {
  const dir = path.join(MODELS, family);
  const read = (f) => fs.readFileSync(path.join(dir, f));
  return lab.loadModel({ config: JSON.parse(read('config.json')), weights: read(weights), tokenizer: JSON.parse(read('tokenizer.json')) });
}
const expected = (family) => JSON.parse(fs.readFileSync(path.join(MODELS, family, 'interp.json'), 'utf8'));

/**
 * Each value within 1e-4 relative of the reference; values under 1% of the largest one are held
 * to 1e-4 of that 1% (float32 sums of parts of opposite signs cannot do better relative to a
 * tiny result).
 */
function expectClose(what, got, want) {
  const g = Array.from(got);
  const w = want.flat(Infinity);
  expect(g.length).toBe(w.length);
  const scale = Math.max(...w.map(Math.abs));
  for (let i = 0; i < w.length; i++) {
    const tol = 1e-4 * Math.max(Math.abs(w[i]), 0.01 * scale);
    if (!(Math.abs(g[i] - w[i]) <= tol)) throw new Error(`${what}[${i}]: ${g[i]} vs reference ${w[i]} (tolerance ${tol})`);
  }
}

function expectLens(got, want) {
  const [R, L, k] = got.topIds.shape;
  expect([R, L, k]).toEqual([want.topIds.length, want.ids.length, want.k]);
  const ids = want.topIds.flat(2);
  const probs = want.topProbs.flat(2);
  expectClose('topProbs', got.topProbs.data, probs);
  for (let i = 0; i < ids.length; i++) {
    // ids agree unless two probabilities are closer than the tolerance (a near tie)
    const j = i % k;
    const tie = (j > 0 && probs[i - 1] - probs[i] < 1e-5) || (j < k - 1 && probs[i] - probs[i + 1] < 1e-5);
    if (!tie && got.topIds.data[i] !== ids[i]) throw new Error(`topIds[${i}]: ${got.topIds.data[i]} vs reference ${ids[i]}`);
  }
}

function expectAttribution(got, want) {
  const N = want.heads.length, H = want.heads[0].length;
  expect(got.heads.shape).toEqual([N, H]);
  expect(got.attnBias.shape).toEqual([N]);
  expect(got.mlps.shape).toEqual([N]);
  const all = [want.embed, ...want.heads.flat(), ...want.attnBias, ...want.mlps, want.constant, want.logitDiff];
  const ours = [got.embed, ...got.heads.data, ...got.attnBias.data, ...got.mlps.data, got.constant, got.logitDiff];
  expectClose('attribution', ours, all);
  // the parts sum to the logit difference (of the model's own logits)
  const sum = got.embed + got.heads.data.reduce((a, b) => a + b, 0) + got.attnBias.data.reduce((a, b) => a + b, 0) +
    got.mlps.data.reduce((a, b) => a + b, 0) + got.constant;
  expect(Math.abs(sum - got.logitDiff)).toBeLessThanOrEqual(1e-4 * Math.max(1, Math.abs(got.logitDiff)));
}

describe.each(BACKENDS)('interpretability against interp.py — %s', (backend) => {
  describe.each(['gpt2', 'llama'])('%s', (family) => {
    let model;
    const ref = expected(family);
    beforeAll(async () => { model = await load(labs[backend], family); });
    afterAll(() => model.dispose());

    test('logitLens: top-k per layer and position; logits: true; its last row is the model\'s logits', () => {
      expectLens(model.logitLens(ref.lens[0].ids, { k: ref.lens[0].k }), ref.lens[0]);
      const s = ref.lens[1];
      const got = model.logitLens(s.ids, { k: s.k, logits: true });
      expectLens(got, s);
      const V = model.config.vocabSize, N = model.config.numLayers, L = s.ids.length;
      expect(got.logits.shape).toEqual([N + 1, L, V]);
      expectClose('logits', got.logits.data, s.logits);
      const { logits } = model.forwardSync(s.ids, { attentions: false });
      expect(Array.from(got.logits.data.subarray(N * L * V))).toEqual(Array.from(logits.data));
      expect(got.topTokens.length).toBe((N + 1) * L * s.k);
    });

    test('attribute: the parts (embed, heads, attnBias, mlps, constant) and their sum', () => {
      for (const c of ref.attribute) {
        expectAttribution(model.attribute(c.ids, { target: c.target, baseline: c.baseline, position: c.position }), c);
      }
      // no baseline: logit[target] itself, also a sum of its parts
      const c = ref.attribute[0];
      const one = model.attribute(c.ids, { target: c.target });
      const { logits } = model.forwardSync(c.ids, { attentions: false });
      const V = model.config.vocabSize;
      expect(one.position).toBe(c.ids.length - 1);
      expect(one.logitDiff).toBeCloseTo(logits.data[(c.ids.length - 1) * V + c.target], 5);
    });

    test('forward({ ablate }): logits and attentions of the ablated model', async () => {
      for (const c of ref.ablate) {
        const r = model.forwardSync(c.ids, { ablate: c.ablate });
        expectClose('logits', r.logits.data, c.logits);
        if (c.attentions) r.attentions.forEach((a, l) => expectClose(`attentions[${l}]`, a.data, c.attentions[l]));
        const viaAsync = await model.forward(c.ids, { ablate: c.ablate, attentions: false });
        expect(Array.from(viaAsync.logits.data)).toEqual(Array.from(r.logits.data));
      }
      // the plain model again afterwards
      const plain = model.forwardSync(ref.ablate[0].ids, { attentions: false });
      const plain2 = model.forwardSync(ref.ablate[0].ids, { attentions: false, ablate: [] });
      expect(Array.from(plain.logits.data)).toEqual(Array.from(plain2.logits.data));
      expect(Array.from(plain.logits.data)).not.toEqual(Array.from(model.forwardSync(ref.ablate[0].ids, { ablate: ref.ablate[0].ablate }).logits.data));
    });

    test('nextTokens and generate({ ablate }) follow the ablated forward (zero: the cache; mean: whole reruns)', async () => {
      const V = model.config.vocabSize;
      for (const c of ref.ablate) {
        const L = c.ids.length;
        const last = c.logits[L - 1];
        const next = await model.nextTokens(c.ids, { k: 3, ablate: c.ablate });
        const order = last.map((v, i) => [v, i]).sort((a, b) => b[0] - a[0]).slice(0, 3).map((p) => p[1]);
        expect(next.map((t) => t.id)).toEqual(order);
        // greedy generation equals argmax of repeated ablated forwards
        const ids = [...c.ids];
        const want = [];
        for (let s = 0; s < 4; s++) {
          const lg = model.forwardSync(ids, { ablate: c.ablate, attentions: false }).logits.data.subarray((ids.length - 1) * V);
          let best = 0;
          for (let i = 1; i < V; i++) if (lg[i] > lg[best]) best = i;
          want.push(best);
          ids.push(best);
        }
        const got = [];
        for await (const t of model.generate(c.ids, { maxNewTokens: 4, temperature: 0, ablate: c.ablate })) got.push(t.id);
        expect(got.slice(0, 4)).toEqual(want.slice(0, got.length));
      }
    });

    test('patch: heads [N, H] and residual [N, L], normalised', () => {
      for (const c of ref.patch) {
        const h = model.patch({ clean: c.clean, corrupted: c.corrupted, target: c.target, baseline: c.baseline, over: 'heads' });
        expect(h.shape).toEqual([c.heads.length, c.heads[0].length]);
        expect(h.ldClean).toBeCloseTo(c.ldClean, 4);
        expect(h.ldCorrupted).toBeCloseTo(c.ldCorrupted, 4);
        // LD_patched within 1e-4 (the normalised value divides float32 rounding by LD_clean − LD_corrupted)
        const raw = (v) => v * (c.ldClean - c.ldCorrupted) + c.ldCorrupted;
        expectClose('heads (LD_patched)', h.ldPatched.data, c.heads.flat().map(raw));
        expectClose('heads', h.data, c.heads);
        const r = model.patch({ clean: c.clean, corrupted: c.corrupted, target: c.target, baseline: c.baseline, over: 'residual' });
        expect(r.shape).toEqual([c.residual.length, c.clean.length]);
        expectClose('residual (LD_patched)', r.ldPatched.data, c.residual.flat().map(raw));
        for (let i = 0; i < r.data.length; i++) {
          expect(Math.abs(r.data[i] - c.residual.flat()[i])).toBeLessThan(1e-4 * Math.max(1, Math.abs(c.ldClean), Math.abs(c.ldCorrupted)) / Math.abs(c.ldClean - c.ldCorrupted));
        }
        // x_0 at a position where the texts agree is the same in both runs: patching it changes nothing
        const same = c.clean.findIndex((t, i) => t === c.corrupted[i]);
        expect(Math.abs(r.data[same])).toBeLessThan(1e-4);
      }
    });
  });
});

describe.each([['F16', 'model-f16.safetensors'], ['BF16', 'model-bf16.safetensors']])('16-bit weights (%s, packed_half)', (kind, file) => {
  test.each(['gpt2', 'llama'])('%s: lens, attribution and patching are consistent with the forward', async (family) => {
    const model = await load(labs.wasm, family, file);
    expect(model.config.weightsDtype).toBe(kind === 'F16' ? 'float16' : 'bfloat16');
    const ref = expected(family);
    const s = ref.lens[1];
    const lens = model.logitLens(s.ids, { k: 3, logits: true });
    const { logits } = model.forwardSync(s.ids, { attentions: false });
    const N = model.config.numLayers, L = s.ids.length, V = model.config.vocabSize;
    expect(Array.from(lens.logits.data.subarray(N * L * V))).toEqual(Array.from(logits.data));
    const c = ref.attribute[0];
    // no float64 reference of the 16-bit weights: the parts sum to the model's own LD
    const a = model.attribute(c.ids, { target: c.target, baseline: c.baseline });
    const sum = a.embed + a.heads.data.reduce((x, y) => x + y, 0) + a.attnBias.data.reduce((x, y) => x + y, 0) + a.mlps.data.reduce((x, y) => x + y, 0) + a.constant;
    expect(Math.abs(sum - a.logitDiff)).toBeLessThanOrEqual(1e-4 * Math.max(1, Math.abs(a.logitDiff)));
    const lg = model.forwardSync(c.ids, { attentions: false }).logits.data.subarray((c.ids.length - 1) * V);
    expect(a.logitDiff).toBeCloseTo(lg[c.target] - lg[c.baseline], 4);
    // within 16-bit rounding of the float32 reference
    expect(Math.abs(a.logitDiff - c.logitDiff)).toBeLessThan(0.05 * Math.max(1, Math.abs(c.logitDiff)));
    const p = ref.patch[0];
    const h = model.patch({ clean: p.clean, corrupted: p.corrupted, target: p.target, baseline: p.baseline });
    // near the float32 reference (the 16-bit rounding of the tiny weights moves it a little)
    expect(h.data.every(Number.isFinite)).toBe(true);
    expect(Math.abs(h.data[0] - p.heads[0][0])).toBeLessThan(0.05);
    model.dispose();
  });
});

// Every other pre-norm family of tests/golden/models (no numpy reference of these calls here):
// the lens's last row is the forward's logits; the attribution sums to the logit difference of
// the logits before a final softcap, and refuses sandwich norms (gemma2, gemma3), whose blocks
// normalise each output before the residual; patching's LD_clean is the forward's.
describe.each(['gemma', 'gemma2', 'gemma3', 'gpt_neo', 'gpt_neox', 'mistral', 'phi3', 'qwen2', 'qwen3'])('family %s', (family) => {
  test('lens, attribution and patching agree with the forward', async () => {
    const dir = path.join(MODELS, family);
    const read = (f) => fs.readFileSync(path.join(dir, f));
    const model = await labs.wasm.loadModel({ config: JSON.parse(read('config.json')), weights: read('model.safetensors') });
    const V = model.config.vocabSize, N = model.config.numLayers;
    const ids = [1, 5, 9, 2, 5, 9, 3, 7].map((i) => i % V);
    const L = ids.length;
    const lens = model.logitLens(ids, { k: 2, logits: true });
    const { logits } = model.forwardSync(ids, { attentions: false });
    expect(Array.from(lens.logits.data.subarray(N * L * V))).toEqual(Array.from(logits.data));
    const last = logits.data.subarray((L - 1) * V);
    const hf = JSON.parse(read('config.json'));
    const cap = hf.final_logit_softcapping ?? 0;
    const sandwich = family === 'gemma2' || family === 'gemma3';
    if (sandwich) {
      expect(() => model.attribute(ids, { target: 3, baseline: 4 })).toThrow(/sandwich norms.*not a sum of the heads' outputs/);
    } else {
      const a = model.attribute(ids, { target: 3, baseline: 4 });
      const sum = a.embed + a.heads.data.reduce((x, y) => x + y, 0) + a.attnBias.data.reduce((x, y) => x + y, 0) + a.mlps.data.reduce((x, y) => x + y, 0) + a.constant;
      expect(Math.abs(sum - a.logitDiff)).toBeLessThanOrEqual(1e-4 * Math.max(1, Math.abs(a.logitDiff)));
      if (!cap) expect(a.logitDiff).toBeCloseTo(last[3] - last[4], 4);
    }
    const p = model.patch({ clean: ids, corrupted: [...ids.slice(0, 7), (ids[7] + 1) % V], target: 3, baseline: 4 });
    expect(p.ldClean).toBeCloseTo(last[3] - last[4], 4);
    expect(p.data.every(Number.isFinite)).toBe(true);
    model.dispose();
  });
});

describe('post-norm models (bert)', () => {
  let model;
  beforeAll(async () => { model = await load(labs.wasm, 'bert'); });
  afterAll(() => model.dispose());

  test('attribute, logitLens and patch explain why they do not apply', () => {
    const ids = model.encode('the cat sat on the mat');
    expect(() => model.logitLens(ids)).toThrow(/model\.logitLens: bert is a post-norm model: its residual passes through a norm in every block/);
    expect(() => model.attribute(ids, { target: 5 })).toThrow(/model\.attribute: bert is a post-norm model/);
    expect(() => model.patch({ clean: ids, corrupted: ids, target: 1, baseline: 2 })).toThrow(/model\.patch: bert is a post-norm model.*pre-norm decoder/);
  });

  test('headScores and ablation work: zero ablation equals switching the head off', () => {
    const ids = model.encode('the cat sat on the mat');
    const s = model.headScores(ids);
    expect(s.previousToken.shape).toEqual([model.config.numLayers, model.config.numHeads]);
    const ablated = model.forwardSync(ids, { ablate: [{ layer: 1, head: 0, mode: 'zero' }], hiddenStates: true });
    const plain = model.forwardSync(ids, { hiddenStates: true });
    expect(Array.from(ablated.hiddenStates.data)).not.toEqual(Array.from(plain.hiddenStates.data));
    model._t.setHeadEnabled(1, 0, false);
    const off = model.forwardSync(ids, { hiddenStates: true });
    model._t.setHeadEnabled(1, 0, true);
    expect(Array.from(off.hiddenStates.data)).toEqual(Array.from(ablated.hiddenStates.data));
    const mean = model.forwardSync(ids, { ablate: [{ layer: 0, head: 1, mode: 'mean' }], hiddenStates: true });
    expect(mean.hiddenStates.data.every(Number.isFinite)).toBe(true);
    expect(Array.from(mean.hiddenStates.data)).not.toEqual(Array.from(plain.hiddenStates.data));
  });
});

describe('bad input', () => {
  let model;
  beforeAll(async () => { model = await load(labs.wasm, 'gpt2'); });
  afterAll(() => { if (!model.disposed) model.dispose(); });
  const ids = [5, 6, 7, 8, 9];

  test('ablate: layer or head out of range, unknown mode, unknown keys, not an array', () => {
    expect(() => model.forwardSync(ids, { ablate: [{ layer: 2, head: 0, mode: 'zero' }] })).toThrow(/model\.forward: ablate\[0\]: layer must be an integer in \[0, 1\], got 2/);
    expect(() => model.forwardSync(ids, { ablate: [{ layer: 0, head: 4, mode: 'zero' }] })).toThrow(/ablate\[0\]: head must be an integer in \[0, 3\], got 4/);
    expect(() => model.forwardSync(ids, { ablate: [{ layer: 0, head: -1, mode: 'zero' }] })).toThrow(/head must be an integer in \[0, 3\], got -1/);
    expect(() => model.forwardSync(ids, { ablate: [{ layer: 0, head: 0, mode: 'resample' }] })).toThrow(/ablate\[0\]\.mode must be 'zero' or 'mean', got "resample"/);
    expect(() => model.forwardSync(ids, { ablate: [{ layer: 0, head: 0 }] })).toThrow(/mode must be 'zero' or 'mean', got undefined/);
    expect(() => model.forwardSync(ids, { ablate: [{ layer: 0, head: 0, mode: 'zero', pos: 1 }] })).toThrow(/unknown key "pos"; allowed: layer, head, mode/);
    expect(() => model.forwardSync(ids, { ablate: { layer: 0, head: 0, mode: 'zero' } })).toThrow(/ablate must be an array of \{ layer, head, mode \}/);
    expect(() => model.forwardSync(ids, { ablate: [7] })).toThrow(/ablate\[0\] must be an options object/);
    return expect(model.nextTokens(ids, { ablate: [{ layer: 9, head: 0, mode: 'zero' }] })).rejects.toThrow(/model\.nextTokens: ablate\[0\]: layer must be/);
  });

  test('logitLens: k, logits and unknown keys', () => {
    expect(() => model.logitLens(ids, { k: 0 })).toThrow(/model\.logitLens: k must be an integer in \[1, 297\], got 0/);
    expect(() => model.logitLens(ids, { k: 298 })).toThrow(/k must be an integer in \[1, 297\]/);
    expect(() => model.logitLens(ids, { logits: 'yes' })).toThrow(/logits must be true or false/);
    expect(() => model.logitLens(ids, { topK: 3 })).toThrow(/unknown key "topK"; allowed: k, logits/);
    expect(() => model.logitLens([1, 2, 999])).toThrow(/ids\[2\] is 999/);
  });

  test('attribute: target outside the vocabulary, position out of range, missing target, unknown keys', () => {
    expect(() => model.attribute(ids, { target: 297 })).toThrow(/model\.attribute: target must be a token id in \[0, 296\] \(vocab_size 297\) or a token string, got 297/);
    expect(() => model.attribute(ids, { target: 1, baseline: -2 })).toThrow(/baseline must be a token id in \[0, 296\]/);
    expect(() => model.attribute(ids, { target: 'no-such-token-xyz' })).toThrow(/target "no-such-token-xyz" is not a token of the vocabulary/);
    expect(() => model.attribute(ids, { target: 1, position: 5 })).toThrow(/position must be an integer in \[0, 4\], got 5/);
    expect(() => model.attribute(ids, { target: 1, position: -1 })).toThrow(/position must be an integer in \[0, 4\], got -1/);
    expect(() => model.attribute(ids, {})).toThrow(/options\.target is required/);
    expect(() => model.attribute(ids, { target: 1, layer: 0 })).toThrow(/unknown key "layer"; allowed: target, baseline, position/);
  });

  test('patch: unequal lengths, over, tokens, missing options, unknown keys', () => {
    const base = { clean: ids, corrupted: [5, 6, 1, 8, 9], target: 1, baseline: 2 };
    expect(() => model.patch({ ...base, corrupted: [5, 6, 7] })).toThrow(/model\.patch: clean has 5 tokens and corrupted 3: patching needs texts of equal token length/);
    expect(() => model.patch({ ...base, over: 'layers' })).toThrow(/over must be 'heads' or 'residual', got "layers"/);
    expect(() => model.patch({ ...base, target: 300 })).toThrow(/target must be a token id in \[0, 296\]/);
    expect(() => model.patch({ ...base, baseline: undefined })).toThrow(/options\.target and options\.baseline are required/);
    expect(() => model.patch({ clean: ids })).toThrow(/options\.clean and options\.corrupted are required/);
    expect(() => model.patch({ ...base, metric: 'ld' })).toThrow(/unknown key "metric"/);
    expect(() => model.patch({ ...base, corrupted: ids })).toThrow(/clean and corrupted give the same logit difference/);
  });

  test('a disposed model', async () => {
    const m = await load(labs.wasm, 'llama');
    m.dispose();
    expect(() => m.logitLens([1, 2])).toThrow(/model\.logitLens: this model has been disposed; load it again/);
    expect(() => m.attribute([1, 2], { target: 1 })).toThrow(/model\.attribute: this model has been disposed/);
    expect(() => m.patch({ clean: [1, 2], corrupted: [1, 3], target: 1, baseline: 2 })).toThrow(/model\.patch: this model has been disposed/);
    expect(() => m.forwardSync([1, 2], { ablate: [] })).toThrow(/this model has been disposed/);
  });
});

describe.each(BACKENDS)('memory — %s', (backend) => {
  test('20 repetitions of each call leave the wasm heap flat', async () => {
    const lab = labs[backend];
    const model = await load(lab, 'llama');
    const b = lab._backend;
    const ids = [1, 7, 9, 11, 7, 9, 13, 5];
    const other = [1, 7, 9, 12, 7, 9, 13, 5];
    const calls = [
      () => model.logitLens(ids, { k: 4, logits: true }),
      () => model.attribute(ids, { target: 3, baseline: 4 }),
      () => model.patch({ clean: ids, corrupted: other, target: 3, baseline: 4 }),
      () => model.patch({ clean: ids, corrupted: other, target: 3, baseline: 4, over: 'residual' }),
      // a difference in the last quarter: the patched runs go over the key/value cache
      () => model.patch({ clean: ids, corrupted: [...ids.slice(0, 7), 6], target: 3, baseline: 4 }),
      () => model.patch({ clean: ids, corrupted: [...ids.slice(0, 7), 6], target: 3, baseline: 4, over: 'residual' }),
      () => model.forwardSync(ids, { ablate: [{ layer: 0, head: 1, mode: 'mean' }, { layer: 1, head: 2, mode: 'zero' }] }),
    ];
    const round = async (i) => {
      for (const f of calls) f();
      await model.nextTokens(ids, { ablate: [{ layer: 1, head: i % 4, mode: i % 2 ? 'zero' : 'mean' }] });
      expect(() => model.attribute(ids, { target: 3, position: 99 })).toThrow(RangeError);
      expect(() => model.patch({ clean: ids, corrupted: [1, 2], target: 3, baseline: 4 })).toThrow(RangeError);
      expect(() => model.forwardSync(ids, { ablate: [{ layer: 5, head: 0, mode: 'zero' }] })).toThrow(RangeError);
    };
    // warm-up, two rounds (both nextTokens modes): scratch buffers reach their size. (After one
    // round the in-use bytes could still differ by 8: the allocator hands the same request a chunk
    // 8 bytes larger when the free chunk it splits would leave too small a remainder; per round
    // the ablation lists then alloc/free 64/16 instead of 72/24 bytes, and the heap stays flat.)
    await round(0);
    await round(1);
    await model.nextTokens(ids, { ablate: [{ layer: 1, head: 0, mode: 'zero' }] });
    const heap0 = b.heapBytesInUse();
    for (let i = 0; i < 20; i++) await round(i);
    // the ablation list itself is the same size as after the warm-up; flat
    // means no growth (a few bytes less is a container's capacity given back)
    await model.nextTokens(ids, { ablate: [{ layer: 1, head: 0, mode: 'zero' }] });
    expect(b.heapBytesInUse()).toBeLessThanOrEqual(heap0);
    expect(b.heapBytesInUse()).toBeGreaterThan(heap0 - 1024);
    model.dispose();
  });
});

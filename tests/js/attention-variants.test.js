// attention-variants.test.js — attention as today's models use it, through the
// public JS API on both wasm backends, against the float64 reference
// (tests/reference/reference.mjs: attentionModern, rotaryEmbedding,
// rotaryCache, alibiSlopes), on odd sizes; SIMD against scalar; and MHA with
// numKvHeads and rope (with a KV cache: positions continue from its length).
import { init } from '../../web/node.js';
import { ref, BACKENDS, TOL, expectTensorClose, expectTensorsAgree, rand } from './helpers.js';

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

const rng = ref.mulberry32(1111);
// Odd sizes: B 2, H 6, Hkv 2 (GQA) or 1 (MQA), Lq 7, Lk 11, D 5, Dv 3.
const Q = rand(rng, [2, 6, 7, 5]);
const K = rand(rng, [2, 2, 11, 5]);
const V = rand(rng, [2, 2, 11, 3]);
const K1 = rand(rng, [2, 1, 11, 5]);
const V1 = rand(rng, [2, 1, 11, 3]);

const CASES = [
  { name: 'GQA', k: K, v: V, opts: {}, refOpts: {} },
  { name: 'MQA', k: K1, v: V1, opts: {}, refOpts: {} },
  { name: 'softcap', k: K, v: V, opts: { softcap: 0.7 }, refOpts: { softcap: 0.7 } },
  {
    name: 'bottom-right causal + padding, maskFill -Infinity',
    k: K, v: V,
    opts: { mask: [{ kind: 'causal', align: 'bottom-right' }, { kind: 'padding', lengths: [11, 5] }], maskFill: -Infinity },
    refOpts: { causal: 'bottom-right', lengths: [11, 5], fill: -Infinity },
  },
  {
    name: 'top-left causal, default fill',
    k: K, v: V,
    opts: { mask: { kind: 'causal', align: 'top-left' } },
    refOpts: { causal: 'top-left' },
  },
  {
    name: 'window (3, 1) bottom-right',
    k: K, v: V,
    opts: { mask: { kind: 'window', left: 3, right: 1, align: 'bottom-right' }, maskFill: -Infinity },
    refOpts: { window: { left: 3, right: 1, align: 'bottom-right' }, fill: -Infinity },
  },
  {
    name: 'causal + window with offset 4 (ONNX past length)',
    k: K, v: V,
    opts: { mask: [{ kind: 'causal', offset: 4 }, { kind: 'window', left: 1, offset: 4 }], maskFill: -Infinity },
    refOpts: { causal: 'top-left', causalOffset: 4, window: { left: 1, right: -1, offset: 4 }, fill: -Infinity },
  },
  {
    name: 'window left only + causal',
    k: K, v: V,
    opts: { mask: [{ kind: 'window', left: 2 }, { kind: 'causal' }] },
    refOpts: { window: { left: 2, right: -1, align: 'top-left' }, causal: 'top-left' },
  },
  {
    name: 'ALiBi default slopes + causal bottom-right',
    k: K, v: V,
    opts: { mask: [{ kind: 'alibi' }, { kind: 'causal', align: 'bottom-right' }] },
    refOpts: { slopes: ref.alibiSlopes(6), causal: 'bottom-right' },
  },
  {
    name: 'ALiBi given slopes',
    k: K, v: V,
    opts: { mask: { kind: 'alibi', slopes: [0.5, 0.25, 0.1, 0.05, 0.3, 0.9] } },
    refOpts: { slopes: [0.5, 0.25, 0.1, 0.05, 0.3, 0.9].map(Math.fround) },
  },
  {
    name: 'fully masked rows: zeros with -Infinity',
    k: K, v: V,
    opts: { mask: [{ kind: 'causal', align: 'bottom-right' }, { kind: 'padding', lengths: [0, 3] }], maskFill: -Infinity, softcap: 2 },
    refOpts: { causal: 'bottom-right', lengths: [0, 3], fill: -Infinity, softcap: 2 },
  },
];

describe.each(BACKENDS)('%s', (backend) => {
  test.each(CASES.map((c) => [c.name, c]))('sdpa %s matches the float64 reference', (_, c) => {
    const lab = labs[backend];
    const want = ref.attentionModern(Q, c.k, c.v, c.refOpts);
    const r = lab.scaledDotProductAttention(Q, c.k, c.v, c.opts);
    expectTensorClose(r.output, want.output, TOL.attention, `${c.name} output`);
    expectTensorClose(r.weights, want.weights, TOL.attention, `${c.name} weights`);
    for (const x of r.output.data) expect(Number.isNaN(x)).toBe(false);
    const nw = lab.scaledDotProductAttention(Q, c.k, c.v, { ...c.opts, needWeights: false });
    expectTensorClose(nw.output, want.output, TOL.attention, `${c.name} output (no weights)`);
  });

  test('a long window goes through the flash path (Lk 700)', () => {
    const lab = labs[backend];
    const r2 = ref.mulberry32(5);
    const q = rand(r2, [1, 4, 40, 8]);
    const k = rand(r2, [1, 2, 700, 8]);
    const v = rand(r2, [1, 2, 700, 8]);
    const want = ref.attentionModern(q, k, v, { window: { left: 33, right: 0, align: 'bottom-right' }, fill: -Infinity });
    const r = lab.scaledDotProductAttention(q, k, v, { mask: { kind: 'window', left: 33, right: 0, align: 'bottom-right' }, maskFill: -Infinity, needWeights: false });
    expectTensorClose(r.output, want.output, TOL.attention, 'window output');
  });

  test("trace: 'values' has a softcap step between scores and mask, each equal to the reference", () => {
    const lab = labs[backend];
    const opts = { softcap: 0.8, maskFill: -Infinity, mask: [{ kind: 'causal', align: 'bottom-right' }, { kind: 'window', left: 3 }, { kind: 'alibi' }] };
    const want = ref.attentionModern(Q, K, V, { softcap: 0.8, fill: -Infinity, causal: 'bottom-right', window: { left: 3, right: -1 }, slopes: ref.alibiSlopes(6) });
    const r = lab.scaledDotProductAttention(Q, K, V, { ...opts, trace: 'values' });
    expect(r.trace.map((t) => t.step)).toEqual(['scores', 'softcap', 'mask', 'softmax', 'weighted_sum']);
    const step = (name) => r.trace.find((t) => t.step === name).value;
    expectTensorClose(step('scores'), want.scores, TOL.attention, 'scores');
    expectTensorClose(step('softcap'), want.capped, TOL.attention, 'softcap');
    expectTensorClose(step('mask'), want.masked, TOL.attention, 'mask');
    expectTensorClose(step('softmax'), want.weights, TOL.attention, 'softmax');
  });

  test("MHA with numKvHeads: trace: 'values' lays out each query head's K and V", async () => {
    const lab = labs[backend];
    const mha = lab.multiHeadAttention({ embedDim: 12, numHeads: 6, numKvHeads: 2, seed: 5 });
    const x = rand(ref.mulberry32(8), [1, 4, 12]);
    const r = mha.forwardSync(x, x, x, { trace: 'values' });
    const split = r.trace.find((t) => t.step === 'split_heads');
    const k = split.values.k; // [1, 6, 4, 2]: heads 0-2 share kv head 0, 3-5 kv head 1
    for (let l = 0; l < 4; l++) for (let d = 0; d < 2; d++) {
      expect(k.data[(1 * 4 + l) * 2 + d]).toBe(k.data[(0 * 4 + l) * 2 + d]);
      expect(k.data[(5 * 4 + l) * 2 + d]).toBe(k.data[(3 * 4 + l) * 2 + d]);
    }
    mha.dispose();
  });

  test('rotaryEmbedding matches the reference (layouts, partial, interleaved, tables)', () => {
    const lab = labs[backend];
    const r2 = ref.mulberry32(9);
    const x4 = rand(r2, [2, 3, 5, 10]);
    const x3 = { data: x4.data, shape: [2, 5, 30] };
    const pos = Int32Array.from({ length: 10 }, (_, i) => (i * 7) % 13);
    const tables = lab.rotaryCache(13, 6, { base: 100 });
    const wantT = ref.rotaryCache(13, 6, 100);
    expectTensorClose(tables.cos, wantT.cos, { abs: 1e-7, rel: 1e-6 }, 'cos');
    expectTensorClose(tables.sin, wantT.sin, { abs: 1e-7, rel: 1e-6 }, 'sin');
    const perTok = { cos: rand(r2, [2, 5, 5]), sin: rand(r2, [2, 5, 5]) };
    const cases = [
      [x4, {}, {}],
      [x4, { interleaved: true, rotaryDim: 6, positionIds: pos, base: 500 }, { interleaved: true, rotaryDim: 6, positionIds: pos, base: 500 }],
      [x3, { numHeads: 3, positionIds: pos, cos: tables.cos, sin: tables.sin, rotaryDim: 6 }, { numHeads: 3, positionIds: pos, cos: tables.cos.data, sin: tables.sin.data, rotaryDim: 6 }],
      [x4, { cos: perTok.cos, sin: perTok.sin }, { cos: perTok.cos.data, sin: perTok.sin.data }],
    ];
    for (const [x, opts, refOpts] of cases) {
      const got = lab.rotaryEmbedding(x, opts);
      expectTensorClose(got, ref.rotaryEmbedding(x, refOpts), { abs: 2e-6, rel: 1e-5 }, `rope ${JSON.stringify(Object.keys(opts))}`);
    }
  });

  test('alibiSlopes follow the paper (power of two and not)', () => {
    const lab = labs[backend];
    for (const h of [1, 3, 6, 8, 12]) {
      const got = lab.alibiSlopes(h);
      const want = ref.alibiSlopes(h);
      for (let i = 0; i < h; i++) expect(got[i]).toBeCloseTo(want[i], 7);
    }
  });

  test('MHA numKvHeads + rope: decoding through the KV cache equals the causal forward; the cache holds Hkv heads', async () => {
    const lab = labs[backend];
    const E = 12;
    const mha = lab.multiHeadAttention({ embedDim: E, numHeads: 6, numKvHeads: 2, rope: { rotaryDim: 2 }, seed: 3 });
    const full = lab.multiHeadAttention({ embedDim: E, numHeads: 6, seed: 3 });
    const w = mha.getWeights();
    expect(w.wk.shape).toEqual([4, E]);
    expect(w.bv.shape).toEqual([4]);
    const r2 = ref.mulberry32(2);
    const x = rand(r2, [1, 6, E]);
    const whole = mha.forwardSync(x, x, x, { mask: { kind: 'causal' } });
    const cache = mha.createKVCache({ maxLength: 8 });
    const fullCache = full.createKVCache({ maxLength: 8 });
    expect(cache.heldBytes()).toBe(2 * 8 * 4 * 4);
    expect(fullCache.heldBytes()).toBe(3 * cache.heldBytes());
    const steps = [];
    for (let t = 0; t < 6; t++) {
      const xt = { data: x.data.slice(t * E, (t + 1) * E), shape: [1, 1, E] };
      steps.push(...(await mha.forward(xt, xt, xt, { kvCache: cache, mask: { kind: 'causal' } })).output.data);
    }
    expectTensorsAgree({ data: Float32Array.from(steps), shape: [1, 6, E] }, whole.output, TOL.attention, 'decode vs whole');
    // The float64 reference: rotate the projections, then GQA attention.
    const W = Object.fromEntries(Object.entries(w).map(([key, t]) => [key, t.data]));
    const D = 2;
    const proj = (wt, bt, out) => ref.linearTorch(x.data, 6, E, wt, bt, out);
    const q = proj(W.wq, W.bq, E), k = proj(W.wk, W.bk, 4), v = proj(W.wv, W.bv, 4);
    const heads = (d, H) => {
      const o = new Float64Array(H * 6 * D);
      for (let h = 0; h < H; h++) for (let l = 0; l < 6; l++) for (let c = 0; c < D; c++) o[(h * 6 + l) * D + c] = d[l * H * D + h * D + c];
      return { data: o, shape: [1, H, 6, D] };
    };
    const qh = ref.rotaryEmbedding(heads(q, 6), {});
    const kh = ref.rotaryEmbedding(heads(k, 2), {});
    const att = ref.attentionModern(qh, kh, heads(v, 2), { causal: 'top-left' });
    const ctx = new Float64Array(6 * E);
    for (let h = 0; h < 6; h++) for (let l = 0; l < 6; l++) for (let c = 0; c < D; c++) ctx[l * E + h * D + c] = att.output.data[(h * 6 + l) * D + c];
    const out = ref.linearTorch(ctx, 6, E, W.wo, W.bo, E);
    expectTensorClose(whole.output, { data: out, shape: [1, 6, E] }, TOL.attention, 'MHA GQA+rope vs reference');
    cache.dispose();
    fullCache.dispose();
    mha.dispose();
    full.dispose();
  });
});

test('SIMD and scalar agree on odd sizes with every variant at once', () => {
  const opts = {
    mask: [{ kind: 'causal', align: 'bottom-right' }, { kind: 'window', left: 4 }, { kind: 'alibi' }, { kind: 'padding', lengths: [9, 10] }],
    softcap: 1.3, maskFill: -Infinity,
  };
  const a = labs.wasm.scaledDotProductAttention(Q, K, V, opts);
  const b = labs['wasm-scalar'].scaledDotProductAttention(Q, K, V, opts);
  expectTensorsAgree(a.output, b.output, TOL.backends, 'output');
  expectTensorsAgree(a.weights, b.weights, TOL.backends, 'weights');
});

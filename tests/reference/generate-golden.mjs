// generate-golden.mjs — writes tests/golden/cases.json from the float64
// reference (reference.mjs). Deterministic: the same reference gives a
// byte-identical file. Format: tests/golden/README.md.
//
//   node tests/reference/generate-golden.mjs [output-path]
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import * as ref from './reference.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const outPath = process.argv[2] || path.join(here, '..', 'golden', 'cases.json');

const Q = 2 ** -12; // input quantum: float32-exact and short in JSON
const rng = ref.mulberry32(0x5eed2024);

const TOL = {
  positional_encoding: { abs: 1e-6, rel: 0 },
  sdpa: { abs: 2e-5, rel: 1e-4 },
  mha: { abs: 2e-5, rel: 1e-4 },
  layer_norm: { abs: 1e-5, rel: 1e-4 },
  layer: { abs: 5e-5, rel: 1e-4 },
};

const rt = (shape, opts = {}) => ref.randomTensor(rng, shape, { quantum: Q, ...opts });
const outT = (t) => ({ shape: t.shape.slice(), data: Array.from(t.data, (x) => Number(x.toPrecision(10))) });
const inT = (t) => {
  const T = ref.toTensor(t);
  for (const x of T.data) if (Math.fround(x) !== x) throw new Error('golden input not float32-exact');
  return { shape: T.shape.slice(), data: Array.from(T.data) };
};
const NO_MASK = { causal: false, lengths: null, kind: 'none', mask: null };

/** A 0/1 tensor with probability `p1` of a one, quantised trivially. */
function bits(shape, p1, force = null) {
  const n = ref.numel(shape);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = rng() < p1 ? 1 : 0;
  if (force) force(data);
  return { data, shape };
}

const cases = [];

// --- positional encoding --------------------------------------------------
for (const [name, L, E, base] of [
  ['pe_l6_e8', 6, 8, 10000],
  ['pe_odd_l7_e9', 7, 9, 10000],
  ['pe_l128_e33', 128, 33, 10000],
  ['pe_base100_l20_e16', 20, 16, 100],
]) {
  cases.push({
    name, op: 'positional_encoding',
    params: { seqLen: L, dModel: E, base },
    inputs: {},
    outputs: { pe: outT(ref.positionalEncoding(L, E, base)) },
    tolerance: TOL.positional_encoding,
  });
}

// --- scaled dot-product attention -----------------------------------------
function sdpaCase(name, qShape, kShape, vShape, { mask = null, scale = null } = {}) {
  const q = rt(qShape), k = rt(kShape), v = rt(vShape);
  const r = ref.scaledDotProductAttention(q, k, v, { mask, scale });
  cases.push({
    name, op: 'sdpa',
    params: { scale, mask: mask ? ref.maskToGolden(mask) : NO_MASK, needWeights: true },
    inputs: { q: inT(q), k: inT(k), v: inT(v) },
    outputs: { output: outT(r.output), weights: outT(r.weights) },
    tolerance: TOL.sdpa,
  });
}

sdpaCase('sdpa_rank2_lq5_lk7_d8_dv3', [5, 8], [7, 8], [7, 3]);
sdpaCase('sdpa_rank3_causal_dv7', [2, 6, 5], [2, 6, 5], [2, 6, 7], { mask: { kind: 'causal' } });
sdpaCase('sdpa_causal_lq_gt_lk', [2, 2, 6, 4], [2, 2, 4, 4], [2, 2, 4, 4], { mask: { kind: 'causal' } });
sdpaCase('sdpa_causal_lq_lt_lk_scale', [1, 2, 3, 4], [1, 2, 7, 4], [1, 2, 7, 5], { mask: { kind: 'causal' }, scale: 0.25 });
sdpaCase('sdpa_padding_len0', [3, 2, 4, 8], [3, 2, 5, 8], [3, 2, 5, 8], { mask: { kind: 'padding', lengths: [5, 2, 0] } });
sdpaCase('sdpa_keep_b11lk', [2, 3, 5, 6], [2, 3, 5, 6], [2, 3, 5, 6], {
  // batch 1 keeps nothing: uniform rows by the fill rule
  mask: { kind: 'keep', ...bits([2, 1, 1, 5], 0.6, (d) => { d[0] = 1; for (let j = 5; j < 10; j++) d[j] = 0; }) },
});
sdpaCase('sdpa_block_lqlk_full_row', [2, 2, 5, 4], [2, 2, 5, 4], [2, 2, 5, 3], {
  // row 3 is fully blocked (uniform); other rows keep key 0
  mask: { kind: 'block', ...bits([5, 5], 0.4, (d) => { for (let i = 0; i < 5; i++) d[i * 5] = 0; for (let j = 0; j < 5; j++) d[15 + j] = 1; }) },
});
{
  const add = rt([2, 2, 3, 5], { lo: -2, hi: 2 });
  add.data[7] = -1e9; // one key effectively removed
  sdpaCase('sdpa_additive_bhlqlk', [2, 2, 3, 9], [2, 2, 5, 9], [2, 2, 5, 9], { mask: { kind: 'additive', data: add.data, shape: add.shape } });
}
sdpaCase('sdpa_causal_padding_keep', [2, 2, 5, 5], [2, 2, 5, 5], [2, 2, 5, 5], {
  mask: [{ kind: 'causal' }, { kind: 'padding', lengths: [5, 3] },
    { kind: 'keep', ...bits([2, 1, 5, 5], 0.8) }],
});
sdpaCase('sdpa_padding_block_per_head', [2, 2, 4, 3], [2, 2, 6, 3], [2, 2, 6, 3], {
  // rank-3 mask [H,1,Lk] right-aligned to [1,H,1,Lk]; key 0 never blocked
  mask: [{ kind: 'padding', lengths: [6, 4] }, { kind: 'block', ...bits([2, 1, 6], 0.3, (d) => { d[0] = 0; d[6] = 0; }) }],
});

// --- multi-head attention ---------------------------------------------------
function mhaCase(name, { E, H, kdim = E, vdim = E, bias = true, B = 2, Lq, Lk = Lq, self = false, mask = null, averageWeights = false, unbatched = false }) {
  const w = ref.randomMhaWeights(rng, { embedDim: E, kdim, vdim, bias, quantum: Q });
  const lead = unbatched ? [] : [B];
  const query = rt([...lead, Lq, E]);
  const key = self ? query : rt([...lead, Lk, kdim]);
  const value = self ? query : rt([...lead, Lk, vdim]);
  const r = ref.multiHeadAttention({ embedDim: E, numHeads: H, kdim, vdim }, w, query, key, value, { mask, averageWeights });
  const inputs = { query: inT(query), key: inT(key), value: inT(value) };
  for (const n of ['wq', 'bq', 'wk', 'bk', 'wv', 'bv', 'wo', 'bo']) if (w[n]) inputs[n] = inT(w[n]);
  cases.push({
    name, op: 'mha',
    params: { embedDim: E, numHeads: H, kdim, vdim, bias, averageWeights, mask: mask ? ref.maskToGolden(mask) : NO_MASK, layout: 'torch' },
    inputs,
    outputs: { output: outT(r.output), weights: outT(r.weights) },
    tolerance: TOL.mha,
  });
}

mhaCase('mha_self_bias_e16_h4', { E: 16, H: 4, Lq: 5, self: true });
mhaCase('mha_cross_kdim7_vdim5_nobias_padding', { E: 12, H: 3, kdim: 7, vdim: 5, bias: false, Lq: 3, Lk: 6, mask: { kind: 'padding', lengths: [6, 2] } });
mhaCase('mha_causal_keep_avg_e20_h5', {
  E: 20, H: 5, Lq: 6, self: true, averageWeights: true,
  mask: [{ kind: 'causal' }, { kind: 'keep', ...bits([2, 1, 1, 6], 0.7, (d) => { d[0] = 1; d[6] = 1; }) }],
});
mhaCase('mha_unbatched_block_e9_h3', {
  E: 9, H: 3, Lq: 4, Lk: 5, unbatched: true,
  mask: { kind: 'block', ...bits([4, 5], 0.4, (d) => { for (let i = 0; i < 4; i++) d[i * 5 + 4] = 0; }) },
});

// --- layer norm -----------------------------------------------------------
{
  const x = rt([6, 10], { lo: -2, hi: 2 }), res = rt([6, 10]);
  const gamma = rt([10], { lo: 0.5, hi: 1.5 }), beta = rt([10], { lo: -0.5, hi: 0.5 });
  cases.push({
    name: 'layer_norm_rows6_e10', op: 'layer_norm',
    params: { eps: 1e-5 },
    inputs: { x: inT(x), residual: inT(res), gamma: inT(gamma), beta: inT(beta) },
    outputs: { y: outT(ref.layerNorm(x, res, gamma, beta, 1e-5)) },
    tolerance: TOL.layer_norm,
  });
}

// --- self-attention layer -------------------------------------------------
function layerCase(name, { E, H, B = 2, L, dropout = 0.1, training = false, dropoutSeed = null, mask = null, averageWeights = false }) {
  const w = ref.randomMhaWeights(rng, { embedDim: E, quantum: Q });
  w.gamma = rt([E], { lo: 0.5, hi: 1.5 });
  w.beta = rt([E], { lo: -0.5, hi: 0.5 });
  const x = rt([B, L, E]);
  const r = ref.selfAttentionLayer({ embedDim: E, numHeads: H, dropout, eps: 1e-5 }, w, x,
    { mask, training, dropoutSeed: dropoutSeed ?? 0, averageWeights });
  const inputs = { x: inT(x) };
  for (const n of ['wq', 'bq', 'wk', 'bk', 'wv', 'bv', 'wo', 'bo', 'gamma', 'beta']) inputs[n] = inT(w[n]);
  cases.push({
    name, op: 'layer',
    params: { embedDim: E, numHeads: H, dropout, bias: true, eps: 1e-5, training, dropoutSeed, averageWeights, mask: mask ? ref.maskToGolden(mask) : NO_MASK, layout: 'torch' },
    inputs,
    outputs: { output: outT(r.output), weights: outT(r.weights) },
    tolerance: TOL.layer,
  });
}

layerCase('layer_eval_e16_h4', { E: 16, H: 4, L: 5 });
layerCase('layer_train_seed12345_causal', { E: 12, H: 2, L: 4, dropout: 0.25, training: true, dropoutSeed: 12345, mask: { kind: 'causal' } });
layerCase('layer_train_seed7_padding_avg', { E: 8, H: 2, L: 6, dropout: 0.1, training: true, dropoutSeed: 7, mask: { kind: 'padding', lengths: [6, 3] }, averageWeights: true });

// --- write ------------------------------------------------------------------
const header = { format: 'attention-lab-golden', version: 1, generator: 'tests/reference/generate-golden.mjs' };
const text = `${JSON.stringify(header).slice(0, -1)},"cases":[\n${cases.map((c) => JSON.stringify(c)).join(',\n')}\n]}\n`;
JSON.parse(text); // sanity
writeFileSync(outPath, text);
console.log(`wrote ${cases.length} cases, ${text.length} bytes to ${path.relative(process.cwd(), outPath)}`);

// self-check.mjs — sanity checks of the float64 reference itself, run with
// plain node (no library needed):  node tests/reference/self-check.mjs
// Exits with status 1 on the first failed check group.
import * as ref from './reference.mjs';

let failures = 0;
let checks = 0;
function check(cond, msg) {
  checks++;
  if (!cond) { failures++; console.error(`FAIL: ${msg}`); }
}
function close(a, b, tol = 1e-12) { return Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)); }
function allClose(a, b, tol = 1e-12) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!close(a[i], b[i], tol)) return false;
  return true;
}
const rng = ref.mulberry32(20240601);

// --- mulberry32 is deterministic and in [0,1)
{
  const a = ref.mulberry32(7), b = ref.mulberry32(7);
  let same = true, inRange = true;
  for (let i = 0; i < 1000; i++) { const x = a(), y = b(); same &&= x === y; inRange &&= x >= 0 && x < 1; }
  check(same && inRange, 'mulberry32 deterministic and in [0,1)');
}

// --- positional encoding known values
{
  const pe = ref.positionalEncoding(4, 6);
  for (let j = 0; j < 6; j++) check(pe.data[j] === (j % 2 === 0 ? 0 : 1), `PE(0,${j})`);
  check(pe.data[6] === Math.sin(1), 'PE(1,0) = sin(1)');
  check(pe.data[7] === Math.cos(1), 'PE(1,1) = cos(1)');
  check(close(pe.data[6 + 2], Math.sin(1 / Math.pow(10000, 2 / 6))), 'PE(1,2)');
  const odd = ref.positionalEncoding(3, 5);
  check(close(odd.data[5 + 4], Math.sin(1 / Math.pow(10000, 4 / 5))), 'odd dModel: last column is sin');
  const b = ref.positionalEncoding(3, 4, 100);
  check(close(b.data[4 + 2], Math.sin(1 / 10)), 'base 100: PE(1,2) = sin(1/100^(2/4))');
  // The torch tutorial form: div_term = exp(2i · -ln(10000)/d)
  const big = ref.positionalEncoding(50, 16);
  let ok = true;
  for (let pos = 0; pos < 50; pos++) for (let i2 = 0; i2 < 16; i2 += 2) {
    const div = Math.exp(i2 * (-Math.log(10000) / 16));
    ok &&= close(big.data[pos * 16 + i2], Math.sin(pos * div), 1e-12) && close(big.data[pos * 16 + i2 + 1], Math.cos(pos * div), 1e-12);
  }
  check(ok, 'PE equals the torch tutorial formula');
}

// --- softmax rows sum to 1, uniform rows
{
  const x = ref.randomTensor(rng, [6, 7, 9]);
  const y = Float64Array.from(x.data);
  ref.softmaxRows(y, 9);
  let ok = true;
  for (let r = 0; r < 42; r++) { let s = 0; for (let j = 0; j < 9; j++) { s += y[r * 9 + j]; ok &&= y[r * 9 + j] > 0; } ok &&= close(s, 1, 1e-14); }
  check(ok, 'softmax rows positive and sum to 1');
  const inf = Float64Array.from([-Infinity, -Infinity, -Infinity]);
  ref.softmaxRows(inf, 3);
  check(inf.every((v) => v === 1 / 3), 'all -inf row is uniform');
  const fill = Float64Array.from([-1e9, -1e9, -1e9, -1e9]);
  ref.softmaxRows(fill, 4);
  check(fill.every((v) => v === 0.25), 'all -1e9 row is uniform');
}

// --- sdpa: weights rows sum to 1 and output = weights · V; shapes
{
  const q = ref.randomTensor(rng, [2, 3, 5, 7]);
  const k = ref.randomTensor(rng, [2, 3, 6, 7]);
  const v = ref.randomTensor(rng, [2, 3, 6, 4]);
  const r = ref.scaledDotProductAttention(q, k, v);
  check(String(r.output.shape) === '2,3,5,4' && String(r.weights.shape) === '2,3,5,6', 'sdpa shapes');
  // naive recomputation for one problem
  const n = 4, i = 2; // problem (b=1,h=1), query 2
  const s = [];
  for (let j = 0; j < 6; j++) { let d = 0; for (let t = 0; t < 7; t++) d += q.data[n * 35 + i * 7 + t] * k.data[n * 42 + j * 7 + t]; s.push(d / Math.sqrt(7)); }
  const mx = Math.max(...s); const e = s.map((z) => Math.exp(z - mx)); const sum = e.reduce((a, b) => a + b, 0);
  const w = e.map((z) => z / sum);
  check(allClose(r.weights.data.slice(n * 30 + i * 6, n * 30 + i * 6 + 6), w, 1e-14), 'sdpa weights equal a naive softmax');
  const o = [0, 1, 2, 3].map((d) => w.reduce((acc, wj, j) => acc + wj * v.data[n * 24 + j * 4 + d], 0));
  check(allClose(r.output.data.slice(n * 20 + i * 4, n * 20 + i * 4 + 4), o, 1e-14), 'sdpa output equals weights·V');
  const nw = ref.scaledDotProductAttention(q, k, v, { needWeights: false });
  check(nw.weights === null && allClose(nw.output.data, r.output.data, 0), 'needWeights false');
  const r2 = ref.scaledDotProductAttention(q, k, v, { scale: 0.3 });
  check(!allClose(r2.output.data, r.output.data, 1e-6), 'custom scale changes the result');
}

// --- masks
{
  const B = 2, H = 2, Lq = 4, Lk = 6, D = 3;
  const q = ref.randomTensor(rng, [B, H, Lq, D]);
  const k = ref.randomTensor(rng, [B, H, Lk, D]);
  const v = ref.randomTensor(rng, [B, H, Lk, D]);
  // causal (top-left) == keep mask tril [Lq,Lk]
  const tril = []; for (let i = 0; i < Lq; i++) for (let j = 0; j < Lk; j++) tril.push(j <= i ? 1 : 0);
  const causal = ref.scaledDotProductAttention(q, k, v, { mask: { kind: 'causal' } });
  const keepTril = ref.scaledDotProductAttention(q, k, v, { mask: { kind: 'keep', data: tril, shape: [Lq, Lk] } });
  check(allClose(causal.weights.data, keepTril.weights.data, 0), 'causal == keep(tril)');
  let ok = true;
  for (let n = 0; n < B * H; n++) for (let i = 0; i < Lq; i++) for (let j = i + 1; j < Lk; j++) ok &&= causal.weights.data[(n * Lq + i) * Lk + j] === 0;
  check(ok, 'causal: future keys get weight 0');
  // block(1 - tril) == keep(tril) for rows with at least one visible key
  const blockTril = ref.scaledDotProductAttention(q, k, v, { mask: { kind: 'block', data: tril.map((t) => 1 - t), shape: [Lq, Lk] } });
  check(allClose(blockTril.weights.data, keepTril.weights.data, 1e-12), 'block(1-tril) == keep(tril)');
  // padding == keep [B,1,1,Lk]
  const lengths = [3, 0];
  const keepPad = []; for (let b = 0; b < B; b++) for (let j = 0; j < Lk; j++) keepPad.push(j < lengths[b] ? 1 : 0);
  const pad = ref.scaledDotProductAttention(q, k, v, { mask: { kind: 'padding', lengths } });
  const pad2 = ref.scaledDotProductAttention(q, k, v, { mask: { kind: 'keep', data: keepPad, shape: [B, 1, 1, Lk] } });
  check(allClose(pad.weights.data, pad2.weights.data, 0), 'padding == keep [B,1,1,Lk]');
  ok = true;
  for (let t = H * Lq * Lk; t < 2 * H * Lq * Lk; t++) ok &&= pad.weights.data[t] === 1 / Lk;
  check(ok, 'padding length 0 gives uniform rows 1/Lk');
  // block all ones → uniform (float32 swamping emulated)
  const blockAll = ref.scaledDotProductAttention(q, k, v, { mask: { kind: 'block', data: [1], shape: [1] } });
  check(blockAll.weights.data.every((w) => w === 1 / Lk), 'block all ones → uniform');
  // additive -inf row → uniform; additive 0 → unmasked
  const addInf = new Array(Lq * Lk).fill(0); for (let j = 0; j < Lk; j++) addInf[1 * Lk + j] = -Infinity; addInf[2 * Lk + 0] = -Infinity;
  const ai = ref.scaledDotProductAttention(q, k, v, { mask: { kind: 'additive', data: addInf, shape: [Lq, Lk] } });
  const plain = ref.scaledDotProductAttention(q, k, v);
  ok = true;
  for (let n = 0; n < B * H; n++) {
    for (let j = 0; j < Lk; j++) ok &&= ai.weights.data[(n * Lq + 1) * Lk + j] === 1 / Lk;
    ok &&= ai.weights.data[(n * Lq + 2) * Lk] === 0;
    for (let j = 0; j < Lk; j++) ok &&= close(ai.weights.data[(n * Lq + 0) * Lk + j], plain.weights.data[(n * Lq + 0) * Lk + j], 1e-6);
  }
  check(ok, 'additive: -inf row uniform, -inf entry zero, zero mask unchanged (up to float32 rounding)');
  // golden <-> api round trip
  const g = ref.maskToGolden([{ kind: 'causal' }, { kind: 'padding', lengths: [2, 3] }, { kind: 'block', data: [[0, 1]], shape: [1, 2] }]);
  check(g.causal && String(g.lengths) === '2,3' && g.kind === 'block' && String(g.mask.shape) === '1,2' && String(g.mask.data) === '0,1', 'maskToGolden');
  const api = ref.maskToApi(g);
  check(api.length === 3 && api[0].kind === 'causal' && api[1].kind === 'padding' && api[2].kind === 'block' && api[2].data instanceof Float32Array, 'maskToApi');
  // broadcast errors
  let threw = false;
  try { ref.scaledDotProductAttention(q, k, v, { mask: { kind: 'keep', data: new Array(3 * Lk).fill(1), shape: [3, Lk] } }); } catch (e) { threw = e instanceof RangeError; }
  check(threw, 'non-broadcastable mask rejected');
}

// --- self-attention: X Xᵀ/√E, rows sum to 1, diagonal dominant for random rows
{
  const x = ref.randomTensor(rng, [4, 8], { dist: 'normal' });
  const r = ref.selfAttention(x);
  const viaSdpa = ref.scaledDotProductAttention(x, x, x, { scale: 1 / Math.sqrt(8) });
  check(allClose(r.output.data, viaSdpa.output.data, 0) && String(r.weights.shape) === '4,4', 'selfAttention == sdpa(x,x,x)');
}

// --- MHA with H=1 and identity weights, zero biases == sdpa
{
  const E = 6, L = 5, B = 2;
  const eye = new Float64Array(E * E); for (let i = 0; i < E; i++) eye[i * E + i] = 1;
  const I = { data: eye, shape: [E, E] };
  const w = { wq: I, wk: I, wv: I, wo: I };
  const x = ref.randomTensor(rng, [B, L, E]);
  const m = ref.multiHeadAttention({ embedDim: E, numHeads: 1 }, w, x);
  const s = ref.scaledDotProductAttention(x, x, x);
  check(allClose(m.output.data, s.output.data, 1e-15) && allClose(m.weights.data, s.weights.data, 1e-15), 'MHA(H=1, identity) == sdpa');
  check(String(m.weights.shape) === '2,1,5,5', 'MHA weights shape [B,H,Lq,Lk]');
}

// --- MHA with H heads == per-head sdpa on sliced projections, and layout round trip
{
  const E = 12, H = 3, D = 4, B = 2, Lq = 3, Lk = 5, kdim = 7, vdim = 5;
  const w = ref.randomMhaWeights(rng, { embedDim: E, kdim, vdim });
  const q = ref.randomTensor(rng, [B, Lq, E]), k = ref.randomTensor(rng, [B, Lk, kdim]), v = ref.randomTensor(rng, [B, Lk, vdim]);
  const m = ref.multiHeadAttention({ embedDim: E, numHeads: H, kdim, vdim }, w, q, k, v);
  // independent recomputation: projections with keras layout (x·W), heads by slicing
  const kw = ref.torchToKeras(w);
  check(String(kw.wk.shape) === `${kdim},${E}` && String(kw.wv.shape) === `${vdim},${E}`, 'keras shapes [in,out]');
  const proj = (x, rows, inDim, W, b) => { const y = ref.matmul(ref.toTensor(x).data, W.data, rows, inDim, E); for (let r = 0; r < rows; r++) for (let o = 0; o < E; o++) y[r * E + o] += b.data[o]; return y; };
  const Q = proj(q, B * Lq, E, kw.wq, kw.bq), K = proj(k, B * Lk, kdim, kw.wk, kw.bk), V = proj(v, B * Lk, vdim, kw.wv, kw.bv);
  let ok = true;
  const concat = new Float64Array(B * Lq * E);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) {
    const sl = (X, L) => { const out = []; for (let i = 0; i < L; i++) for (let d = 0; d < D; d++) out.push(X[(b * L + i) * E + h * D + d]); return { data: out, shape: [L, D] }; };
    const r = ref.scaledDotProductAttention(sl(Q, Lq), sl(K, Lk), sl(V, Lk));
    for (let t = 0; t < Lq * Lk; t++) ok &&= close(m.weights.data[(b * H + h) * Lq * Lk + t], r.weights.data[t], 1e-13);
    for (let i = 0; i < Lq; i++) for (let d = 0; d < D; d++) concat[(b * Lq + i) * E + h * D + d] = r.output.data[i * D + d];
  }
  const out = proj({ data: concat, shape: [B * Lq, E] }, B * Lq, E, kw.wo, kw.bo);
  check(ok && allClose(m.output.data, out, 1e-13), 'MHA == per-head sdpa with keras-layout projections');
  const back = ref.kerasToTorch(kw);
  check(allClose(back.wk.data, w.wk.data, 0) && String(back.wk.shape) === String(w.wk.shape), 'keras → torch round trip');
  const avg = ref.multiHeadAttention({ embedDim: E, numHeads: H, kdim, vdim }, w, q, k, v, { averageWeights: true });
  ok = String(avg.weights.shape) === `${B},${Lq},${Lk}`;
  for (let b = 0; b < B; b++) for (let t = 0; t < Lq * Lk; t++) {
    let s = 0; for (let h = 0; h < H; h++) s += m.weights.data[(b * H + h) * Lq * Lk + t];
    ok &&= close(avg.weights.data[b * Lq * Lk + t], s / H, 1e-14);
  }
  check(ok, 'averaged weights = mean over heads');
  // unbatched == batch of one
  const q1 = { data: q.data.slice(0, Lq * E), shape: [Lq, E] }, k1 = { data: k.data.slice(0, Lk * kdim), shape: [Lk, kdim] }, v1 = { data: v.data.slice(0, Lk * vdim), shape: [Lk, vdim] };
  const u = ref.multiHeadAttention({ embedDim: E, numHeads: H, kdim, vdim }, w, q1, k1, v1);
  check(String(u.output.shape) === `${Lq},${E}` && String(u.weights.shape) === `${H},${Lq},${Lk}` && allClose(u.output.data, m.output.data.slice(0, Lq * E), 0), 'unbatched MHA');
}

// --- layer norm
{
  const x = ref.randomTensor(rng, [5, 10]);
  const y = ref.layerNorm(x);
  let ok = true;
  for (let r = 0; r < 5; r++) {
    let m = 0, v = 0; for (let j = 0; j < 10; j++) m += y.data[r * 10 + j]; m /= 10;
    for (let j = 0; j < 10; j++) v += (y.data[r * 10 + j] - m) ** 2; v /= 10;
    ok &&= Math.abs(m) < 1e-12 && Math.abs(v - 1) < 1e-3;
  }
  check(ok, 'LayerNorm rows have mean 0 and variance ~1');
  const c = ref.layerNorm({ data: new Array(8).fill(3), shape: [1, 8] });
  check(c.data.every((t) => t === 0), 'LayerNorm of a constant row is 0 (eps keeps it finite)');
  const r = ref.randomTensor(rng, [5, 10]), g = ref.randomTensor(rng, [10]), b = ref.randomTensor(rng, [10]);
  const y2 = ref.layerNorm(x, r, g, b);
  const y3 = ref.layerNorm(ref.add(x, r));
  check(allClose(y2.data, y3.data.map((t, i) => t * g.data[i % 10] + b.data[i % 10]), 1e-12), 'LayerNorm(x+r)·gamma+beta');
}

// --- dropout hash: Math.imul version == BigInt uint32 version
{
  const M = 2n ** 32n;
  const pcgBig = (x) => {
    const s = (BigInt(x) * 747796405n + 2891336453n) % M;
    const w = (((s >> ((s >> 28n) + 4n)) ^ s) * 277803737n) % M;
    return Number(((w >> 22n) ^ w) % M);
  };
  let ok = true;
  const r = ref.mulberry32(99);
  const vals = [0, 1, 2, 3, 255, 65535, 0x7fffffff, 0x80000000, 0xffffffff];
  for (let t = 0; t < 2000; t++) vals.push(Math.floor(r() * 4294967296));
  for (const x of vals) ok &&= ref.pcgHash(x) === pcgBig(x);
  check(ok, 'pcgHash (Math.imul) == BigInt uint32 arithmetic');
  const uBig = (seed, i) => Number(BigInt(pcgBig(Number((BigInt(seed) ^ BigInt(pcgBig(i))) % M))) >> 8n) / 2 ** 24;
  ok = true;
  for (let t = 0; t < 500; t++) { const s = Math.floor(r() * 4294967296), i = Math.floor(r() * 1e6); ok &&= ref.dropoutUniform(s, i) === uBig(s, i); }
  check(ok, 'dropoutUniform == BigInt version');
  // roughly uniform
  let below = 0; const n = 100000;
  for (let i = 0; i < n; i++) if (ref.dropoutUniform(12345, i) < 0.1) below++;
  check(Math.abs(below / n - 0.1) < 0.005, `dropoutUniform: P(u<0.1) = ${below / n}`);
  const d = ref.dropout({ data: new Float64Array(1000).fill(1) }, 0.25, 7);
  ok = true; for (let i = 0; i < 1000; i++) ok &&= d.dropped[i] ? d.data[i] === 0 : close(d.data[i], 1 / 0.75, 1e-15);
  check(ok, 'dropout keeps and scales by 1/(1-p)');
  console.log(`  pcgHash(0)=${ref.pcgHash(0)} pcgHash(1)=${ref.pcgHash(1)} dropoutUniform(0,0)=${ref.dropoutUniform(0, 0)} dropoutUniform(12345,7)=${ref.dropoutUniform(12345, 7)}`);
}

// --- layer: eval == LN(x + MHA(x)); training p=0 == eval; shapes
{
  const E = 8, H = 2, B = 2, L = 3;
  const w = ref.randomMhaWeights(rng, { embedDim: E });
  w.gamma = ref.randomTensor(rng, [E], { lo: 0.5, hi: 1.5 }); w.beta = ref.randomTensor(rng, [E]);
  const x = ref.randomTensor(rng, [B, L, E]);
  const ev = ref.selfAttentionLayer({ embedDim: E, numHeads: H, dropout: 0.1 }, w, x);
  const m = ref.multiHeadAttention({ embedDim: E, numHeads: H }, w, x);
  const ln = ref.layerNorm(x, m.output, w.gamma, w.beta);
  check(allClose(ev.output.data, ln.data, 1e-15), 'layer eval == LN(x + MHA(x))');
  const tr0 = ref.selfAttentionLayer({ embedDim: E, numHeads: H, dropout: 0 }, w, x, { training: true, dropoutSeed: 5 });
  check(allClose(tr0.output.data, ev.output.data, 0), 'training with p=0 == eval');
  const tr = ref.selfAttentionLayer({ embedDim: E, numHeads: H, dropout: 0.5 }, w, x, { training: true, dropoutSeed: 5 });
  check(tr.dropped && !allClose(tr.output.data, ev.output.data, 1e-6), 'training with p=0.5 differs');
}

// --- shape trace
{
  const t = ref.shapeTraceReference({ batch: 2, lq: 5, embedDim: 512, numHeads: 8 });
  check(JSON.stringify(t.map((r) => r.shape)) === JSON.stringify([[2, 5, 512], [2, 5, 512], [2, 8, 5, 64], [2, 8, 5, 5], [2, 8, 5, 5], [2, 8, 5, 64], [2, 5, 512], [2, 5, 512]]), 'tutorial 2 trace shapes');
  check(t.map((r) => r.step).join() === 'input,linear_qkv,split_heads,scores,softmax,weighted_sum,merge_heads,output_linear', 'trace step names');
  const tm = ref.shapeTraceReference({ batch: 2, lq: 5, embedDim: 512, numHeads: 8, mask: true, layer: true });
  check(tm.length === 12 && tm[4].step === 'mask' && tm.slice(-3).map((r) => r.step).join() === 'dropout,residual,layer_norm', 'trace with mask and layer');
  const tu = ref.shapeTraceReference({ batch: null, lq: 3, lk: 4, embedDim: 8, numHeads: 2 });
  check(String(tu[3].shape) === '2,3,4' && String(tu[0].shape) === '3,8', 'unbatched cross trace');
}

// --- compareClose
{
  check(ref.compareClose([1, 2, NaN], [1, 2 + 1e-7, NaN], { abs: 1e-6 }).ok, 'compareClose ok');
  const c = ref.compareClose([1, 2.1], [1, 2], { abs: 1e-6, rel: 1e-3 });
  check(!c.ok && c.worstIndex === 1, 'compareClose reports worst');
  check(!ref.compareClose([Infinity], [1], { abs: 1 }).ok && !ref.compareClose([1], [NaN]).ok, 'compareClose non-finite');
}

console.log(`reference self-check: ${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);

// The attention variants of the webgpu backend (GQA/MQA, softcap, maskFill,
// causal align/offset, sliding windows, ALiBi, RoPE): the MHA recording and
// the rotary step, shared by the backend's ops (webgpu-backend.js).
//
// One source per rule: the mask and softcap parameters come from the
// wrapper's one normalisation (lib/mask.js, lib/sdpa.js); the ALiBi default
// slopes and the RoPE cos/sin tables come from the C++ core through the wasm
// backend; the WGSL keeps the GPU copy of the score math only
// (web/webgpu/include/attention_rules.wgsl, rotary_embedding.wgsl). Values
// the core refuses (softcap <= 0, a NaN or +Infinity maskFill, window sides
// below -1, non-finite slopes, a rotaryDim or position the tables cannot
// serve) are outside the kernels' domain: those calls go to the wasm backend,
// whose core reports the error.
//
// Shape legend: B batch, Lq/Lk (L) sequence, E embed, H heads, Hkv kv heads,
// D head dim, Ekv = Hkv·D, R rotary dim.
import * as ops from './webgpu-ops.js';
import { defaultScale, maskStrides } from './webgpu-host.js';
import { scoreBuffers } from './webgpu-readback.js';

const notFinite32 = (x) => !Number.isFinite(Math.fround(x));

/** True when a mask or softcap value is one the C++ core refuses (wasm then reports it). */
export function refusedByCore(p) {
  const m = p.mask;
  if (p.softcap !== undefined && (typeof p.softcap !== 'number' || !(Math.fround(p.softcap) > 0) || notFinite32(p.softcap))) return true;
  if (!m) return false;
  const fill = Math.fround(m.fill ?? -1e9);
  if (Number.isNaN(fill) || fill === Infinity) return true;
  if (m.window && (m.windowLeft < -1 || m.windowRight < -1)) return true;
  if (m.alibi && m.slopes && Array.prototype.some.call(m.slopes, notFinite32)) return true;
  return false;
}

/**
 * True when a rotaryEmbedding call is outside the GPU path's domain: an
 * invalid rotaryDim, base or position (the core reports it), or positions
 * whose table would be far larger than the input.
 */
export function rotaryOutsideGpu(p) {
  const R = p.rotaryDim || p.headDim;
  if (R < 2 || R % 2 !== 0 || R > p.headDim) return true;
  if (p.cos) {
    if (!p.positionIds) return false;
    for (const pos of p.positionIds) if (pos >= p.maxPosition) return true;
    return p.maxPosition < 1;
  }
  if (!(p.base > 1) || !Number.isFinite(p.base)) return true;
  return tableRows(p) > Math.max(4096, 4 * p.batch * p.seqLen);
}

/** Rows of the cos/sin table a rotaryEmbedding call reads (computed tables). */
export function tableRows(p) {
  if (!p.positionIds) return p.seqLen;
  let max = 0;
  for (const pos of p.positionIds) max = Math.max(max, pos);
  return max + 1;
}

/** Records RoPE of a rotaryEmbedding call into `job` (x uploaded, rotated in place); returns x. */
export function recordRotary(job, p, tables) {
  const { batch: B, heads: H, seqLen: L, headDim: D } = p;
  const R = p.rotaryDim || D;
  const x = job.input('x', p.seqMajor ? [B, L, H * D] : [B, H, L, D], p.x);
  const strides = p.seqMajor ? { sb: L * H * D, sl: H * D, sh: D } : { sb: H * L * D, sl: D, sh: L * D };
  const cos = job.input('cos', [tables.cos.length / (R / 2), R / 2], tables.cos);
  const sin = job.input('sin', [tables.sin.length / (R / 2), R / 2], tables.sin);
  // Given tables: rows at positionIds, or one row per token; computed ones: rows at positionIds or l.
  const positions = p.positionIds ? job.input('positionIds', [B, L], p.positionIds) : null;
  const posMode = p.positionIds ? 0 : p.cos ? 1 : 2;
  ops.rotaryEmbedding(job, { x, batch: B, len: L, heads: H, ...strides, half: R / 2, interleaved: p.interleaved, cos, sin, positions, posMode });
  return x;
}

/**
 * Q/K/V projections (Q to H·D, K and V to Ekv = Hkv·D), the q/k norms, RoPE
 * of Q and K (positions l), attention (heads split and merged by strides;
 * query head h reads kv head h·Hkv/H) and the output projection, recorded
 * into `job` (as the core's MhaForward, src/train/mha_train.cpp). Returns
 * { out, weights } and, with p.trace, the buffers of the trace.
 * cfg: { embedDim, numHeads, numKvHeads, kdim, vdim, rope: { rotaryDim,
 * interleaved } | null } and the block graph's attention options: headDim
 * (D; E/H when absent), scale (the score scale; 1/√D when absent), softcap
 * (> 0: scores c·tanh(s/c)) and normEps (the q/k norms' epsilon).
 * obj.gpu: the projections, and qNorm / kNorm ([D] weights: an RMSNorm of
 * each head's q and k after the projections, before RoPE) when the model has them.
 * extra: { slopes } the ALiBi slopes ([H]) and { rope } the cos/sin tables ([rows, R/2]).
 */
export function recordMha(job, obj, p, query, key, value, extra = {}) {
  const { cfg } = obj;
  const g = obj.gpu;
  const E = cfg.embedDim;
  const H = cfg.numHeads;
  const Hkv = cfg.numKvHeads ?? H;
  const D = cfg.headDim || E / H;
  const Eq = H * D;
  const Ekv = Hkv * D;
  const { batch: B, lq: Lq, lk: Lk } = p;
  const Q = job.storage('the projected query', [B, Lq, Eq], B * Lq * Eq);
  const K = job.storage('the projected key', [B, Lk, Ekv], B * Lk * Ekv);
  const V = job.storage('the projected value', [B, Lk, Ekv], B * Lk * Ekv);
  // With q/k norms the projections land in scratch rows, normalised per head into Q and K.
  const qp = g.qNorm ? job.storage('the query before its norm', [B, Lq, Eq], B * Lq * Eq) : Q;
  const kp = g.kNorm ? job.storage('the key before its norm', [B, Lk, Ekv], B * Lk * Ekv) : K;
  ops.linear(job, { x: query, m: B * Lq, k: E, w: g.wq, bias: g.bq, n: Eq, y: qp });
  ops.linear(job, { x: key, m: B * Lk, k: cfg.kdim, w: g.wk, bias: g.bk, n: Ekv, y: kp });
  ops.linear(job, { x: value, m: B * Lk, k: cfg.vdim, w: g.wv, bias: g.bv, n: Ekv, y: V });
  if (g.qNorm) ops.rmsNorm(job, { x: qp, weight: g.qNorm, y: Q, rows: B * Lq * H, dim: D, eps: cfg.normEps });
  if (g.kNorm) ops.rmsNorm(job, { x: kp, weight: g.kNorm, y: K, rows: B * Lk * Hkv, dim: D, eps: cfg.normEps });
  if (cfg.rope) {
    const R = cfg.rope.rotaryDim;
    const rows = extra.rope.cos.length / (R / 2);
    const cos = job.input('rope cos', [rows, R / 2], extra.rope.cos);
    const sin = job.input('rope sin', [rows, R / 2], extra.rope.sin);
    const common = { batch: B, sh: D, half: R / 2, interleaved: cfg.rope.interleaved, cos, sin, posMode: 2 };
    ops.rotaryEmbedding(job, { ...common, x: Q, len: Lq, heads: H, sb: Lq * Eq, sl: Eq });
    ops.rotaryEmbedding(job, { ...common, x: K, len: Lk, heads: Hkv, sb: Lk * Ekv, sl: Ekv });
  }
  const ctx = job.storage('the merged heads', [B, Lq, Eq], B * Lq * Eq);
  const weights = p.needWeights || p.trace ? ops.weightsBuffer(job, B, H, Lq, Lk) : null;
  const view = {
    batch: B, heads: H, kvHeads: Hkv, lq: Lq, lk: Lk, d: D, dv: D, scale: cfg.scale || defaultScale(D), softcap: cfg.softcap || 0,
    q: { t: Q, sb: Lq * Eq, sh: D, sl: Eq },
    k: { t: K, sb: Lk * Ekv, sh: D, sl: Ekv },
    v: { t: V, sb: Lk * Ekv, sh: D, sl: Ekv },
    out: { t: ctx, sb: Lq * Eq, sh: D, sl: Eq },
    ...ops.maskInputs(job, p.mask, maskStrides, extra.slopes),
  };
  /** @type {any} */
  let trace = null;
  if (p.trace) {
    trace = { q: Q, k: K, v: V, ctx, ...scoreBuffers(job, view) };
  }
  ops.attention(job, view, weights);
  const out = job.storage('the attention output', [B, Lq, E], B * Lq * E);
  ops.linear(job, { x: ctx, m: B * Lq, k: Eq, w: g.wo, bias: g.bo, n: E, y: out });
  return { out, weights, trace };
}

/** Asks for the weights in the readback (averaged over heads when asked). */
export function readWeights(job, rd, weights, B, H, Lq, Lk, average) {
  if (average) {
    const a = job.storage('the averaged weights', [B, Lq, Lk], B * Lq * Lk);
    ops.averageHeads(job, weights, a, B, H, Lq, Lk);
    rd.add(job, 'weights', a, B * Lq * Lk);
  } else {
    rd.add(job, 'weights', weights, B * H * Lq * Lk);
  }
}

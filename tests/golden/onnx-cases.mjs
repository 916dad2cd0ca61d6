// onnx-cases.mjs — the ONNX Attention / RotaryEmbedding node-test cases of
// tests/golden/onnx/ mapped onto the public JS API, shared by the Jest
// conformance test (tests/js/onnx-conformance.test.js, wasm backends) and the
// browser test (tests/browser/onnx-webgpu.browser.mjs, webgpu backend). It
// imports nothing from the code under test; the expected outputs are ONNX's
// reference outputs stored with each case. Each ONNX attribute and input
// maps onto an option of the library:
//   Q/K/V 4-D [B,H,L,D], or 3-D [B,L,H·D] with q_num_heads/kv_num_heads
//     (reshaped here to 4-D, as the ONNX reference does)
//   kv_num_heads < q_num_heads    → k/v with Hkv heads (GQA/MQA)
//   past_key/past_value           → concatenated before K/V; present_* = that
//   is_causal                     → { kind: 'causal', offset: past length }
//                                   or, with nonpad_kv_seqlen,
//                                   { kind: 'causal', align: 'bottom-right' }
//                                   (ONNX's offset rule)
//   left/right_window_size        → { kind: 'window', left, right, offset | align }
//   nonpad_kv_seqlen              → { kind: 'padding', lengths }
//   attn_mask bool / float        → 'keep' / 'additive' tensor mask (padded
//                                   to the total key length as ONNX does)
//   scale, softcap                → scale, softcap
//   (always)                      → maskFill: -Infinity
//   qk_matmul_output mode 3       → the attention weights; modes 0-2 → the
//                                   trace: 'values' steps 'scores' / 'softcap'
//                                   (ONNX's mode 0 is after softcap too) and
//                                   'mask' (scores + bias, −∞ where masked)
//   RotaryEmbedding               → lab.rotaryEmbedding(x, { positionIds,
//                                   cos, sin, rotaryDim, interleaved, numHeads })
// fp16 cases run in float32 and compare with a float16 tolerance.
import { compareClose } from '../reference/reference.mjs';

const num = (x) => (x === 'inf' ? Infinity : x === '-inf' ? -Infinity : x === null ? NaN : x);
export function tensorOf(t) {
  if (!t) return null;
  if (t.dtype === 'bool') return { data: Float32Array.from(t.data, (b) => (b ? 1 : 0)), shape: t.shape, dtype: t.dtype };
  if (t.dtype.startsWith('int')) return { data: t.data.map(Number), shape: t.shape, dtype: t.dtype };
  return { data: Float32Array.from(t.data, num), shape: t.shape, dtype: t.dtype };
}
const byName = (list) => Object.fromEntries(list.map((t) => [t.name, t]));

// [B, L, H·D] → [B, H, L, D]
function toHeads(t, H) {
  const [B, L, HD] = t.shape;
  const D = HD / H;
  const out = new Float32Array(t.data.length);
  for (let b = 0; b < B; b++) for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) for (let d = 0; d < D; d++) {
    out[((b * H + h) * L + l) * D + d] = t.data[((b * L + l) * H + h) * D + d];
  }
  return { data: out, shape: [B, H, L, D] };
}
// [B, H, L, D] → [B, L, H·D]
function fromHeads(t) {
  const [B, H, L, D] = t.shape;
  const out = new Float32Array(t.data.length);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let l = 0; l < L; l++) for (let d = 0; d < D; d++) {
    out[((b * L + l) * H + h) * D + d] = t.data[((b * H + h) * L + l) * D + d];
  }
  return { data: out, shape: [B, L, H * D] };
}
// Concatenates [B, H, L1, D] and [B, H, L2, D] along L.
function concatSeq(a, b) {
  const [B, H, L1, D] = a.shape;
  const L2 = b.shape[2];
  const out = new Float32Array(B * H * (L1 + L2) * D);
  for (let n = 0; n < B * H; n++) {
    out.set(a.data.subarray(n * L1 * D, (n + 1) * L1 * D), n * (L1 + L2) * D);
    out.set(b.data.subarray(n * L2 * D, (n + 1) * L2 * D), n * (L1 + L2) * D + L1 * D);
  }
  return { data: out, shape: [B, H, L1 + L2, D] };
}
// Pads the last dim of a mask to `lk` with `value` (ONNX pads a short mask).
function padLast(t, lk, value) {
  const last = t.shape[t.shape.length - 1];
  if (last === lk) return t;
  const rows = t.data.length / last;
  const out = new Float32Array(rows * lk).fill(value);
  for (let r = 0; r < rows; r++) out.set(t.data.subarray(r * last, (r + 1) * last), r * lk);
  return { data: out, shape: [...t.shape.slice(0, -1), lk] };
}

// The plan of one Attention case: the API call and the outputs to compare.
export function planAttention(c) {
  const a = c.attributes;
  const ins = byName(c.inputs);
  let q = tensorOf(ins.Q);
  let k = tensorOf(ins.K);
  let v = tensorOf(ins.V);
  const threeD = q.shape.length === 3;
  if (threeD) {
    q = toHeads(q, a.q_num_heads);
    k = toHeads(k, a.kv_num_heads);
    v = toHeads(v, a.kv_num_heads);
  }
  const hasPast = Boolean(ins.past_key);
  if (hasPast) {
    k = concatSeq(tensorOf(ins.past_key), k);
    v = concatSeq(tensorOf(ins.past_value), v);
  }
  const lk = k.shape[2];
  const nonpad = ins.nonpad_kv_seqlen ? tensorOf(ins.nonpad_kv_seqlen).data : null;
  // ONNX's offset: the past length (top-left + offset), nonpad − Lq per
  // batch (bottom-right with the padding lengths), or 0.
  const pos = nonpad ? { align: 'bottom-right' } : { align: 'top-left', offset: hasPast ? tensorOf(ins.past_key).shape[2] : 0 };
  const mask = [];
  if (a.is_causal) mask.push({ kind: 'causal', ...pos });
  if ((a.left_window_size ?? -1) >= 0 || (a.right_window_size ?? -1) >= 0) {
    mask.push({ kind: 'window', left: a.left_window_size ?? -1, right: a.right_window_size ?? -1, ...pos });
  }
  if (nonpad) mask.push({ kind: 'padding', lengths: nonpad });
  if (ins.attn_mask) {
    const m = tensorOf(ins.attn_mask);
    const isBool = m.dtype === 'bool';
    const padded = padLast(m, lk, isBool ? 0 : -Infinity);
    mask.push({ kind: isBool ? 'keep' : 'additive', data: padded.data, shape: padded.shape });
  }
  const opts = { maskFill: -Infinity, mask };
  if (a.scale !== undefined) opts.scale = a.scale;
  if (a.softcap !== undefined && a.softcap > 0) opts.softcap = a.softcap;
  const outs = byName(c.outputs);
  const qkMode = a.qk_matmul_output_mode ?? 0;
  return { q, k, v, opts, threeD, outs, qkMode, wantQk: Boolean(outs.qk_matmul_output), softcap: opts.softcap };
}

/** The tolerance of a case: float32, or float16 when any tensor of the case is fp16. */
export function tolFor(c) {
  return c.inputs.some((t) => t.dtype === 'float16') || c.outputs.some((t) => t.dtype === 'float16')
    ? { abs: 2e-3, rel: 5e-3 } : { abs: 3e-5, rel: 3e-4 };
}

// One comparison: null when it holds, else a message naming the worst element.
function check(got, want, tol, label) {
  const w = tensorOf(want);
  if (got.shape.length !== w.shape.length || got.shape.some((d, i) => d !== w.shape[i])) {
    return `${label}: shape [${got.shape}] differs from [${w.shape}]`;
  }
  const r = compareClose(got.data, w.data, tol);
  if (r.ok) return null;
  return `${label}: ${r.count} of ${w.data.length} out of tolerance; worst at ${r.worstIndex}: got ${r.worstActual}, want ${r.worstExpected}`;
}

async function runAttention(lab, c) {
  const p = planAttention(c);
  const tol = tolFor(c);
  const needWeights = p.wantQk && p.qkMode === 3;
  const traced = p.wantQk && p.qkMode !== 3;
  const r = await lab.scaledDotProductAttention(p.q, p.k, p.v, { ...p.opts, needWeights, ...(traced ? { trace: 'values' } : {}) });
  const problems = [check(p.threeD ? fromHeads(r.output) : r.output, p.outs.Y, tol, 'Y')];
  if (p.outs.present_key) {
    problems.push(check(p.k, p.outs.present_key, { abs: 0, rel: 0 }, 'present_key'));
    problems.push(check(p.v, p.outs.present_value, { abs: 0, rel: 0 }, 'present_value'));
  }
  if (needWeights) problems.push(check(r.weights, p.outs.qk_matmul_output, tol, 'qk_matmul_output (mode 3: weights)'));
  if (traced) {
    const step = (name) => r.trace.find((s) => s.step === name);
    const capped = step('softcap') ?? step('scores');
    const want = p.qkMode === 2 ? (step('mask') ?? capped) : capped;
    problems.push(check(want.value, p.outs.qk_matmul_output, tol, `qk_matmul_output (mode ${p.qkMode}: trace step '${want.step}')`));
  }
  return problems.filter(Boolean);
}

async function runRotary(lab, c) {
  const a = c.attributes;
  const ins = byName(c.inputs);
  const x = tensorOf(ins.input);
  const opts = {};
  if (ins.position_ids) opts.positionIds = tensorOf(ins.position_ids).data;
  opts.cos = tensorOf(ins.cos_cache);
  opts.sin = tensorOf(ins.sin_cache);
  if (a.rotary_embedding_dim) opts.rotaryDim = a.rotary_embedding_dim;
  if (a.interleaved) opts.interleaved = true;
  if (x.shape.length === 3) opts.numHeads = a.num_heads;
  const y = await lab.rotaryEmbedding({ data: x.data, shape: x.shape }, opts);
  return [check(y, c.outputs[0], tolFor(c), 'output')].filter(Boolean);
}

/**
 * Runs one case through `lab` (sync or async backends); resolves to the list
 * of failed comparisons (empty when the case passes in full).
 */
export function runCase(lab, c) {
  return c.op === 'RotaryEmbedding' ? runRotary(lab, c) : runAttention(lab, c);
}

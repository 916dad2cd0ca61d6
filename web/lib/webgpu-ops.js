// The ops of the webgpu backend: each records the dispatches of one kernel
// (web/webgpu/<kernel>.wgsl) into a Job — its uniforms and its workgroup
// count. Tensors are { buffer, bytes } from the job or persistent buffers.
// Shape legend: B batch, Lq/Lk (L) sequence, E embed, H heads, D head dim,
// Dv value head dim.

import { WGSL_CONSTANTS } from './wgsl-sources.js';

// Tile and workgroup sizes: one place, web/webgpu/include/tiles.wgsl.
const { TILE, WG_1D } = WGSL_CONSTANTS;
const NEG_INF = -Infinity;
const HINT_WEIGHTS = 'pass needWeights: false to skip the [B,H,Lq,Lk] weights (the fused kernel needs only O(L·E) memory), or use smaller sizes';

// A weight held in 16 bits (w.half 'F16' or 'BF16': a model's persistent
// buffer, webgpu-model.js) is read through include/half_weights.wgsl.
const halfParams = (w) => ({ w_bf16: w.half === 'BF16' ? 1 : 0 });
const halfConstants = (w) => ({ HALF_WEIGHTS: w.half ? 1 : 0 });

/**
 * Y [M, N] = X [M, K] · W [K, N] + b (W keras layout [in, out]; float32, or 16-bit: w.half).
 * x/y offsets and row strides are in floats.
 * @param {any} job
 * @param {{ x: any, xOffset?: number, xStride?: number, m: number, k: number, w: any, bias: any, n: number, y: any, yOffset?: number, yStride?: number }} args
 */
export function linear(job, { x, xOffset = 0, xStride, m, k, w, bias, n, y, yOffset = 0, yStride }) {
  const tilesN = Math.ceil(n / TILE);
  const tiles = Math.ceil(m / TILE) * tilesN;
  job.dispatch('linear', [x, w, bias ?? job.dummy, y], {
    m, n, k, has_bias: bias ? 1 : 0,
    x_offset: xOffset, x_stride: xStride ?? k, y_offset: yOffset, y_stride: yStride ?? n,
    tiles_n: tilesN, tiles, ...halfParams(w),
  }, tiles, halfConstants(w));
}

/**
 * Uploads the mask of a normalised mask spec (see lib/mask.js) and returns the
 * attention-view fields: { spec (the normalised mask), lengths, maskKind,
 * mask, maskStrides, slopes }. `slopes` [H]: the ALiBi slopes (the spec's,
 * or the default ones the caller got from the C++ core), used with spec.alibi.
 */
export function maskInputs(job, mask, maskStrides4, slopes = null) {
  const out = { spec: mask, lengths: null, maskKind: 0, mask: null, maskStrides: [0, 0, 0, 0], slopes: null };
  if (mask.lengths) out.lengths = job.input('mask.lengths', [mask.lengths.length], mask.lengths);
  if (mask.kind) {
    out.maskKind = mask.kind;
    out.mask = job.input('mask', mask.shape4, mask.data);
    out.maskStrides = maskStrides4(mask.shape4);
  }
  if (mask.alibi) out.slopes = job.input('mask.slopes', [slopes.length], slopes);
  return out;
}

// The uniforms of the score rules (include/attention_rules.wgsl) of a view.
function ruleParams(view) {
  const m = view.spec;
  return {
    heads: view.heads, kv_heads: view.kvHeads ?? view.heads, lq: view.lq, lk: view.lk, d: view.d, scale: view.scale,
    softcap: view.softcap ?? 0, fill: m.fill ?? -1e9,
    causal: m.causal ? 1 : 0, causal_align: m.causalAlign ?? 0, causal_offset: m.causalOffset ?? 0,
    has_lengths: view.lengths ? 1 : 0,
    window: m.window ? 1 : 0, window_left: m.windowLeft ?? -1, window_right: m.windowRight ?? -1,
    window_align: m.windowAlign ?? 0, window_offset: m.windowOffset ?? 0,
    alibi: m.alibi ? 1 : 0,
    q_sb: view.q.sb, q_sh: view.q.sh, q_sl: view.q.sl,
    k_sb: view.k.sb, k_sh: view.k.sh, k_sl: view.k.sl,
    mask_kind: view.maskKind,
    m_sb: view.maskStrides[0], m_sh: view.maskStrides[1], m_sq: view.maskStrides[2], m_sk: view.maskStrides[3],
  };
}

/**
 * Attention over a strided view:
 *   view = { batch, heads, kvHeads, lq, lk, d, dv, scale, softcap,
 *            q, k, v, out: { t, sb, sh, sl }  (element strides: batch, head, row;
 *                                              k and v over kvHeads heads)
 *            spec, lengths, maskKind, mask, maskStrides, slopes }  (maskInputs)
 * With `weights` (a [B,H,Lq,Lk] job buffer): scores + softmax into it, then
 * weights·V. Without: the fused flash kernel, no [Lq, Lk] buffer at all.
 */
export function attention(job, view, weights) {
  const { batch: B, heads: H, lq, lk, d, dv } = view;
  const common = { ...ruleParams(view), neg_inf: NEG_INF };
  // Softcap and ALiBi cost per score: a pipeline of its own (override constant).
  const extras = { SCORE_EXTRAS: common.softcap > 0 || common.alibi ? 1 : 0 };
  const mask = view.mask ?? job.dummy;
  const lengths = view.lengths ?? job.dummy;
  const slopes = view.slopes ?? job.dummy;
  if (weights) {
    const rowBlocks = Math.ceil(lq / TILE);
    const tiles = B * H * rowBlocks;
    job.dispatch('attention_scores_softmax', [view.q.t, view.k.t, mask, lengths, slopes, weights], { ...common, row_blocks: rowBlocks, tiles }, tiles, extras);
    const tilesN = Math.ceil(dv / TILE);
    const perHead = Math.ceil(lq / TILE) * tilesN;
    job.dispatch('attention_weighted_sum', [weights, view.v.t, view.out.t], {
      heads: H, kv_heads: view.kvHeads ?? H, lq, lk, dv,
      v_sb: view.v.sb, v_sh: view.v.sh, v_sl: view.v.sl,
      o_sb: view.out.sb, o_sh: view.out.sh, o_sl: view.out.sl,
      tiles_n: tilesN, tiles_per_head: perHead, tiles: B * H * perHead,
    }, B * H * perHead);
  } else {
    const rowBlocks = Math.ceil(lq / TILE);
    const dvChunks = Math.ceil(dv / TILE);
    const tiles = B * H * rowBlocks * dvChunks;
    job.dispatch('flash_attention', [view.q.t, view.k.t, view.v.t, mask, lengths, slopes, view.out.t], {
      ...common, dv,
      v_sb: view.v.sb, v_sh: view.v.sh, v_sl: view.v.sl,
      o_sb: view.out.sb, o_sh: view.out.sh, o_sl: view.out.sl,
      row_blocks: rowBlocks, dv_chunks: dvChunks, tiles,
    }, tiles, extras);
  }
}

/**
 * The trace's scores (forward(…, { trace: 'values' })): scaled scores, the
 * soft-capped scores (`capped`, a buffer or null) and the masked scores
 * [B, H, Lq, Lk] of an attention view (as `attention` takes).
 */
export function traceScores(job, view, scores, capped, masked) {
  const { batch: B, heads: H, lq, lk } = view;
  const n = B * H * lq * lk;
  job.dispatch('attention_trace_scores', [
    view.q.t, view.k.t, view.mask ?? job.dummy, view.lengths ?? job.dummy, view.slopes ?? job.dummy,
    // (Without softcap: a small unused buffer, not the read-only dummy, for the written binding.)
    scores, capped ?? job.storage('the unused soft-capped scores', [1], 1), masked,
  ], { ...ruleParams(view), has_capped: capped ? 1 : 0, n }, Math.ceil(n / WG_1D));
}

/**
 * RoPE in place on x viewed as [B, L, H, D] by element strides (sb, sl, sh):
 * the first 2·half dims of each head rotated by the cos/sin rows of each
 * token (positions [B·L] with posMode 0; rows b·L + l with 1; pos0 + l with 2).
 */
export function rotaryEmbedding(job, { x, batch, len, heads, sb, sl, sh, half, interleaved, cos, sin, positions = null, posMode, pos0 = 0 }) {
  const n = batch * len * heads * half;
  job.dispatch('rotary_embedding', [x, cos, sin, positions ?? job.dummy], {
    len, heads, sb, sl, sh, half, interleaved: interleaved ? 1 : 0, pos_mode: posMode, pos0, n,
  }, Math.ceil(n / WG_1D));
}

/** The layer's trace: dropped = dropout(attn) (identity unless training), residual = x + dropped. */
export function traceDropoutResidual(job, { attn, x, dropped, residual, n, p, keepScale, seed, training }) {
  job.dispatch('trace_dropout_residual', [attn, x, dropped, residual], {
    n, seed: seed >>> 0, p, keep_scale: keepScale, training: training ? 1 : 0,
  }, Math.ceil(n / WG_1D));
}

/** The [B,H,Lq,Lk] weights buffer of a call, checked against the limits. */
export function weightsBuffer(job, B, H, lq, lk) {
  return job.storage('the attention weights', [B, H, lq, lk], B * H * lq * lk, HINT_WEIGHTS);
}

/** A [B, Lq, Lk] = mean over heads of P [B, H, Lq, Lk]. */
export function averageHeads(job, p, a, B, H, lq, lk) {
  const n = B * lq * lk;
  job.dispatch('average_heads', [p, a], { heads: H, plane: lq * lk, n, inv_heads: Math.fround(1 / H) }, Math.ceil(n / WG_1D));
}

/** Inverted dropout in place on n floats of x. */
export function dropout(job, x, n, p, keepScale, seed) {
  job.dispatch('dropout', [x], { n, seed: seed >>> 0, p, keep_scale: keepScale }, Math.ceil(n / WG_1D));
}

/** y [rows, dim] = LayerNorm(x + residual)·gamma + beta (residual, gamma, beta optional). */
export function addLayerNorm(job, { x, residual, gamma, beta, y, rows, dim, eps }) {
  job.dispatch('add_layer_norm', [x, residual ?? job.dummy, gamma ?? job.dummy, beta ?? job.dummy, y], {
    rows, dim, eps, has_residual: residual ? 1 : 0, has_gamma: gamma ? 1 : 0, has_beta: beta ? 1 : 0,
  }, rows);
}

/** out [L, E] = the sinusoidal encoding; freq from webgpu-host.peFrequencies. */
export function positionalEncoding(job, freq, out, seqLen, dModel) {
  const pairs = Math.ceil(dModel / 2);
  const n = seqLen * pairs;
  job.dispatch('positional_encoding', [freq, out], { seq_len: seqLen, d_model: dModel, pairs, n }, Math.ceil(n / WG_1D));
}

// ---- whole models (webgpu-model.js) -----------------------------------------

/** x [L, E] = word[:, ids] + pos[:, pos0 + l] + types[:, 0] (tables [E, V|P|T]; pos, types optional). */
export function embedding(job, { ids, word, pos, types, x, rows, dim, vocab, positions = 0, pos0 = 0, typeCount = 0, scale = 1 }) {
  const n = rows * dim;
  job.dispatch('embedding', [ids, word, pos ?? job.dummy, types ?? job.dummy, x], {
    rows, dim, vocab, has_pos: pos ? 1 : 0, positions, pos0, has_type: types ? 1 : 0, types: typeCount, n, scale, ...halfParams(word),
  }, Math.ceil(n / WG_1D), halfConstants(word));
}

/** y [rows, dim] = RMSNorm(x)·w (w optional). */
export function rmsNorm(job, { x, weight, y, rows, dim, eps }) {
  job.dispatch('rms_norm', [x, weight ?? job.dummy, y], { rows, dim, eps, has_weight: weight ? 1 : 0 }, rows);
}

/** GELU in place on n floats of x: erf form, or GPT-2's tanh form (gelu_new). */
export function gelu(job, x, n, tanhForm) {
  job.dispatch('gelu', [x], { n, tanh_form: tanhForm ? 1 : 0 }, Math.ceil(n / WG_1D));
}

// glu.wgsl's act: the gate's activation of each gated MLP (the block graph's activation).
const GLU_ACT = { swiglu: 0, geglu: 1, geglu_tanh: 2 };

/** up = act(gate)·up in place (n floats); activation 'swiglu' (SiLU), 'geglu' or 'geglu_tanh'. */
export function glu(job, gate, up, n, activation) {
  const act = GLU_ACT[activation];
  if (act === undefined) throw new Error(`webgpu: internal: no gated activation ${JSON.stringify(activation)}`);
  job.dispatch('glu', [gate, up], { n, act }, Math.ceil(n / WG_1D));
}

/** x = cap·tanh(x/cap) in place (n floats; cap > 0): the final logits' soft cap. */
export function logitSoftcap(job, x, n, cap) {
  job.dispatch('logit_softcap', [x], { n, cap }, Math.ceil(n / WG_1D));
}

/** x += r in place (n floats). */
export function residualAdd(job, r, x, n) {
  job.dispatch('residual_add', [r, x], { n }, Math.ceil(n / WG_1D));
}

// Float64 references for the training API's gradient checks: central finite
// differences, GELU (exact erf), masked cross-entropy and the whole tiny
// transformer's loss, written from the documented formulas (src/train/train.h,
// docs/training.md) on top of reference.mjs. Nothing here calls the library.
import * as ref from './reference.mjs';

/**
 * Central differences of f at x (a Float64Array, perturbed in place and
 * restored): g[i] = (f(x + h·eᵢ) − f(x − h·eᵢ)) / 2h. `indices` limits the
 * coordinates (others are left 0).
 */
export function numericGradient(f, x, { h = 1e-5, indices = null } = {}) {
  const g = new Float64Array(x.length);
  const idx = indices ?? Array.from({ length: x.length }, (_, i) => i);
  for (const i of idx) {
    const keep = x[i];
    x[i] = keep + h;
    const fp = f();
    x[i] = keep - h;
    const fm = f();
    x[i] = keep;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

/** ‖a − b‖₂ / max(‖b‖₂, floor) over `indices` (all when null). */
export function relativeError(a, b, { indices = null, floor = 1e-6 } = {}) {
  let num = 0;
  let den = 0;
  const n = indices ? indices.length : b.length;
  for (let t = 0; t < n; t++) {
    const i = indices ? indices[t] : t;
    num += (a[i] - b[i]) ** 2;
    den += b[i] ** 2;
  }
  return Math.sqrt(num) / Math.max(Math.sqrt(den), floor);
}

/**
 * softmax(q·kᵀ·scale + mask)·v in float64 throughout, for finite
 * differences: reference.mjs rounds masked scores to float32 (to match the
 * forward bit for bit), which would swamp a 1e-5 step. Same mask semantics
 * (attention_lab.h): the tensor mask first (keep: 0 → −1e9; block: += m·(−1e9);
 * additive: += m), then causal (j > i) and padding (j >= length) fill −1e9;
 * a row of −∞ is uniform. q [N, Lq, D], k [N, Lk, D], v [N, Lk, Dv] with
 * N = B·H. `mask` is normalised by reference.mjs (normalizeMask).
 */
export function sdpaF64(q, k, v, { B, H, Lq, Lk, D, Dv, scale, mask }) {
  const m = ref.normalizeMask(mask);
  const sc = scale ?? 1 / Math.sqrt(D);
  const out = new Float64Array(B * H * Lq * Dv);
  const t = m.tensor;
  const tv = (b, h, i, j) => {
    const sh = t.shape.length === 4 ? t.shape : [...Array(4 - t.shape.length).fill(1), ...t.shape];
    const c = [b, h, i, j];
    let flat = 0;
    for (let d = 0; d < 4; d++) flat = flat * sh[d] + (sh[d] === 1 ? 0 : c[d]);
    return t.data[flat];
  };
  const row = new Float64Array(Lk);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) {
    const n = b * H + h;
    for (let i = 0; i < Lq; i++) {
      let mx = -Infinity;
      for (let j = 0; j < Lk; j++) {
        let s = 0;
        for (let d = 0; d < D; d++) s += q[(n * Lq + i) * D + d] * k[(n * Lk + j) * D + d];
        s *= sc;
        if (t) {
          const mv = tv(b, h, i, j);
          if (m.kind === 'keep' && mv === 0) s = -1e9;
          else if (m.kind === 'block') s += mv * -1e9;
          else if (m.kind === 'additive') s += mv;
        }
        if (m.causal && j > i) s = -1e9;
        if (m.lengths && j >= m.lengths[b]) s = -1e9;
        row[j] = s;
        mx = Math.max(mx, s);
      }
      let z = 0;
      for (let j = 0; j < Lk; j++) {
        row[j] = mx === -Infinity ? 1 : Math.exp(row[j] - mx);
        z += row[j];
      }
      for (let j = 0; j < Lk; j++) {
        const p = row[j] / z;
        for (let d = 0; d < Dv; d++) out[(n * Lq + i) * Dv + d] += p * v[(n * Lk + j) * Dv + d];
      }
    }
  }
  return out;
}

/** Σ a·b. */
export function dot(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/** erf in double: Taylor series for |x| < 3, continued fraction of erfc beyond. */
export function erf(x) {
  const ax = Math.abs(x);
  if (ax < 3) {
    let term = ax;
    let sum = ax;
    const x2 = ax * ax;
    for (let n = 1; n < 200; n++) {
      term *= -x2 / n;
      const t = term / (2 * n + 1);
      sum += t;
      if (Math.abs(t) < 1e-17 * Math.abs(sum)) break;
    }
    const r = (2 / Math.sqrt(Math.PI)) * sum;
    return x < 0 ? -r : r;
  }
  // erfc(x) = exp(−x²)/√π · 1/(x + 1/2/(x + 1/(x + 3/2/(x + 2/(x + …)))))
  let f = ax;
  for (let n = 60; n >= 1; n--) f = ax + (n / 2) / f;
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / f;
  return x < 0 ? erfc - 1 : 1 - erfc;
}

/** GELU(x) = x·Φ(x), exact. */
export function gelu(x) {
  return 0.5 * x * (1 + erf(x / Math.SQRT2));
}

/** Σ m·(logsumexp(z) − z[target]) / Σ m over rows of logits [R, V]. */
export function maskedCrossEntropy(logits, targets, mask, V) {
  const R = targets.length;
  let loss = 0;
  let wsum = 0;
  for (let r = 0; r < R; r++) {
    const m = mask ? mask[r] : 1;
    if (m === 0) continue;
    let mx = -Infinity;
    for (let j = 0; j < V; j++) mx = Math.max(mx, logits[r * V + j]);
    let s = 0;
    for (let j = 0; j < V; j++) s += Math.exp(logits[r * V + j] - mx);
    loss += m * (Math.log(s) + mx - logits[r * V + targets[r]]);
    wsum += m;
  }
  return loss / wsum;
}

/** A flat array as a reference tensor (the shape is not used by the weights' readers). */
export function asTensor(a) {
  return { data: a, shape: [a.length] };
}

/** y[R, out] = x·Wᵀ + b (torch layout). */
function linear(x, R, inDim, w, b, outDim) {
  return ref.linearTorch(x, R, inDim, w, b, outDim);
}

/**
 * Multi-head self- or cross-attention in float64 throughout (torch-layout
 * weights {wq, bq, wk, bk, wv, bv, wo, bo} of Float64Arrays, biases may be
 * absent), with the attention of attentionModern (every mask variant) and,
 * with `rope` (true or { base, rotaryDim, interleaved }), the rotary embedding
 * of reference.mjs (ONNX RotaryEmbedding, positions 0..L−1) on Q and K per
 * head. GQA: wk, wv project to Hkv·D. query [B, Lq, E], key/value [B, Lk, E]
 * (flat Float64Arrays; kdim = vdim = E).
 */
export function mhaF64({ E, H, Hkv = H, B, Lq, Lk = Lq, rope = false, modern = {} }, W, query, key = query, value = key) {
  const D = E / H;
  const Ekv = Hkv * D;
  const ropeOpts = rope === true ? {} : rope;
  let Q = ref.linearTorch(query, B * Lq, E, W.wq, W.bq ?? null, E);
  let K = ref.linearTorch(key, B * Lk, E, W.wk, W.bk ?? null, Ekv);
  const V = ref.linearTorch(value, B * Lk, E, W.wv, W.bv ?? null, Ekv);
  if (rope) {
    Q = ref.rotaryEmbedding({ data: Q, shape: [B, Lq, E] }, { ...ropeOpts, numHeads: H }).data;
    K = ref.rotaryEmbedding({ data: K, shape: [B, Lk, Ekv] }, { ...ropeOpts, numHeads: Hkv }).data;
  }
  const split = (X, L, heads) => {
    const out = new Float64Array(B * heads * L * D);
    for (let b = 0; b < B; b++) for (let h = 0; h < heads; h++) for (let i = 0; i < L; i++) for (let d = 0; d < D; d++) {
      out[((b * heads + h) * L + i) * D + d] = X[(b * L + i) * heads * D + h * D + d];
    }
    return { data: out, shape: [B, heads, L, D] };
  };
  const att = ref.attentionModern(split(Q, Lq, H), split(K, Lk, Hkv), split(V, Lk, Hkv), modern).output.data;
  const ctx = new Float64Array(B * Lq * E);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let i = 0; i < Lq; i++) for (let d = 0; d < D; d++) {
    ctx[(b * Lq + i) * E + h * D + d] = att[((b * H + h) * Lq + i) * D + d];
  }
  return ref.linearTorch(ctx, B * Lq, E, W.wo, W.bo ?? null, E);
}

/**
 * The tiny transformer's logits in float64 (dropout off):
 *   x = Emb[tokens] + Pos; per block: h = LN(x + MHA(x)); x = LN(h + W2·GELU(W1·h + b1) + b2);
 *   positional 'rope': no Pos; MHA rotates Q and K (mhaF64 with rope).
 *   logits = x·Whᵀ + bh. `weights` maps the names of model.getWeights() to
 *   Float64Arrays; `config` is the model's config.
 */
export function transformerLogits(config, weights, tokens, B, L) {
  const { vocabSize: V, embedDim: E, numHeads: H, numLayers: N, ffnDim: F, causal, positional } = config;
  const R = B * L;
  let x = new Float64Array(R * E);
  const pe = positional === 'sinusoidal' ? ref.positionalEncoding(L, E).data : null;
  for (let r = 0; r < R; r++) {
    const t = tokens[r];
    const p = r % L;
    for (let j = 0; j < E; j++) {
      let v = weights['embed.weight'][t * E + j];
      if (positional === 'learned') v += weights['pos.weight'][p * E + j];
      if (pe) v += pe[p * E + j];
      x[r * E + j] = v;
    }
  }
  const mask = causal ? [{ kind: 'causal' }] : null;
  for (let l = 0; l < N; l++) {
    const w = (name) => weights[`blocks.${l}.${name}`];
    const mhaW = {};
    for (const n of ['wq', 'bq', 'wk', 'bk', 'wv', 'bv', 'wo', 'bo']) mhaW[n] = asTensor(w(`attn.${n}`));
    const xt = { data: x, shape: [B, L, E] };
    const a = positional === 'rope'
      ? { data: mhaF64({ E, H, B, Lq: L, rope: true, modern: { causal: causal ? 'top-left' : false } },
        Object.fromEntries(Object.entries(mhaW).map(([n, t]) => [n, t.data])), x), shape: [B, L, E] }
      : ref.multiHeadAttention({ embedDim: E, numHeads: H }, mhaW, xt, xt, xt, { mask, needWeights: false }).output;
    const h = ref.layerNorm(xt, a, { data: w('norm1.weight'), shape: [E] }, { data: w('norm1.bias'), shape: [E] }).data;
    const f1 = linear(h, R, E, w('ffn.w1'), w('ffn.b1'), F);
    for (let i = 0; i < f1.length; i++) f1[i] = gelu(f1[i]);
    const f2 = linear(f1, R, F, w('ffn.w2'), w('ffn.b2'), E);
    x = ref.layerNorm({ data: h, shape: [B, L, E] }, { data: f2, shape: [B, L, E] },
      { data: w('norm2.weight'), shape: [E] }, { data: w('norm2.bias'), shape: [E] }).data;
  }
  return linear(x, R, E, weights['head.weight'], weights['head.bias'], V);
}

// reference.mjs — an independent float64 reference of everything attention-lab
// computes, in plain JavaScript. It imports nothing from the code under test
// (src/, bindings/, web/) and is the oracle of the Jest parity tests and of
// tests/golden/cases.json (see generate-golden.mjs).
//
// Shape legend (as in docs/js-api.md): B batch, Lq/Lk (L) sequence, E embed,
// H heads, D head dim (E = H·D), Dv value head dim.
//
// Tensors are `{ data, shape }` where `data` is any array-like of numbers
// (Float32Array, Float64Array, plain array). Results are `{ data: Float64Array,
// shape }`. Weights are in torch layout (nn.Linear: W [out, in], y = x·Wᵀ + b)
// unless a function says otherwise; `torchToKeras` / `kerasToTorch` convert.
//
// Semantics follow docs/js-api.md and src/attention_lab.h. The single place
// where the reference deliberately reproduces float32 behaviour is masking: a
// score that a mask touched is rounded to float32 (Math.fround) after the mask
// is applied. In float32, `s + (-1e9)` is exactly -1e9 for |s| < 32, so a row
// whose keys are all blocked by a 'block' mask becomes uniform, as it does in
// the PyTorch/TensorFlow tutorials and in the library; in float64 the tiny
// differences would survive and give a non-uniform row. For unmasked scores
// and for partially masked rows the rounding changes nothing measurable.

export const MASK_FILL = -1e9;
export const LN_EPS = 1e-5;

// ---------------------------------------------------------------------------
// Seeded PRNG and random data

/** mulberry32: a small seeded PRNG returning floats in [0, 1). */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal sample (Box–Muller) from a [0,1) generator. */
export function randn(rng) {
  let u = 0;
  while (u === 0) u = rng();
  const v = rng();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** Integer in [lo, hi] inclusive. */
export function randInt(rng, lo, hi) {
  return lo + Math.floor(rng() * (hi - lo + 1));
}

/** Picks one element of an array. */
export function pick(rng, arr) {
  return arr[Math.floor(rng() * arr.length)];
}

export function numel(shape) {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/**
 * A random float32 tensor `{ data: Float32Array, shape }`.
 * dist: 'uniform' in [lo, hi) or 'normal' (mean 0, std `std`).
 * quantum: when given (e.g. 2**-12), values are rounded to multiples of it, so
 * that they are exact in float32 and short in JSON.
 */
export function randomTensor(rng, shape, { dist = 'uniform', lo = -1, hi = 1, std = 1, quantum = 0 } = {}) {
  const n = numel(shape);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let x = dist === 'normal' ? std * randn(rng) : lo + (hi - lo) * rng();
    if (quantum) x = Math.round(x / quantum) * quantum;
    data[i] = x;
  }
  return { data, shape: shape.slice() };
}

// ---------------------------------------------------------------------------
// Tensor helpers

/** Shape of a nested JS array ([[1,2],[3,4]] → [2,2]). */
export function nestedShape(x) {
  const shape = [];
  let cur = x;
  while (Array.isArray(cur)) {
    shape.push(cur.length);
    cur = cur[0];
  }
  return shape;
}

/** Flattens a nested JS array in row-major order. */
export function flattenNested(x) {
  const out = [];
  (function rec(a) {
    if (Array.isArray(a)) for (const e of a) rec(e);
    else out.push(a);
  })(x);
  return out;
}

/** Builds a nested JS array from flat data and a shape. */
export function toNested(data, shape) {
  if (shape.length === 0) return data[0];
  const inner = numel(shape.slice(1));
  const out = [];
  for (let i = 0; i < shape[0]; i++) {
    out.push(toNested(Array.prototype.slice.call(data, i * inner, (i + 1) * inner), shape.slice(1)));
  }
  return out;
}

/** Normalises a tensor-like (nested array or {data, shape}) to {data: Float64Array, shape}. */
export function toTensor(x) {
  if (Array.isArray(x)) {
    return { data: Float64Array.from(flattenNested(x)), shape: nestedShape(x) };
  }
  if (x && typeof x === 'object' && 'data' in x) {
    if (Array.isArray(x.data) && Array.isArray(x.data[0])) {
      return { data: Float64Array.from(flattenNested(x.data)), shape: x.shape ? x.shape.slice() : nestedShape(x.data) };
    }
    const data = Float64Array.from(x.data);
    const shape = x.shape ? x.shape.slice() : [data.length];
    if (numel(shape) !== data.length) {
      throw new RangeError(`reference: data length ${data.length} does not match shape [${shape}]`);
    }
    return { data, shape };
  }
  throw new TypeError('reference: not a tensor');
}

/** Transposes a 2-D tensor. */
export function transpose2d(t) {
  const { data, shape } = toTensor(t);
  if (shape.length !== 2) throw new RangeError('transpose2d: rank must be 2');
  const [r, c] = shape;
  const out = new Float64Array(r * c);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[j * r + i] = data[i * c + j];
  return { data: out, shape: [c, r] };
}

/** Adds two tensors of the same shape. */
export function add(a, b) {
  const A = toTensor(a), Bt = toTensor(b);
  if (A.data.length !== Bt.data.length) throw new RangeError('add: size mismatch');
  const out = new Float64Array(A.data.length);
  for (let i = 0; i < out.length; i++) out[i] = A.data[i] + Bt.data[i];
  return { data: out, shape: A.shape.slice() };
}

/** Plain matmul of A [m,k] by B [k,n] (flat arrays). */
export function matmul(a, b, m, k, n) {
  const out = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let p = 0; p < k; p++) {
      const aip = a[i * k + p];
      if (aip === 0) continue;
      for (let j = 0; j < n; j++) out[i * n + j] += aip * b[p * n + j];
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Positional encoding

/**
 * Sinusoidal positional encoding [seqLen, dModel]:
 * PE(pos, 2i) = sin(pos / base^(2i/dModel)), PE(pos, 2i+1) = cos(pos / base^(2i/dModel)).
 * For odd dModel the last column (an even index) is a sin.
 */
export function positionalEncoding(seqLen, dModel, base = 10000) {
  const out = new Float64Array(seqLen * dModel);
  for (let pos = 0; pos < seqLen; pos++) {
    for (let j = 0; j < dModel; j++) {
      const twoI = j - (j % 2);
      const angle = pos / Math.pow(base, twoI / dModel);
      out[pos * dModel + j] = j % 2 === 0 ? Math.sin(angle) : Math.cos(angle);
    }
  }
  return { data: out, shape: [seqLen, dModel] };
}

// ---------------------------------------------------------------------------
// Masks

/**
 * Normalises a mask to `{ causal, lengths, kind, tensor }` where kind is
 * 'none' | 'keep' | 'block' | 'additive' and tensor is {data, shape} or null.
 * Accepts: null/undefined; one JS API spec or an array of them
 * ({kind:'causal'}, {kind:'padding', lengths}, {kind:'keep'|'block'|'additive', data, shape});
 * or the golden-file form {causal, lengths, kind, mask: {shape, data}}.
 */
export function normalizeMask(mask) {
  const m = { causal: false, lengths: null, kind: 'none', tensor: null };
  if (mask == null) return m;
  const isGolden = !Array.isArray(mask) && typeof mask === 'object' && 'causal' in mask && !('data' in mask);
  if (isGolden) {
    m.causal = !!mask.causal;
    m.lengths = mask.lengths ? mask.lengths.slice() : null;
    m.kind = mask.kind || 'none';
    m.tensor = m.kind !== 'none' && mask.mask ? toTensor(mask.mask) : null;
    return m;
  }
  const specs = Array.isArray(mask) ? mask : [mask];
  for (const s of specs) {
    if (s.kind === 'causal') m.causal = true;
    else if (s.kind === 'padding') m.lengths = s.lengths.slice();
    else if (s.kind === 'keep' || s.kind === 'block' || s.kind === 'additive') {
      m.kind = s.kind;
      m.tensor = toTensor(s.shape ? { data: Array.isArray(s.data) ? flattenNested(s.data) : s.data, shape: s.shape } : s.data);
    } else throw new RangeError(`reference: unknown mask kind ${s.kind}`);
  }
  return m;
}

/** Converts a normalised or golden mask into JS API mask specs (array) or undefined. */
export function maskToApi(mask) {
  const m = normalizeMask(mask);
  const specs = [];
  if (m.causal) specs.push({ kind: 'causal' });
  if (m.lengths) specs.push({ kind: 'padding', lengths: m.lengths.slice() });
  if (m.kind !== 'none' && m.tensor) {
    specs.push({ kind: m.kind, data: Float32Array.from(m.tensor.data), shape: m.tensor.shape.slice() });
  }
  return specs.length ? specs : undefined;
}

/** Converts any mask form into the golden-file form. */
export function maskToGolden(mask) {
  const m = normalizeMask(mask);
  return {
    causal: m.causal,
    lengths: m.lengths ? m.lengths.slice() : null,
    kind: m.kind,
    mask: m.tensor ? { shape: m.tensor.shape.slice(), data: Array.from(m.tensor.data) } : null,
  };
}

function hasMask(m) {
  return m.causal || m.lengths !== null || (m.kind !== 'none' && m.tensor !== null);
}

/** Right-aligns a mask shape to [B, H, Lq, Lk] and checks numpy broadcasting. */
function broadcastStrides(maskShape, target) {
  if (maskShape.length > 4) throw new RangeError(`mask rank ${maskShape.length} > 4`);
  const full = [1, 1, 1, 1];
  for (let i = 0; i < maskShape.length; i++) full[4 - maskShape.length + i] = maskShape[i];
  for (let i = 0; i < 4; i++) {
    if (full[i] !== 1 && full[i] !== target[i]) {
      throw new RangeError(`mask shape [${maskShape}] is not broadcastable to [${target}]`);
    }
  }
  const strides = [0, 0, 0, 0];
  let s = 1;
  for (let i = 3; i >= 0; i--) {
    strides[i] = full[i] === 1 ? 0 : s;
    s *= full[i];
  }
  return strides;
}

/**
 * Applies a (normalised) mask in place to scaled scores [B, H, Lq, Lk]:
 * causal, then padding, then the tensor mask. Touched scores are rounded to
 * float32 (see the file comment).
 */
export function applyMask(scores, B, H, Lq, Lk, maskIn) {
  const m = normalizeMask(maskIn);
  if (!hasMask(m)) return scores;
  if (m.lengths && m.lengths.length !== B) {
    throw new RangeError(`padding lengths has ${m.lengths.length} entries, expected B = ${B}`);
  }
  const strides = m.tensor ? broadcastStrides(m.tensor.shape, [B, H, Lq, Lk]) : null;
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      for (let i = 0; i < Lq; i++) {
        const row = ((b * H + h) * Lq + i) * Lk;
        for (let j = 0; j < Lk; j++) {
          let s = scores[row + j];
          let touched = false;
          // Tensor mask first; causal and padding then fill, overriding it.
          if (strides) {
            const mv = m.tensor.data[b * strides[0] + h * strides[1] + i * strides[2] + j * strides[3]];
            if (m.kind === 'keep') {
              if (mv === 0) { s = MASK_FILL; touched = true; }
            } else if (m.kind === 'block') {
              if (mv !== 0) { s = s + mv * MASK_FILL; touched = true; }
            } else if (m.kind === 'additive') {
              if (mv !== 0) { s = s + mv; touched = true; }
            }
          }
          if (m.causal && j > i) { s = MASK_FILL; touched = true; }
          if (m.lengths && j >= m.lengths[b]) { s = MASK_FILL; touched = true; }
          scores[row + j] = touched ? Math.fround(s) : s;
        }
      }
    }
  }
  return scores;
}

// ---------------------------------------------------------------------------
// Softmax and scaled dot-product attention

/**
 * Row softmax in place over rows of length n. A row that is all -Infinity is
 * made uniform (1/n); rows all equal (e.g. all filled with -1e9) are uniform
 * naturally. NaN propagates.
 */
export function softmaxRows(x, n) {
  for (let r = 0; r < x.length; r += n) {
    let max = -Infinity;
    let nan = false;
    for (let j = 0; j < n; j++) {
      const v = x[r + j];
      if (Number.isNaN(v)) nan = true;
      else if (v > max) max = v;
    }
    if (nan) { for (let j = 0; j < n; j++) x[r + j] = NaN; continue; }
    if (max === -Infinity) { for (let j = 0; j < n; j++) x[r + j] = 1 / n; continue; }
    let sum = 0;
    for (let j = 0; j < n; j++) { const e = Math.exp(x[r + j] - max); x[r + j] = e; sum += e; }
    for (let j = 0; j < n; j++) x[r + j] /= sum;
  }
  return x;
}

/** Reads leading dims [..., L, D] as [B, H] the way docs/js-api.md says. */
export function leadingAsBH(lead) {
  if (lead.length === 0) return [1, 1];
  if (lead.length === 1) return [lead[0], 1];
  if (lead.length === 2) return [lead[0], lead[1]];
  // Rank > 4 is not described for masks; treat all but the last as B.
  return [numel(lead.slice(0, -1)), lead[lead.length - 1]];
}

/**
 * softmax(Q·Kᵀ·scale + mask)·V.
 * q [..., Lq, D], k [..., Lk, D], v [..., Lk, Dv] with identical leading dims.
 * → { output [..., Lq, Dv], weights [..., Lq, Lk] | null }.
 */
export function scaledDotProductAttention(qIn, kIn, vIn, { mask = null, scale = undefined, needWeights = true } = {}) {
  const q = toTensor(qIn), k = toTensor(kIn), v = toTensor(vIn);
  const r = q.shape.length;
  if (r < 2 || k.shape.length !== r || v.shape.length !== r) throw new RangeError('sdpa: q, k, v must have the same rank >= 2');
  const lead = q.shape.slice(0, -2);
  for (let i = 0; i < r - 2; i++) {
    if (k.shape[i] !== lead[i] || v.shape[i] !== lead[i]) throw new RangeError('sdpa: leading dims differ');
  }
  const Lq = q.shape[r - 2], D = q.shape[r - 1];
  const Lk = k.shape[r - 2], Dv = v.shape[r - 1];
  if (k.shape[r - 1] !== D) throw new RangeError('sdpa: q and k head dims differ');
  if (v.shape[r - 2] !== Lk) throw new RangeError('sdpa: k and v lengths differ');
  const N = numel(lead);
  const [B, H] = leadingAsBH(lead);
  const sc = scale === undefined || scale === null ? 1 / Math.sqrt(D) : scale;

  const scores = new Float64Array(N * Lq * Lk);
  for (let n = 0; n < N; n++) {
    const qo = n * Lq * D, ko = n * Lk * D, so = n * Lq * Lk;
    for (let i = 0; i < Lq; i++) {
      for (let j = 0; j < Lk; j++) {
        let s = 0;
        for (let d = 0; d < D; d++) s += q.data[qo + i * D + d] * k.data[ko + j * D + d];
        scores[so + i * Lk + j] = s * sc;
      }
    }
  }
  applyMask(scores, B, H, Lq, Lk, mask);
  softmaxRows(scores, Lk);
  const out = new Float64Array(N * Lq * Dv);
  for (let n = 0; n < N; n++) {
    const vo = n * Lk * Dv, so = n * Lq * Lk, oo = n * Lq * Dv;
    for (let i = 0; i < Lq; i++) {
      for (let j = 0; j < Lk; j++) {
        const w = scores[so + i * Lk + j];
        if (w === 0) continue;
        for (let d = 0; d < Dv; d++) out[oo + i * Dv + d] += w * v.data[vo + j * Dv + d];
      }
    }
  }
  return {
    output: { data: out, shape: [...lead, Lq, Dv] },
    weights: needWeights ? { data: scores, shape: [...lead, Lq, Lk] } : null,
  };
}

/**
 * Bare self-attention softmax(X·Xᵀ·scale)·X, scale = 1/√E by default.
 * x [L, E] → output [L, E], weights [L, L]; x [B, L, E] → [B, L, E], [B, L, L].
 */
export function selfAttention(xIn, { mask = null, scale = undefined } = {}) {
  const x = toTensor(xIn);
  const E = x.shape[x.shape.length - 1];
  return scaledDotProductAttention(x, x, x, { mask, scale: scale ?? 1 / Math.sqrt(E) });
}

// ---------------------------------------------------------------------------
// Linear layers, weight layouts

/** y = x·Wᵀ + b for x [rows, in], W torch [out, in], b [out] or null. */
export function linearTorch(x, rows, inDim, w, b, outDim) {
  const out = new Float64Array(rows * outDim);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outDim; o++) {
      let s = b ? b[o] : 0;
      for (let i = 0; i < inDim; i++) s += x[r * inDim + i] * w[o * inDim + i];
      out[r * outDim + o] = s;
    }
  }
  return out;
}

const MATRIX_NAMES = ['wq', 'wk', 'wv', 'wo'];

/**
 * Converts a weight dict between torch ([out, in]) and keras ([in, out])
 * layouts: matrices are transposed, biases and gamma/beta copied. The
 * conversion is its own inverse. Tensors may be nested arrays or {data, shape}.
 */
export function torchToKeras(weights) {
  const out = {};
  for (const [name, t] of Object.entries(weights)) {
    if (t == null) continue;
    out[name] = MATRIX_NAMES.includes(name) ? transpose2d(t) : toTensor(t);
  }
  return out;
}
export const kerasToTorch = torchToKeras;

/** Converts a weight dict's tensors to {data: Float32Array, shape} (API input). */
export function weightsToF32(weights) {
  const out = {};
  for (const [name, t] of Object.entries(weights)) {
    if (t == null) continue;
    const T = toTensor(t);
    out[name] = { data: Float32Array.from(T.data), shape: T.shape.slice() };
  }
  return out;
}

/**
 * Random torch-layout MHA weights, float32-exact: matrices uniform in
 * ±1/√in (nn.Linear's default range), biases in ±1/√in as well.
 * With `bias: false` the biases are omitted.
 */
export function randomMhaWeights(rng, { embedDim, kdim = embedDim, vdim = embedDim, bias = true, quantum = 0 }) {
  const E = embedDim;
  const mk = (shape, fanIn) => randomTensor(rng, shape, { lo: -1 / Math.sqrt(fanIn), hi: 1 / Math.sqrt(fanIn), quantum });
  const w = {
    wq: mk([E, E], E), wk: mk([E, kdim], kdim), wv: mk([E, vdim], vdim), wo: mk([E, E], E),
  };
  if (bias) {
    w.bq = mk([E], E); w.bk = mk([E], kdim); w.bv = mk([E], vdim); w.bo = mk([E], E);
  }
  return w;
}

// ---------------------------------------------------------------------------
// Multi-head attention

/**
 * torch.nn.MultiheadAttention-style forward with explicit torch-layout weights.
 * cfg: { embedDim, numHeads, kdim = embedDim, vdim = embedDim }
 * weights: { wq [E,E], bq?, wk [E,kdim], bk?, wv [E,vdim], bv?, wo [E,E], bo? }
 * query [B,Lq,E] | [Lq,E]; key [B,Lk,kdim] (default query); value [B,Lk,vdim] (default key).
 * → { output [B,Lq,E], weights [B,H,Lq,Lk] | [B,Lq,Lk] (averaged) | null } (B dropped when unbatched).
 */
export function multiHeadAttention(cfg, weights, queryIn, keyIn = queryIn, valueIn = keyIn,
  { mask = null, needWeights = true, averageWeights = false } = {}) {
  const E = cfg.embedDim, H = cfg.numHeads;
  const kdim = cfg.kdim ?? E, vdim = cfg.vdim ?? E;
  if (E % H !== 0) throw new RangeError('mha: embedDim must be divisible by numHeads');
  const D = E / H;
  const query = toTensor(queryIn), key = toTensor(keyIn), value = toTensor(valueIn);
  const unbatched = query.shape.length === 2;
  const B = unbatched ? 1 : query.shape[0];
  const Lq = query.shape[query.shape.length - 2];
  const Lk = key.shape[key.shape.length - 2];
  if (query.shape[query.shape.length - 1] !== E) throw new RangeError('mha: query width != embedDim');
  if (key.shape[key.shape.length - 1] !== kdim) throw new RangeError('mha: key width != kdim');
  if (value.shape[value.shape.length - 1] !== vdim) throw new RangeError('mha: value width != vdim');
  if (value.shape[value.shape.length - 2] !== Lk) throw new RangeError('mha: value length != key length');
  const W = {};
  for (const [n, t] of Object.entries(weights)) if (t != null) W[n] = toTensor(t).data;

  const Q = linearTorch(query.data, B * Lq, E, W.wq, W.bq, E);
  const K = linearTorch(key.data, B * Lk, kdim, W.wk, W.bk, E);
  const V = linearTorch(value.data, B * Lk, vdim, W.wv, W.bv, E);
  const split = (X, L) => {
    const out = new Float64Array(B * H * L * D);
    for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let i = 0; i < L; i++) for (let d = 0; d < D; d++) {
      out[((b * H + h) * L + i) * D + d] = X[(b * L + i) * E + h * D + d];
    }
    return { data: out, shape: [B, H, L, D] };
  };
  const att = scaledDotProductAttention(split(Q, Lq), split(K, Lk), split(V, Lk), { mask, needWeights: true });
  const concat = new Float64Array(B * Lq * E);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let i = 0; i < Lq; i++) for (let d = 0; d < D; d++) {
    concat[(b * Lq + i) * E + h * D + d] = att.output.data[((b * H + h) * Lq + i) * D + d];
  }
  const out = linearTorch(concat, B * Lq, E, W.wo, W.bo, E);

  let wts = null;
  if (needWeights) {
    if (averageWeights) {
      const avg = new Float64Array(B * Lq * Lk);
      for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let t = 0; t < Lq * Lk; t++) {
        avg[b * Lq * Lk + t] += att.weights.data[(b * H + h) * Lq * Lk + t] / H;
      }
      wts = { data: avg, shape: unbatched ? [Lq, Lk] : [B, Lq, Lk] };
    } else {
      wts = { data: att.weights.data, shape: unbatched ? [H, Lq, Lk] : [B, H, Lq, Lk] };
    }
  }
  return { output: { data: out, shape: unbatched ? [Lq, E] : [B, Lq, E] }, weights: wts };
}

// ---------------------------------------------------------------------------
// LayerNorm, dropout, self-attention layer

/**
 * y = LayerNorm(x + residual)·gamma + beta over the last dim (biased variance).
 * residual, gamma, beta may be null (zeros, ones, zeros).
 */
export function layerNorm(xIn, residualIn = null, gammaIn = null, betaIn = null, eps = LN_EPS) {
  const x = toTensor(xIn);
  const E = x.shape[x.shape.length - 1];
  const rows = x.data.length / E;
  const res = residualIn ? toTensor(residualIn).data : null;
  const g = gammaIn ? toTensor(gammaIn).data : null;
  const be = betaIn ? toTensor(betaIn).data : null;
  const out = new Float64Array(x.data.length);
  const z = new Float64Array(E);
  for (let r = 0; r < rows; r++) {
    let mean = 0;
    for (let j = 0; j < E; j++) { z[j] = x.data[r * E + j] + (res ? res[r * E + j] : 0); mean += z[j]; }
    mean /= E;
    let v = 0;
    for (let j = 0; j < E; j++) v += (z[j] - mean) * (z[j] - mean);
    v /= E;
    const inv = 1 / Math.sqrt(v + eps);
    for (let j = 0; j < E; j++) {
      out[r * E + j] = (z[j] - mean) * inv * (g ? g[j] : 1) + (be ? be[j] : 0);
    }
  }
  return { data: out, shape: x.shape.slice() };
}

/** pcg hash on uint32 (see DropoutUniform in src/attention_lab.h). */
export function pcgHash(x) {
  const s = (Math.imul(x >>> 0, 747796405) + 2891336453) >>> 0;
  const w = Math.imul(((s >>> ((s >>> 28) + 4)) ^ s) >>> 0, 277803737) >>> 0;
  return ((w >>> 22) ^ w) >>> 0;
}

/** u = (pcg(seed ^ pcg(i)) >> 8) / 2^24, a uniform in [0, 1) with 24-bit resolution. */
export function dropoutUniform(seed, i) {
  const h = pcgHash(((seed >>> 0) ^ pcgHash(i >>> 0)) >>> 0);
  return (h >>> 8) / 16777216;
}

/**
 * Inverted dropout: element i is dropped when dropoutUniform(seed, i) < p,
 * kept elements are scaled by 1/(1-p). `p` is compared as float32, since the
 * library stores it as float (LayerConfig::dropout).
 * → { data: Float64Array, dropped: Uint8Array }
 */
export function dropout(dataIn, p, seed) {
  const data = dataIn.data ? dataIn.data : dataIn;
  const pf = Math.fround(p);
  const scale = 1 / (1 - p);
  const out = new Float64Array(data.length);
  const dropped = new Uint8Array(data.length);
  for (let i = 0; i < data.length; i++) {
    if (dropoutUniform(seed, i) < pf) dropped[i] = 1;
    else out[i] = data[i] * scale;
  }
  return { data: out, dropped };
}

/**
 * Self-attention layer (tutorial 1, step 5): y = LayerNorm(x + Dropout(MHA(x, x, x))).
 * cfg: { embedDim, numHeads, dropout = 0.1, eps = 1e-5 }
 * weights: torch-layout MHA weights plus gamma, beta (defaults ones, zeros).
 * opts: { mask, training = false, dropoutSeed, needWeights, averageWeights }
 * → { output, weights, mhaOutput, dropped }
 */
export function selfAttentionLayer(cfg, weights, xIn,
  { mask = null, training = false, dropoutSeed = 0, needWeights = true, averageWeights = false } = {}) {
  const x = toTensor(xIn);
  const p = cfg.dropout ?? 0.1;
  const mha = multiHeadAttention({ embedDim: cfg.embedDim, numHeads: cfg.numHeads }, weights, x, x, x,
    { mask, needWeights, averageWeights });
  let a = mha.output.data;
  let dropped = null;
  if (training && p > 0) {
    const d = dropout(a, p, dropoutSeed);
    a = d.data;
    dropped = d.dropped;
  }
  const y = layerNorm(x, { data: a, shape: x.shape }, weights.gamma ?? null, weights.beta ?? null, cfg.eps ?? LN_EPS);
  return { output: y, weights: mha.weights, mhaOutput: mha.output, dropped };
}

// ---------------------------------------------------------------------------
// Shape trace

/**
 * Expected shape trace (docs/js-api.md "Shape trace"): [{ step, shape }].
 * `batch` null/undefined means unbatched (B dropped from every shape).
 */
export function shapeTraceReference({ batch, lq, lk = lq, embedDim, numHeads, mask = false, layer = false }) {
  const H = numHeads, E = embedDim, D = E / H;
  const b = batch == null ? [] : [batch];
  const steps = [
    ['input', [...b, lq, E]],
    ['linear_qkv', [...b, lq, E]],
    ['split_heads', [...b, H, lq, D]],
    ['scores', [...b, H, lq, lk]],
  ];
  if (mask) steps.push(['mask', [...b, H, lq, lk]]);
  steps.push(
    ['softmax', [...b, H, lq, lk]],
    ['weighted_sum', [...b, H, lq, D]],
    ['merge_heads', [...b, lq, E]],
    ['output_linear', [...b, lq, E]],
  );
  if (layer) {
    steps.push(['dropout', [...b, lq, E]], ['residual', [...b, lq, E]], ['layer_norm', [...b, lq, E]]);
  }
  return steps.map(([step, shape]) => ({ step, shape }));
}

// ---------------------------------------------------------------------------
// Comparison

/**
 * Compares `actual` with `expected` element-wise: ok when
 * |a - e| <= abs + rel·|e| (NaN matches NaN, ±Infinity must match exactly).
 * → { ok, count, worstIndex, worstActual, worstExpected, worstExcess, maxAbsErr }
 */
export function compareClose(actual, expected, { abs = 0, rel = 0 } = {}) {
  const res = { ok: true, count: 0, worstIndex: -1, worstActual: NaN, worstExpected: NaN, worstExcess: 0, maxAbsErr: 0 };
  if (actual.length !== expected.length) {
    res.ok = false;
    res.lengthMismatch = [actual.length, expected.length];
    return res;
  }
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i], e = expected[i];
    let bad = false, excess = 0;
    if (Number.isNaN(e) || Number.isNaN(a)) bad = Number.isNaN(e) !== Number.isNaN(a);
    else if (!Number.isFinite(e) || !Number.isFinite(a)) bad = a !== e;
    else {
      const err = Math.abs(a - e);
      if (err > res.maxAbsErr) res.maxAbsErr = err;
      excess = err - (abs + rel * Math.abs(e));
      bad = excess > 0;
    }
    if (bad) {
      res.ok = false;
      res.count++;
      if (res.worstIndex < 0 || excess > res.worstExcess || !Number.isFinite(excess)) {
        res.worstIndex = i; res.worstActual = a; res.worstExpected = e; res.worstExcess = Number.isFinite(excess) ? excess : Infinity;
      }
    }
  }
  return res;
}

// ---------------------------------------------------------------------------
// Forward trace (forward(…, { trace: 'values' }))

/**
 * Every intermediate of an MHA forward (and, with `layer`, of the layer), in
 * float64, for the trace tests. Same arguments as multiHeadAttention (batched
 * inputs [B, L, ·]); `layer`: { dropout, training, dropoutSeed, gamma, beta, eps }.
 * → { q, k, v [B,L,E], scores, masked, weights [B,H,Lq,Lk], heads { q, k, v } [B,H,L,D],
 *     weighted [B,H,Lq,D], context [B,Lq,E], attention [B,Lq,E], dropout?, residual?, output }
 */
export function forwardTraceReference(cfg, weights, queryIn, keyIn = queryIn, valueIn = keyIn,
  { mask = null, layer = null } = {}) {
  const E = cfg.embedDim, H = cfg.numHeads, D = E / H;
  const kdim = cfg.kdim ?? E, vdim = cfg.vdim ?? E;
  const query = toTensor(queryIn), key = toTensor(keyIn), value = toTensor(valueIn);
  const [B, Lq] = query.shape;
  const Lk = key.shape[1];
  const W = {};
  for (const [n, t] of Object.entries(weights)) if (t != null) W[n] = toTensor(t).data;
  const q = linearTorch(query.data, B * Lq, E, W.wq, W.bq, E);
  const k = linearTorch(key.data, B * Lk, kdim, W.wk, W.bk, E);
  const v = linearTorch(value.data, B * Lk, vdim, W.wv, W.bv, E);
  const split = (X, L) => {
    const out = new Float64Array(B * H * L * D);
    for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let i = 0; i < L; i++) for (let d = 0; d < D; d++) {
      out[((b * H + h) * L + i) * D + d] = X[(b * L + i) * E + h * D + d];
    }
    return out;
  };
  const heads = { q: split(q, Lq), k: split(k, Lk), v: split(v, Lk) };
  const scale = 1 / Math.sqrt(D);
  const scores = new Float64Array(B * H * Lq * Lk);
  for (let n = 0; n < B * H; n++) for (let i = 0; i < Lq; i++) for (let j = 0; j < Lk; j++) {
    let s = 0;
    for (let d = 0; d < D; d++) s += heads.q[(n * Lq + i) * D + d] * heads.k[(n * Lk + j) * D + d];
    scores[(n * Lq + i) * Lk + j] = s * scale;
  }
  const masked = applyMask(Float64Array.from(scores), B, H, Lq, Lk, mask);
  const w = softmaxRows(Float64Array.from(masked), Lk);
  const weighted = new Float64Array(B * H * Lq * D);
  for (let n = 0; n < B * H; n++) for (let i = 0; i < Lq; i++) for (let j = 0; j < Lk; j++) {
    const p = w[(n * Lq + i) * Lk + j];
    for (let d = 0; d < D; d++) weighted[(n * Lq + i) * D + d] += p * heads.v[(n * Lk + j) * D + d];
  }
  const context = new Float64Array(B * Lq * E);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let i = 0; i < Lq; i++) for (let d = 0; d < D; d++) {
    context[(b * Lq + i) * E + h * D + d] = weighted[((b * H + h) * Lq + i) * D + d];
  }
  const attention = linearTorch(context, B * Lq, E, W.wo, W.bo, E);
  const out = { q, k, v, heads, scores, masked, weights: w, weighted, context, attention, output: attention };
  if (layer) {
    const p = layer.dropout ?? 0.1;
    const dropped = layer.training && p > 0 ? dropout(attention, p, layer.dropoutSeed ?? 0).data : attention;
    const residual = new Float64Array(attention.length);
    for (let i = 0; i < residual.length; i++) residual[i] = query.data[i] + dropped[i];
    out.dropout = dropped;
    out.residual = residual;
    out.output = layerNorm({ data: residual, shape: [B, Lq, E] }, null, layer.gamma ?? null, layer.beta ?? null, layer.eps ?? LN_EPS).data;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Attention as today's models use it (ONNX Attention semantics), float64.
//   s = q·kᵀ·scale → softcap c·tanh(s/c) → tensor mask (keep: 0 → fill;
//   block: m ≠ 0 → s + m·fill; additive: s + m) → ALiBi s -= slope_h·|p − j|
//   → masked keys set to fill: causal j > i + off, padding j >= len_b, window
//   j < p_w − left or j > p_w + right (−1 unbounded) → softmax; a row whose
//   max is −∞ is all zeros when fill is −∞, uniform 1/Lk otherwise.
//   off = len_b − Lq for align 'bottom-right', else 0 (+ `offset`).
//   GQA: q [B,H,Lq,D], k/v [B,Hkv,Lk,·]; head h reads kv head ⌊h·Hkv/H⌋.
// No float32 rounding is reproduced here: use it with maskFill −∞ or masks
// whose filled rows are exact.

/** The ALiBi paper's slopes for H heads (its get_slopes). */
export function alibiSlopes(H) {
  const pow2 = (n) => {
    const start = 2 ** (-(2 ** -(Math.log2(n) - 3)));
    return Array.from({ length: n }, (_, i) => start * start ** i);
  };
  const lg = Math.log2(H);
  if (Number.isInteger(lg)) return pow2(H);
  const n = 2 ** Math.floor(lg);
  return [...pow2(n), ...alibiSlopes(2 * n).filter((_, i) => i % 2 === 0).slice(0, H - n)];
}

/**
 * q {data, shape [B,H,Lq,D]}, k/v {data, shape [B,Hkv,Lk,·]};
 * opts { scale, softcap, fill = -1e9, causal: false | 'top-left' | 'bottom-right', causalOffset (top-left),
 *        lengths: number[] | null, window: null | { left, right, align, offset },
 *        slopes: number[] | null, tensor: null | { kind, data, shape (4-d, broadcast) } }
 * → { output {data, shape [B,H,Lq,Dv]}, weights {data, shape [B,H,Lq,Lk]}, scores, capped, masked }
 * (scores: scaled; capped: after softcap; masked: after every mask, before softmax).
 */
export function attentionModern(q, k, v, opts = {}) {
  const [B, H, Lq, D] = q.shape;
  const [, Hkv, Lk] = k.shape;
  const Dv = v.shape[3];
  const scale = opts.scale ?? 1 / Math.sqrt(D);
  const fill = opts.fill ?? MASK_FILL;
  const out = new Float64Array(B * H * Lq * Dv);
  const w = new Float64Array(B * H * Lq * Lk);
  const scores = new Float64Array(B * H * Lq * Lk);
  const capped = new Float64Array(B * H * Lq * Lk);
  const masked = new Float64Array(B * H * Lq * Lk);
  const t = opts.tensor;
  const tval = (b, h, i, j) => {
    const s = t.shape;
    const c = [b, h, i, j];
    let flat = 0;
    for (let d = 0; d < 4; d++) flat = flat * s[d] + (s[d] === 1 ? 0 : c[d]);
    return Number(t.data[flat]);
  };
  for (let b = 0; b < B; b++) {
    const len = opts.lengths ? opts.lengths[b] : Lk;
    const offC = opts.causal === 'bottom-right' ? len - Lq : (opts.causalOffset ?? 0);
    const offW = opts.window && opts.window.align === 'bottom-right' ? len - Lq : (opts.window?.offset ?? 0);
    for (let h = 0; h < H; h++) {
      const g = Math.floor((h * Hkv) / H);
      for (let i = 0; i < Lq; i++) {
        const row = new Float64Array(Lk);
        const base = ((b * H + h) * Lq + i) * Lk;
        for (let j = 0; j < Lk; j++) {
          let s = 0;
          for (let p = 0; p < D; p++) {
            s += q.data[((b * H + h) * Lq + i) * D + p] * k.data[((b * Hkv + g) * Lk + j) * D + p];
          }
          s *= scale;
          scores[base + j] = s;
          if (opts.softcap) s = opts.softcap * Math.tanh(s / opts.softcap);
          capped[base + j] = s;
          if (t) {
            const m = tval(b, h, i, j);
            if (t.kind === 'keep' && m === 0) s = fill;
            else if (t.kind === 'block' && m !== 0) s += m * fill;
            else if (t.kind === 'additive') s += m;
          }
          if (opts.slopes) s -= opts.slopes[h] * Math.abs(i + offC - j);
          let off = j >= len;
          if (opts.causal && j > i + offC) off = true;
          if (opts.window) {
            const p = i + offW;
            if (opts.window.left >= 0 && j < p - opts.window.left) off = true;
            if (opts.window.right >= 0 && j > p + opts.window.right) off = true;
          }
          row[j] = off ? fill : s;
          masked[base + j] = row[j];
        }
        let mx = -Infinity;
        for (let j = 0; j < Lk; j++) mx = Math.max(mx, row[j]);
        if (mx === -Infinity) {
          const u = fill === -Infinity ? 0 : 1 / Lk;
          for (let j = 0; j < Lk; j++) w[base + j] = u;
        } else {
          let sum = 0;
          for (let j = 0; j < Lk; j++) sum += (w[base + j] = Math.exp(row[j] - mx));
          for (let j = 0; j < Lk; j++) w[base + j] /= sum;
        }
        const o = ((b * H + h) * Lq + i) * Dv;
        for (let j = 0; j < Lk; j++) {
          const pj = w[base + j];
          if (pj === 0) continue;
          for (let c = 0; c < Dv; c++) out[o + c] += pj * v.data[((b * Hkv + g) * Lk + j) * Dv + c];
        }
      }
    }
  }
  const ws = [B, H, Lq, Lk];
  return {
    output: { data: out, shape: [B, H, Lq, Dv] }, weights: { data: w, shape: ws },
    scores: { data: scores, shape: ws }, capped: { data: capped, shape: ws }, masked: { data: masked, shape: ws },
  };
}

/** cos/sin tables [maxPosition, R/2] of p·base^(−2i/R). */
export function rotaryCache(maxPosition, R, base = 10000) {
  const half = R / 2;
  const cos = new Float64Array(maxPosition * half);
  const sin = new Float64Array(maxPosition * half);
  for (let p = 0; p < maxPosition; p++) {
    for (let i = 0; i < half; i++) {
      const th = p / base ** ((2 * i) / R);
      cos[p * half + i] = Math.cos(th);
      sin[p * half + i] = Math.sin(th);
    }
  }
  return { cos: { data: cos, shape: [maxPosition, half] }, sin: { data: sin, shape: [maxPosition, half] } };
}

/**
 * ONNX RotaryEmbedding: x [B,H,L,D] (or [B,L,H·D] with numHeads);
 * opts { positionIds (flat [B·L]) | null, cos, sin (flat tables: [maxPos, R/2] with
 * positionIds, [B, L, R/2] without) | null → computed from base, rotaryDim, interleaved, numHeads }.
 */
export function rotaryEmbedding(x, opts = {}) {
  const seqMajor = x.shape.length === 3;
  const [B] = x.shape;
  const H = seqMajor ? opts.numHeads : x.shape[1];
  const L = seqMajor ? x.shape[1] : x.shape[2];
  const D = seqMajor ? x.shape[2] / H : x.shape[3];
  const R = opts.rotaryDim || D;
  const half = R / 2;
  const base = opts.base ?? 10000;
  const y = Float64Array.from(x.data, Number);
  for (let b = 0; b < B; b++) {
    for (let l = 0; l < L; l++) {
      const tok = b * L + l;
      const c = new Float64Array(half);
      const s = new Float64Array(half);
      for (let i = 0; i < half; i++) {
        if (opts.cos) {
          const row = opts.positionIds ? Number(opts.positionIds[tok]) : tok;
          c[i] = opts.cos[row * half + i];
          s[i] = opts.sin[row * half + i];
        } else {
          const p = opts.positionIds ? Number(opts.positionIds[tok]) : l;
          const th = p / base ** ((2 * i) / R);
          c[i] = Math.cos(th);
          s[i] = Math.sin(th);
        }
      }
      for (let h = 0; h < H; h++) {
        const at = seqMajor ? (tok * H + h) * D : ((b * H + h) * L + l) * D;
        for (let i = 0; i < half; i++) {
          const ia = at + (opts.interleaved ? 2 * i : i);
          const ib = at + (opts.interleaved ? 2 * i + 1 : i + half);
          const x1 = Number(x.data[ia]);
          const x2 = Number(x.data[ib]);
          y[ia] = c[i] * x1 - s[i] * x2;
          y[ib] = s[i] * x1 + c[i] * x2;
        }
      }
    }
  }
  return { data: y, shape: [...x.shape] };
}

/**
 * RMSNorm over the last dim (Zhang & Sennrich 2019), in float64:
 * y = x / sqrt(mean(x²) + eps) · weight; x { data, shape }, weight flat [E] or null.
 */
export function rmsNorm(x, weight = null, eps = 1e-5) {
  const E = x.shape[x.shape.length - 1];
  const rows = x.data.length / E;
  const y = new Float64Array(x.data.length);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let i = 0; i < E; i++) ss += Number(x.data[r * E + i]) ** 2;
    const inv = 1 / Math.sqrt(ss / E + eps);
    for (let i = 0; i < E; i++) y[r * E + i] = Number(x.data[r * E + i]) * inv * (weight ? Number(weight[i]) : 1);
  }
  return { data: y, shape: [...x.shape] };
}

/**
 * A linear layer in float64: x [..., in] → [..., out], x·Wᵀ + b (layout
 * 'torch', weight [out, in]) or x·W + b ('keras', weight [in, out]).
 */
export function linear(x, weight, bias = null, layout = 'torch') {
  const inDim = x.shape[x.shape.length - 1];
  const outDim = layout === 'torch' ? weight.shape[0] : weight.shape[1];
  const rows = x.data.length / inDim;
  const y = new Float64Array(rows * outDim);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outDim; o++) {
      let s = bias ? Number(bias[o]) : 0;
      for (let i = 0; i < inDim; i++) {
        const w = layout === 'torch' ? weight.data[o * inDim + i] : weight.data[i * outDim + o];
        s += Number(x.data[r * inDim + i]) * Number(w);
      }
      y[r * outDim + o] = s;
    }
  }
  return { data: y, shape: [...x.shape.slice(0, -1), outDim] };
}

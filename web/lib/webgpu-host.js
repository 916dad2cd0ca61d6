// Host-side (CPU) helpers of the webgpu backend: the torch ↔ keras layout
// conversion, float32 constants as the C++ computes them, the mask strides,
// and the split frequencies the positional-encoding kernel reads. The rules
// with one source in C++ (the seeded default weights, the dropout hash) are
// not copied here: the backend asks the wasm core (webgpu-modules.js), and
// WGSL keeps the GPU copy of the hash (include/dropout_hash.wgsl).
// Shape legend: B batch, L (Lq/Lk) sequence, E embed, H heads, D head dim.

export { WEIGHT_KEYS } from './validate.js';

/** Input width of a weight: kdim for wk, vdim for wv, E otherwise. */
export function inDim(cfg, key) {
  return key === 'wk' ? cfg.kdim : key === 'wv' ? cfg.vdim : cfg.embedDim;
}

/** Output width of a weight or bias: Ekv = numKvHeads·D for K and V (GQA/MQA), E otherwise. */
export function outDim(cfg, key) {
  const kv = key === 'wk' || key === 'bk' || key === 'wv' || key === 'bv';
  return kv ? (cfg.numKvHeads ?? cfg.numHeads) * (cfg.embedDim / cfg.numHeads) : cfg.embedDim;
}

/** torch [out, in] → keras [in, out] (a copy either way; out = E or Ekv). */
export function toKeras(data, E, inD, layout) {
  if (layout === 'keras') return Float32Array.from(data);
  const out = new Float32Array(inD * E);
  for (let o = 0; o < E; o++) {
    for (let i = 0; i < inD; i++) out[i * E + o] = data[o * inD + i];
  }
  return out;
}

/** keras [in, out] → the requested layout (a copy either way). */
export function fromKeras(data, E, inD, layout) {
  if (layout === 'keras') return data.slice();
  const out = new Float32Array(inD * E);
  for (let o = 0; o < E; o++) {
    for (let i = 0; i < inD; i++) out[o * inD + i] = data[i * E + o];
  }
  return out;
}

/** 1/(1 - p) in float32, as the C++ computes it. */
export function keepScale(p) {
  return Math.fround(1 / Math.fround(1 - Math.fround(p)));
}

/** The default scale 1/√D in float32, as the C++ computes it. */
export function defaultScale(d) {
  return Math.fround(1 / Math.fround(Math.sqrt(d)));
}

/**
 * Element strides of a [mB, mH, mLq, mLk] mask broadcast to [B, H, Lq, Lk]:
 * 0 on broadcast dims (as internal::ResolveMask).
 */
export function maskStrides(shape4) {
  const strides = [0, 0, 0, 0];
  let stride = 1;
  for (let d = 3; d >= 0; d--) {
    strides[d] = shape4[d] === 1 ? 0 : stride;
    stride *= shape4[d];
  }
  return strides;
}

// x rounded to 12 significant bits (x may be negative: a residual).
function top12(x) {
  if (x === 0 || !Number.isFinite(x)) return 0;
  const scale = 2 ** (11 - Math.floor(Math.log2(Math.abs(x))));
  return Math.round(x * scale) / scale;
}

/**
 * Frequencies of the positional encoding in turns, w_i / 2π with
 * w_i = base^(-2i/E) computed in double as the C++ does, each split into
 * float32 parts of 12, 12 and 24 significant bits: [pairs · 4] (f1, f2, f3, 0).
 */
export function peFrequencies(dModel, base) {
  const pairs = Math.ceil(dModel / 2);
  const out = new Float32Array(pairs * 4);
  const logBase = Math.log(base);
  for (let i = 0; i < pairs; i++) {
    const turns = Math.exp((-2 * i * logBase) / dModel) / (2 * Math.PI);
    const f1 = top12(turns);
    const f2 = top12(turns - f1);
    out[i * 4] = f1;
    out[i * 4 + 1] = f2;
    out[i * 4 + 2] = turns - f1 - f2;
  }
  return out;
}

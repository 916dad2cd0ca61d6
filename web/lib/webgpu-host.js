// Host-side (CPU) helpers of the webgpu backend: what has to match the C++
// core exactly but is not worth a kernel — the seeded default weights, the
// torch ↔ keras layout conversion, the dropout hash, the mask strides, and the
// split frequencies the positional-encoding kernel reads.
// Shape legend: B batch, L (Lq/Lk) sequence, E embed, H heads, D head dim.

export const WEIGHT_KEYS = ['wq', 'bq', 'wk', 'bk', 'wv', 'bv', 'wo', 'bo'];

// ---- 64-bit arithmetic on [hi, lo] uint32 pairs (for splitmix64) ----------

// Full 64-bit product of two uint32 values, as [hi, lo].
function mul32Full(a, b) {
  const a0 = a & 0xffff;
  const a1 = a >>> 16;
  const b0 = b & 0xffff;
  const b1 = b >>> 16;
  const mid = a0 * b1 + a1 * b0; // < 2^33, exact in a double
  const low = a0 * b0 + (mid % 65536) * 65536; // < 2^33
  const lo = low >>> 0;
  const hi = (a1 * b1 + Math.floor(mid / 65536) + Math.floor(low / 4294967296)) >>> 0;
  return [hi, lo];
}

function mul64(ahi, alo, bhi, blo) {
  const [h, l] = mul32Full(alo, blo);
  return [(h + Math.imul(ahi, blo) + Math.imul(alo, bhi)) >>> 0, l];
}

function xorShiftRight(hi, lo, s) {
  // z ^ (z >> s), 0 < s < 32
  return [(hi ^ (hi >>> s)) >>> 0, (lo ^ ((lo >>> s) | (hi << (32 - s)))) >>> 0];
}

/**
 * The splitmix64 stream of MultiHeadAttention::Create, started from
 * state = (seed << 32) ^ 0x5EEDA77E17. next() returns the double in [0, 1)
 * that the C++ forms from the top 53 bits.
 */
export function splitMix(seed) {
  let hi = ((seed >>> 0) ^ 0x5e) >>> 0;
  let lo = 0xeda77e17;
  return {
    next() {
      // state += 0x9E3779B97F4A7C15
      const lo2 = lo + 0x7f4a7c15;
      hi = (hi + 0x9e3779b9 + (lo2 > 0xffffffff ? 1 : 0)) >>> 0;
      lo = lo2 >>> 0;
      let z = xorShiftRight(hi, lo, 30);
      z = mul64(z[0], z[1], 0xbf58476d, 0x1ce4e5b9);
      z = xorShiftRight(z[0], z[1], 27);
      z = mul64(z[0], z[1], 0x94d049bb, 0x133111eb);
      z = xorShiftRight(z[0], z[1], 31);
      // (z >> 11) · 2^-53
      return (z[0] * 2097152 + (z[1] >>> 11)) / 9007199254740992;
    },
  };
}

/** Input width of a weight: kdim for wk, vdim for wv, E otherwise. */
export function inDim(cfg, key) {
  return key === 'wk' ? cfg.kdim : key === 'wv' ? cfg.vdim : cfg.embedDim;
}

/**
 * The default weights of MultiHeadAttention::Create, bit for bit: Xavier
 * uniform U(-a, a), a = sqrt(6 / (in + E)), drawn in the order wq, wk, wv, wo,
 * each in keras layout [in, E]; biases zero (absent when bias is false).
 */
export function defaultWeights(cfg) {
  const E = cfg.embedDim;
  const rng = splitMix(cfg.seed);
  /** @type {Record<string, Float32Array>} */
  const w = {};
  for (const key of WEIGHT_KEYS) {
    if (key[0] === 'b') {
      if (cfg.bias) w[key] = new Float32Array(E);
      continue;
    }
    const n = inDim(cfg, key) * E;
    const a = Math.sqrt(6 / (inDim(cfg, key) + E));
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = (2 * rng.next() - 1) * a;
    w[key] = data;
  }
  return w;
}

/** torch [out = E, in] → keras [in, out = E] (a copy either way). */
export function toKeras(data, E, inD, layout) {
  if (layout === 'keras') return Float32Array.from(data);
  const out = new Float32Array(inD * E);
  for (let o = 0; o < E; o++) {
    for (let i = 0; i < inD; i++) out[i * E + o] = data[o * inD + i];
  }
  return out;
}

/** keras [in, out = E] → the requested layout (a copy either way). */
export function fromKeras(data, E, inD, layout) {
  if (layout === 'keras') return data.slice();
  const out = new Float32Array(inD * E);
  for (let o = 0; o < E; o++) {
    for (let i = 0; i < inD; i++) out[o * inD + i] = data[i * E + o];
  }
  return out;
}

function pcg(x) {
  const state = (Math.imul(x >>> 0, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

/** DropoutUniform(seed, i) of src/dropout.cpp (and dropout.wgsl). */
export function dropoutUniform(seed, i) {
  const h = pcg((seed >>> 0) ^ pcg(i >>> 0));
  return (h >>> 8) / 16777216;
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

// Shared helpers of the Jest tests (not a test file: jest matches *.test.js).
// The oracle is tests/reference/reference.mjs, a float64 reference that does
// not depend on the code under test.
import * as ref from '../reference/reference.mjs';

export { ref };

/** Both wasm backends are tested everywhere. */
export const BACKENDS = ['wasm', 'wasm-scalar'];

/**
 * Tolerances per op, |got - expected| <= abs + rel·|expected|:
 * - pe: angles are computed in double, then one float32 rounding of a value
 *   in [-1, 1] (≤ 6e-8).
 * - attention (sdpa, selfAttention, MHA outputs and weights, E ≤ 256, inputs
 *   O(1)): float32 dot products of length ≤ 256 and exp.
 * - layer: the MHA error is divided by the row's standard deviation in
 *   LayerNorm, so allow a little more.
 * - backends: wasm vs wasm-scalar, both float32 with a different summation
 *   order; a few ulps of O(1) values.
 */
export const TOL = {
  pe: { abs: 1e-6, rel: 0 },
  attention: { abs: 2e-5, rel: 1e-4 },
  layerNorm: { abs: 1e-5, rel: 1e-4 },
  layer: { abs: 5e-5, rel: 1e-4 },
  backends: { abs: 1e-5, rel: 1e-5 },
};

function unravel(index, shape) {
  const idx = [];
  for (let d = shape.length - 1; d >= 0; d--) {
    idx.unshift(index % shape[d]);
    index = Math.floor(index / shape[d]);
  }
  return idx;
}

/**
 * Checks a library tensor against an expected {data, shape}: a Float32Array,
 * the same shape, and every element within `tol`. Throws an Error naming the
 * worst element (index, observed, expected) otherwise.
 */
export function expectTensorClose(actual, expected, tol, label = 'tensor') {
  if (!actual || typeof actual !== 'object' || !('data' in actual)) {
    throw new Error(`${label}: expected a tensor {data, shape}, got ${actual === null ? 'null' : typeof actual}`);
  }
  if (!(actual.data instanceof Float32Array)) {
    throw new Error(`${label}: data should be a Float32Array, got ${Object.prototype.toString.call(actual.data)}`);
  }
  const shape = Array.from(actual.shape ?? []);
  if (JSON.stringify(shape) !== JSON.stringify(Array.from(expected.shape))) {
    throw new Error(`${label}: shape [${shape}] but expected [${expected.shape}]`);
  }
  const c = ref.compareClose(actual.data, expected.data, tol);
  if (!c.ok) {
    if (c.lengthMismatch) {
      throw new Error(`${label}: data length ${c.lengthMismatch[0]} but expected ${c.lengthMismatch[1]}`);
    }
    throw new Error(`${label}: ${c.count} of ${expected.data.length} elements out of tolerance `
      + `(abs ${tol.abs}, rel ${tol.rel}); worst at [${unravel(c.worstIndex, expected.shape)}]: `
      + `observed ${c.worstActual}, expected ${c.worstExpected}; max abs err ${c.maxAbsErr.toExponential(3)}`);
  }
}

/** Two library tensors agree (same shape, within tol). */
export function expectTensorsAgree(a, b, tol, label = 'tensors') {
  expectTensorClose(a, { data: Float64Array.from(b.data), shape: Array.from(b.shape) }, tol, label);
}

/** Exact equality of two library tensors (shape and every bit of data). */
export function expectTensorsEqual(a, b, label = 'tensors') {
  expectTensorClose(a, { data: Float64Array.from(b.data), shape: Array.from(b.shape) }, { abs: 0, rel: 0 }, label);
}

/** Random float32 tensor from a seeded generator. */
export function rand(rng, shape, opts) {
  return ref.randomTensor(rng, shape, opts);
}

/** A 0/1 mask tensor {data: Float32Array, shape}; `fix(data)` may edit it. */
export function bits(rng, shape, pOne, fix) {
  const n = ref.numel(shape);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = rng() < pOne ? 1 : 0;
  if (fix) fix(data);
  return { data, shape: shape.slice() };
}

/** Sets key `j` (default 0) to 0 in every row of a block/additive mask of shape [..., Lk]. */
export function unblockKey(data, Lk, j = 0) {
  for (let r = 0; r < data.length / Lk; r++) data[r * Lk + j] = 0;
  return data;
}

/** Turns golden-file tensors {shape, data:number[]} into {data: Float32Array, shape}. */
export function goldenTensor(t) {
  return { data: Float32Array.from(t.data), shape: t.shape.slice() };
}

/** Torch-layout weight dict {wq, ...} → {data: Float32Array, shape} tensors (keeps absent ones absent). */
export function f32Weights(w) {
  return ref.weightsToF32(w);
}

/** Weights in keras layout (transposed matrices) as float32 tensors. */
export function kerasWeights(w) {
  return ref.weightsToF32(ref.torchToKeras(w));
}

/** Human-readable label of a shape list. */
export function shp(...shapes) {
  return shapes.map((s) => `[${s}]`).join(' ');
}

/** max |a − b| / max(1, |b|) of a flat result against nested expected arrays (the model goldens). */
export function maxRel(actual, expected) {
  const flat = expected.flat(Infinity);
  expect(actual.length).toBe(flat.length);
  let m = 0;
  for (let i = 0; i < flat.length; i++) m = Math.max(m, Math.abs(actual[i] - flat[i]) / Math.max(1, Math.abs(flat[i])));
  return m;
}

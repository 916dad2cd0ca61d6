// Tensors in and out: plain { data: Float32Array, shape: number[] }.
import { describe, typeError, rangeError } from './errors.js';

/** Largest tensor accepted: 2^28 float32 elements (1 GiB). */
export const MAX_ELEMENTS = 2 ** 28;

export function shapeString(shape) {
  return `[${shape.join(',')}]`;
}

export function product(shape) {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

function checkShape(where, name, shape) {
  if (!Array.isArray(shape)) {
    throw typeError(where, `${name}.shape must be an array of positive integers, got ${describe(shape)}`);
  }
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i];
    if (typeof d !== 'number') {
      throw typeError(where, `${name}.shape[${i}] must be a positive integer, got ${describe(d)}`);
    }
    if (!Number.isInteger(d) || d < 1) {
      throw rangeError(where, `${name}.shape[${i}] must be a positive integer, got ${describe(d)} (shape ${shapeString(shape)})`);
    }
  }
  const n = product(shape);
  if (n > MAX_ELEMENTS) {
    throw rangeError(where, `${name} of shape ${shapeString(shape)} has ${n} elements; at most ${MAX_ELEMENTS} (1 GiB of float32) are allowed`);
  }
  return shape.slice();
}

function inferNestedShape(where, name, value) {
  const shape = [];
  let level = value;
  while (Array.isArray(level)) {
    if (level.length === 0) throw rangeError(where, `${name} has an empty dimension; every dimension must be >= 1`);
    shape.push(level.length);
    level = level[0];
  }
  return shape;
}

function flattenNested(where, name, value, shape) {
  const out = new Float32Array(product(shape));
  let k = 0;
  const walk = (v, depth, path) => {
    if (depth === shape.length) {
      if (typeof v !== 'number') {
        throw typeError(where, `${name}${path} must be a number, got ${describe(v)}`);
      }
      out[k++] = v;
      return;
    }
    if (!Array.isArray(v) || v.length !== shape[depth]) {
      throw rangeError(where, `${name} is ragged: ${name}${path} should be an array of length ${shape[depth]}, got ${describe(v)}`);
    }
    for (let i = 0; i < v.length; i++) walk(v[i], depth + 1, `${path}[${i}]`);
  };
  walk(value, 0, '');
  return out;
}

function toFloat32(where, name, data) {
  if (data instanceof Float32Array) return data;
  if (ArrayBuffer.isView(data) && !(data instanceof DataView)) {
    if (typeof data[0] === 'bigint') {
      throw typeError(where, `${name}.data must hold numbers, got a ${data.constructor.name}`);
    }
    return Float32Array.from(/** @type {ArrayLike<number>} */ (/** @type {unknown} */ (data)));
  }
  if (Array.isArray(data)) {
    const out = new Float32Array(data.length);
    for (let i = 0; i < data.length; i++) {
      const v = data[i];
      if (typeof v !== 'number') {
        throw typeError(where, `${name}.data[${i}] must be a number, got ${describe(v)}`);
      }
      out[i] = v;
    }
    return out;
  }
  throw typeError(where, `${name}.data must be a Float32Array (or another numeric typed array or a number array), got ${describe(data)}`);
}

/**
 * Normalises a tensor argument to { data: Float32Array, shape }.
 * Accepts { data, shape } (any numeric typed array or number array; converted
 * to float32) or a nested number array whose shape is inferred.
 * @param {string} where
 * @param {string} name
 * @param {any} value
 * @param {{ ranks?: number[] }} [options]
 * @returns {{ data: Float32Array, shape: number[] }}
 */
export function toTensor(where, name, value, { ranks } = {}) {
  let tensor;
  if (value === undefined || value === null) {
    throw typeError(where, `${name} is missing: expected a tensor { data: Float32Array, shape } or a nested number array`);
  }
  if (Array.isArray(value)) {
    const shape = checkShape(where, name, inferNestedShape(where, name, value));
    if (shape.length === 0) throw typeError(where, `${name} must be a tensor, got a number`);
    tensor = { data: flattenNested(where, name, value, shape), shape };
  } else if (typeof value === 'object' && !ArrayBuffer.isView(value)) {
    if (!('data' in value)) throw typeError(where, `${name}.data is missing: a tensor is { data: Float32Array, shape: number[] }`);
    if (!('shape' in value)) throw typeError(where, `${name}.shape is missing: a tensor is { data: Float32Array, shape: number[] }`);
    const shape = checkShape(where, name, value.shape);
    const data = toFloat32(where, name, value.data);
    const n = product(shape);
    if (data.length !== n) {
      throw rangeError(where, `${name}.data has ${data.length} elements but ${name}.shape ${shapeString(shape)} needs ${n}`);
    }
    tensor = { data, shape };
  } else {
    throw typeError(where, `${name} must be a tensor { data: Float32Array, shape } or a nested number array, got ${describe(value)}`);
  }
  if (ranks && !ranks.includes(tensor.shape.length)) {
    throw rangeError(where, `${name} must have rank ${ranks.join(' or ')}, got shape ${shapeString(tensor.shape)} (rank ${tensor.shape.length})`);
  }
  return tensor;
}

/** A tensor as returned to users: the data is a fresh Float32Array. */
export function makeTensor(data, shape) {
  return { data, shape: shape.slice() };
}

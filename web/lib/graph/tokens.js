// Token tensors in: { data: Int32Array | number[], shape: [B, L] }, a nested
// array [[…], …] ([B, L]) or a flat number array (one sequence, B = 1).
import { describe, typeError, rangeError } from '../errors.js';
import { toTensor, shapeString } from '../tensor.js';

/** Normalises `value` to { data: Int32Array, shape: [B, L] } of integers. */
export function toTokens(where, name, value) {
  let data;
  let shape;
  if (Array.isArray(value) && value.length > 0 && !Array.isArray(value[0])) {
    data = value;
    shape = [1, value.length];
  } else if (value && typeof value === 'object' && !Array.isArray(value) && ArrayBuffer.isView(value.data)) {
    data = value.data;
    shape = value.shape;
    if (!Array.isArray(shape) || shape.length !== 2 || shape.some((d) => !Number.isInteger(d) || d < 1)) {
      throw rangeError(where, `${name}.shape must be [B, L] with positive integers, got ${describe(shape)}`);
    }
    if (data.length !== shape[0] * shape[1]) {
      throw rangeError(where, `${name}.data has ${data.length} elements but ${name}.shape ${shapeString(shape)} needs ${shape[0] * shape[1]}`);
    }
  } else {
    const t = toTensor(where, name, value);
    if (t.shape.length !== 2) throw rangeError(where, `${name} must have shape [B, L], got ${shapeString(t.shape)}`);
    data = t.data;
    shape = t.shape;
  }
  const out = data instanceof Int32Array ? data : new Int32Array(data.length);
  if (out !== data) {
    for (let i = 0; i < data.length; i++) {
      const v = data[i];
      if (typeof v !== 'number') throw typeError(where, `${name}[${i}] must be an integer token id, got ${describe(v)}`);
      if (!Number.isInteger(v)) throw rangeError(where, `${name}[${i}] must be an integer token id, got ${describe(v)}`);
      out[i] = v;
    }
  }
  return { data: out, shape: shape.slice() };
}

/** Optional float loss mask [B, L] (nested, tensor or flat); null when absent. */
export function toLossMask(where, value, shape) {
  if (value === undefined || value === null) return null;
  let data;
  if (ArrayBuffer.isView(value) && !(value instanceof DataView) && typeof value[0] !== 'bigint') {
    data = value instanceof Float32Array ? value : Float32Array.from(/** @type {any} */ (value));
  } else if (value && typeof value === 'object' && !Array.isArray(value) && 'data' in value) {
    data = toTensor(where, 'lossMask', value).data;
  } else if (Array.isArray(value) && value.length > 0 && !Array.isArray(value[0])) {
    data = Float32Array.from(value, (v) => (typeof v === 'boolean' ? Number(v) : v));
  } else {
    data = toTensor(where, 'lossMask', value).data;
  }
  if (data.length !== shape[0] * shape[1]) {
    throw rangeError(where, `lossMask has ${data.length} elements but the tokens ${shapeString(shape)} need ${shape[0] * shape[1]}`);
  }
  return data;
}

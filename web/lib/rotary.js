// The arguments of rotaryEmbedding (ops.js), validated here: kinds, shapes
// and layouts. Value rules (rotaryDim even and <= D, positions inside the
// table, base > 1) are checked once, by the C++ core, and reach JS as
// RangeErrors.
import { describe, typeError, rangeError, checkInt, checkBool } from './errors.js';
import { toTensor, shapeString } from './tensor.js';

// positionIds [B, L] (nested arrays, a flat array of B·L, a typed array or a tensor).
/** @param {string} where @param {any} value @param {number} B @param {number} L */
function readPositionIds(where, value, B, L) {
  let flat;
  let shape;
  if (ArrayBuffer.isView(value) || (Array.isArray(value) && !Array.isArray(value[0]))) {
    flat = /** @type {ArrayLike<number>} */ (value);
    shape = [flat.length];
  } else if (value && typeof value === 'object' && !Array.isArray(value) && 'data' in value) {
    flat = value.data;
    shape = value.shape;
  } else if (Array.isArray(value)) {
    shape = [value.length, Array.isArray(value[0]) ? value[0].length : 0];
    flat = value.flat();
    if (flat.length !== shape[0] * shape[1]) throw rangeError(where, 'positionIds is ragged: every row must have L entries');
  } else {
    throw typeError(where, `positionIds must be integers of shape [B, L] = [${B}, ${L}] (nested arrays, a flat array or a typed array), got ${describe(value)}`);
  }
  if (flat.length !== B * L) {
    throw rangeError(where, `positionIds must have shape [B, L] = [${B}, ${L}] (${B * L} entries), got ${shapeString(shape ?? [flat.length])}`);
  }
  const out = new Int32Array(B * L);
  for (let i = 0; i < out.length; i++) {
    const v = Number(flat[i]);
    if (typeof flat[i] !== 'number' && typeof flat[i] !== 'bigint') {
      throw typeError(where, `positionIds[${i}] must be an integer, got ${describe(flat[i])}`);
    }
    if (!Number.isInteger(v) || v < 0 || v > 2 ** 31 - 1) {
      throw rangeError(where, `positionIds[${i}] must be an integer >= 0, got ${describe(flat[i])}`);
    }
    out[i] = v;
  }
  return out;
}


/**
 * x [B, H, L, D], or [B, L, H·D] with numHeads, and the checked options →
 * the op's argument bag and x's shape (the output's).
 * options: { positionIds [B, L], cos, sin ([maxPosition, R/2] with positionIds,
 * [B, L, R/2] without), base = 10000, rotaryDim = D, interleaved = false, numHeads }.
 * @returns {{ args: import('./ops.js').RotaryArgs, shape: number[], tensors: [string, { data: Float32Array, shape: number[] }][] }}
 */
export function readRotaryArgs(where, x, opts) {
  const t = toTensor(where, 'x', x, { ranks: [3, 4] });
  let B, H, L, D;
  const seqMajor = t.shape.length === 3;
  if (seqMajor) {
    if (opts.numHeads === undefined) {
      throw typeError(where, `numHeads is missing: x of shape ${shapeString(t.shape)} is [B, L, H·D], so numHeads (H) must be given`);
    }
    H = checkInt(where, 'numHeads', opts.numHeads, 1);
    [B, L] = t.shape;
    if (t.shape[2] % H !== 0) {
      throw rangeError(where, `x's last dim (${t.shape[2]}) must be numHeads·D: it is not divisible by numHeads (${H})`);
    }
    D = t.shape[2] / H;
  } else {
    if (opts.numHeads !== undefined && checkInt(where, 'numHeads', opts.numHeads, 1) !== t.shape[1]) {
      throw rangeError(where, `numHeads (${opts.numHeads}) must equal x's head dim H = ${t.shape[1]} for x [B, H, L, D] of shape ${shapeString(t.shape)}`);
    }
    [B, H, L, D] = t.shape;
  }
  let rotaryDim = 0;
  if (opts.rotaryDim !== undefined) {
    if (typeof opts.rotaryDim !== 'number') throw typeError(where, `rotaryDim must be an even integer in [2, D = ${D}], got ${describe(opts.rotaryDim)}`);
    rotaryDim = opts.rotaryDim;
    if (!Number.isInteger(rotaryDim) || rotaryDim === 0) {
      throw rangeError(where, `rotaryDim must be an even integer in [2, D = ${D}], got ${describe(opts.rotaryDim)}`);
    }
  }
  const interleaved = checkBool(where, 'interleaved', opts.interleaved ?? false);
  const base = opts.base ?? 10000;
  if (typeof base !== 'number') throw typeError(where, `base must be a number > 1, got ${describe(base)}`);
  const positionIds = opts.positionIds === undefined ? null : readPositionIds(where, opts.positionIds, B, L);
  if ((opts.cos === undefined) !== (opts.sin === undefined)) {
    throw typeError(where, 'cos and sin must be given together (or neither, to compute them from base)');
  }
  let cos = null;
  let sin = null;
  let maxPosition = 0;
  /** @type {[string, { data: Float32Array, shape: number[] }][]} the tensor arguments (checkFinite) */
  const tensors = [['x', t]];
  if (opts.cos !== undefined) {
    const R = rotaryDim || D;
    const tc = toTensor(where, 'cos', opts.cos);
    const ts = toTensor(where, 'sin', opts.sin);
    const want = positionIds ? `[maxPosition, rotaryDim/2] = [·, ${R / 2}]` : `[B, L, rotaryDim/2] = [${B}, ${L}, ${R / 2}]`;
    for (const [name, tt] of /** @type {[string, { shape: number[] }][]} */ ([['cos', tc], ['sin', ts]])) {
      const s = tt.shape;
      const ok = positionIds
        ? s.length === 2 && s[1] === R / 2
        : s.length === 3 && s[0] === B && s[1] === L && s[2] === R / 2;
      if (!ok) throw rangeError(where, `${name} must have shape ${want}${positionIds ? ' (read at positionIds)' : ' (no positionIds given)'}, got ${shapeString(s)}`);
    }
    if (tc.shape[0] !== ts.shape[0]) throw rangeError(where, `cos and sin must have the same shape, got ${shapeString(tc.shape)} and ${shapeString(ts.shape)}`);
    cos = tc.data;
    sin = ts.data;
    maxPosition = positionIds ? tc.shape[0] : 0;
    tensors.push(['cos', tc], ['sin', ts]);
  }
  return {
    tensors,
    args: { batch: B, heads: H, seqLen: L, headDim: D, seqMajor, rotaryDim, interleaved, x: t.data, positionIds, cos, sin, maxPosition, base },
    shape: t.shape,
  };
}

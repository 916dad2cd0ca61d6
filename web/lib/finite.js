// checkFinite: an opt-in scan of every tensor argument for NaN and ±Infinity
// (init({ checkFinite: true }) for every call of a lab, or { checkFinite }
// in a call's options). Without it, non-finite values propagate through the
// arithmetic as in PyTorch (README "NaN and Inf").
import { describe, rangeError, checkBool } from './errors.js';
import { shapeString } from './tensor.js';
import { MASK_KINDS } from './mask.js';

/** The multi-index of flat `index` in `shape`, e.g. [0, 3, 7]. */
function unravel(index, shape) {
  const idx = new Array(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    idx[d] = index % shape[d];
    index = Math.floor(index / shape[d]);
  }
  return idx;
}

/**
 * Throws a RangeError naming the first element of `data` that is NaN or
 * ±Infinity: the argument, its flat index and its index in `shape`.
 * @param {string} where
 * @param {string} name the argument, e.g. 'query' or 'mask (additive)'
 * @param {ArrayLike<number>} data
 * @param {number[]} shape
 * @param {{ allowNegInf?: boolean }} [opts] additive masks may hold -Infinity (a masked position)
 */
export function checkFiniteData(where, name, data, shape, { allowNegInf = false } = {}) {
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    // v - v is NaN exactly for NaN and ±Infinity: one compare per element.
    if (v - v !== 0 && !(allowNegInf && v === -Infinity)) {
      const at = shape.length > 1 ? ` (index [${unravel(i, shape).join(', ')}] of shape ${shapeString(shape)})` : '';
      throw rangeError(where, `${name} holds ${describe(v)} at element ${i}${at}; checkFinite is on, so non-finite inputs are refused (without it they propagate to the outputs)`);
    }
  }
}

/**
 * The checkFinite setting of a call: its own option when given (boolean),
 * else the lab's default.
 */
export function finiteOption(where, opts, labDefault) {
  if (opts.checkFinite === undefined) return labDefault;
  return checkBool(where, 'checkFinite', opts.checkFinite);
}

/**
 * checkFinite over a call's tensors ([name, { data, shape }] pairs; a tensor
 * passed twice, e.g. key = query, is scanned once) and its normalized mask
 * (an additive mask may hold -Infinity).
 * @param {string} where
 * @param {[string, { data: ArrayLike<number>, shape: number[] }][]} tensors
 * @param {{ kind: number, data: ArrayLike<number> | null, shape4: number[] }} [mask]
 */
export function checkFiniteArgs(where, tensors, mask) {
  const seen = new Set();
  for (const [name, t] of tensors) {
    if (seen.has(t.data)) continue;
    seen.add(t.data);
    checkFiniteData(where, name, t.data, t.shape);
  }
  if (mask && mask.data) {
    // shape4 is the mask broadcast-aligned to [B, H, Lq, Lk]: drop its leading 1s.
    const shape = mask.shape4.slice();
    while (shape.length > 1 && shape[0] === 1) shape.shift();
    checkFiniteData(where, 'mask', mask.data, shape, { allowNegInf: mask.kind === MASK_KINDS.additive });
  }
}

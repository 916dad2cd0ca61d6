// Mask specs → the normalised form every backend consumes:
//   { causal, lengths: Int32Array | null, kind: 0 none | 1 keep | 2 block | 3 additive,
//     data: Float32Array | null, shape4: [mB, mH, mLq, mLk], given: boolean }
// Tensor masks broadcast (numpy rules, right-aligned) to the scores [B, H, Lq, Lk].
import { describe, typeError, rangeError } from './errors.js';
import { toTensor, shapeString } from './tensor.js';

export const MASK_KINDS = { keep: 1, block: 2, additive: 3 };
const ALL_KINDS = "'causal', 'padding', 'keep', 'block' or 'additive'";

export const NO_MASK = Object.freeze({ causal: false, lengths: null, kind: 0, data: null, shape4: [1, 1, 1, 1], given: false });

function booleansToNumbers(value) {
  if (Array.isArray(value)) return value.map(booleansToNumbers);
  return typeof value === 'boolean' ? (value ? 1 : 0) : value;
}

/**
 * @param {string} where function name for messages
 * @param {any} mask undefined | spec | spec[]
 * @param {{ batch: number, heads: number, lq: number, lk: number, leadB?: number[], leadH?: number[] }} dims
 *   leadB: the leading dims of the scores that fold into B (default [batch]); leadH: [H] or [].
 * @returns {import('./backend.js').MaskArgs}
 */
export function normalizeMask(where, mask, dims) {
  if (mask === undefined || mask === null || mask === false) return NO_MASK;
  const specs = Array.isArray(mask) ? mask : [mask];
  const out = { causal: false, lengths: null, kind: 0, data: null, shape4: [1, 1, 1, 1], given: true };
  let sawTensor = false;
  specs.forEach((spec, index) => {
    const name = Array.isArray(mask) ? `mask[${index}]` : 'mask';
    if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) {
      throw typeError(where, `${name} must be a mask spec such as { kind: 'causal' }, got ${describe(spec)}`);
    }
    const { kind } = spec;
    if (kind === 'causal') {
      if (out.causal) throw rangeError(where, `${name}: the causal mask is given twice`);
      out.causal = true;
    } else if (kind === 'padding') {
      if (out.lengths) throw rangeError(where, `${name}: a padding mask is given twice`);
      out.lengths = normalizeLengths(where, `${name}.lengths`, spec.lengths, dims);
    } else if (kind in MASK_KINDS) {
      if (sawTensor) throw rangeError(where, `${name}: at most one keep/block/additive mask tensor may be given`);
      sawTensor = true;
      const given = Array.isArray(spec.data) ? booleansToNumbers(spec.data) : spec.data;
      let tensor;
      if (spec.shape !== undefined && Array.isArray(given) && Array.isArray(given[0])) {
        // Nested arrays with an explicit shape: the shape must match.
        tensor = toTensor(where, name, given);
        if (!Array.isArray(spec.shape) || spec.shape.length !== tensor.shape.length || spec.shape.some((d, i) => d !== tensor.shape[i])) {
          throw rangeError(where, `${name}.shape ${describe(spec.shape)} does not match the nested data's shape ${shapeString(tensor.shape)}`);
        }
      } else {
        tensor = toTensor(where, name, spec.shape !== undefined ? { data: given, shape: spec.shape } : given);
      }
      out.kind = MASK_KINDS[kind];
      out.data = tensor.data;
      out.shape4 = broadcastShape4(where, name, tensor.shape, dims);
    } else if (kind === undefined) {
      throw typeError(where, `${name}.kind is missing: use ${ALL_KINDS}`);
    } else {
      throw rangeError(where, `${name}.kind must be ${ALL_KINDS}, got ${describe(kind)}`);
    }
  });
  return out;
}

/** @param {string} where @param {string} name @param {ArrayLike<number>} lengths @param {{ batch: number, lk: number }} dims */
function normalizeLengths(where, name, lengths, dims) {
  if (!Array.isArray(lengths) && !ArrayBuffer.isView(lengths)) {
    throw typeError(where, `${name} must be an array of ${dims.batch} integer(s) (one per batch row), got ${describe(lengths)}`);
  }
  if (lengths.length !== dims.batch) {
    throw rangeError(where, `${name} must have one entry per batch row (B = ${dims.batch}), got ${lengths.length}`);
  }
  const out = new Int32Array(lengths.length);
  for (let b = 0; b < lengths.length; b++) {
    const v = Number(lengths[b]);
    if (typeof lengths[b] !== 'number' && !ArrayBuffer.isView(lengths)) {
      throw typeError(where, `${name}[${b}] must be an integer, got ${describe(lengths[b])}`);
    }
    if (!Number.isInteger(v) || v < 0 || v > dims.lk) {
      throw rangeError(where, `${name}[${b}] must be an integer in [0, ${dims.lk}] (the key length Lk), got ${describe(lengths[b])}`);
    }
    out[b] = v;
  }
  return out;
}

// Right-aligns the mask shape to the scores' shape and folds it to 4 dims.
// dims.leadB: the leading dims that fold into B; dims.leadH: [H] or [].
function broadcastShape4(where, name, shape, dims) {
  const leadB = dims.leadB ?? [dims.batch];
  const leadH = dims.leadH ?? [dims.heads];
  const full = [...leadB, ...leadH, dims.lq, dims.lk];
  const fail = () => rangeError(where,
    `${name} of shape ${shapeString(shape)} does not broadcast to the scores' shape ${shapeString(full)}: ` +
    `right-aligned, each mask dim must be 1 or equal to the scores' dim ` +
    `(allowed forms include [Lq,Lk], [B,1,1,Lk], [B,1,Lq,Lk], [B,H,Lq,Lk])`);
  if (shape.length > full.length) throw fail();
  const aligned = [...new Array(full.length - shape.length).fill(1), ...shape];
  for (let i = 0; i < full.length; i++) {
    if (aligned[i] !== 1 && aligned[i] !== full[i]) throw fail();
  }
  const n = full.length;
  const mLq = aligned[n - 2];
  const mLk = aligned[n - 1];
  const mH = leadH.length ? aligned[leadB.length] : 1;
  // Dims that fold into B must be all 1 or all full.
  const before = aligned.slice(0, leadB.length);
  let mB = 1;
  if (before.some((d) => d !== 1)) {
    if (before.some((d, i) => d !== leadB[i])) {
      throw rangeError(where, `${name} of shape ${shapeString(shape)}: the mask dims over ${shapeString(leadB)} must be all 1 or all equal to them`);
    }
    mB = before.reduce((a, b) => a * b, 1);
  }
  return [mB, mH, mLq, mLk];
}

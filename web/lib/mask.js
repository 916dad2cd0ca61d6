// Mask specs → the normalised form every backend consumes:
//   { causal, causalAlign: 0 top-left | 1 bottom-right, lengths: Int32Array | null,
//     kind: 0 none | 1 keep | 2 block | 3 additive, data: Float32Array | null,
//     shape4: [mB, mH, mLq, mLk], window, windowLeft, windowRight, windowAlign,
//     alibi, slopes: Float32Array | null (null: the paper's default slopes),
//     fill (maskFill: -1e9 or -Infinity), given: boolean }
// Tensor masks broadcast (numpy rules, right-aligned) to the scores [B, H, Lq, Lk].
// Every spec is strict: a field its kind does not have is a TypeError that
// names it and lists the allowed ones. Value ranges the C++ core checks
// (window sides >= -1, maskFill) are reported by it.
import { describe, typeError, rangeError } from './errors.js';
import { toTensor, shapeString } from './tensor.js';

export const MASK_KINDS = { keep: 1, block: 2, additive: 3 };
const ALL_KINDS = "'causal', 'padding', 'window', 'alibi', 'keep', 'block' or 'additive'";
export const DEFAULT_MASK_FILL = -1e9;
const ALIGNS = { 'top-left': 0, 'bottom-right': 1 };
// The fields of each kind of spec.
const FIELDS = {
  causal: ['kind', 'align', 'offset'],
  padding: ['kind', 'lengths'],
  window: ['kind', 'left', 'right', 'align', 'offset'],
  alibi: ['kind', 'slopes'],
  keep: ['kind', 'data', 'shape'],
  block: ['kind', 'data', 'shape'],
  additive: ['kind', 'data', 'shape'],
};

const EMPTY = {
  causal: false, causalAlign: 0, causalOffset: 0, lengths: null, kind: 0, data: null, shape4: [1, 1, 1, 1],
  window: false, windowLeft: -1, windowRight: -1, windowAlign: 0, windowOffset: 0, alibi: false, slopes: null,
  fill: DEFAULT_MASK_FILL, given: false,
};
export const NO_MASK = Object.freeze({ ...EMPTY });

/** The mask with `maskFill` set (a number; -Infinity for ONNX semantics). */
export function withMaskFill(where, mask, maskFill) {
  if (maskFill === undefined) return mask;
  if (typeof maskFill !== 'number') {
    throw typeError(where, `maskFill must be a number (-1e9 by default, or -Infinity), got ${describe(maskFill)}`);
  }
  return { ...mask, fill: maskFill };
}

function checkFields(where, name, spec, kind) {
  const allowed = FIELDS[kind];
  for (const key of Object.keys(spec)) {
    if (!allowed.includes(key)) {
      throw typeError(where, `${name}: unknown field ${JSON.stringify(key)} of a '${kind}' mask; allowed: ${allowed.join(', ')}`);
    }
  }
}

function readAlign(where, name, align) {
  if (align === undefined) return 0;
  if (!(align in ALIGNS)) {
    throw rangeError(where, `${name}.align must be 'top-left' or 'bottom-right', got ${describe(align)}`);
  }
  return ALIGNS[align];
}

// offset: with align 'top-left', query i sits at p_i = i + offset (ONNX: the
// past length of a KV cache).
function readOffset(where, name, spec, align) {
  if (spec.offset === undefined) return 0;
  if (typeof spec.offset !== 'number') throw typeError(where, `${name}.offset must be an integer, got ${describe(spec.offset)}`);
  if (!Number.isInteger(spec.offset) || Math.abs(spec.offset) > 2 ** 31) {
    throw rangeError(where, `${name}.offset must be an integer, got ${describe(spec.offset)}`);
  }
  if (align !== 0) throw rangeError(where, `${name}.offset applies to align 'top-left' (bottom-right puts the last query on the last valid key)`);
  return spec.offset;
}

function readSide(where, name, value) {
  if (value === undefined) return -1;
  if (typeof value !== 'number') {
    throw typeError(where, `${name} must be an integer (-1 leaves that side unbounded), got ${describe(value)}`);
  }
  if (!Number.isInteger(value)) {
    throw rangeError(where, `${name} must be an integer (-1 leaves that side unbounded), got ${describe(value)}`);
  }
  return value;
}

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
  const out = { ...EMPTY, shape4: [1, 1, 1, 1], given: true };
  let sawTensor = false;
  specs.forEach((spec, index) => {
    const name = Array.isArray(mask) ? `mask[${index}]` : 'mask';
    if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) {
      throw typeError(where, `${name} must be a mask spec such as { kind: 'causal' }, got ${describe(spec)}`);
    }
    const { kind } = spec;
    if (typeof kind === 'string' && kind in FIELDS) checkFields(where, name, spec, kind);
    if (kind === 'causal') {
      if (out.causal) throw rangeError(where, `${name}: the causal mask is given twice`);
      out.causal = true;
      out.causalAlign = readAlign(where, name, spec.align);
      out.causalOffset = readOffset(where, name, spec, out.causalAlign);
    } else if (kind === 'window') {
      if (out.window) throw rangeError(where, `${name}: a window mask is given twice`);
      out.window = true;
      out.windowLeft = readSide(where, `${name}.left`, spec.left);
      out.windowRight = readSide(where, `${name}.right`, spec.right);
      out.windowAlign = readAlign(where, name, spec.align);
      out.windowOffset = readOffset(where, name, spec, out.windowAlign);
    } else if (kind === 'alibi') {
      if (out.alibi) throw rangeError(where, `${name}: an alibi mask is given twice`);
      out.alibi = true;
      if (spec.slopes !== undefined) out.slopes = normalizeSlopes(where, `${name}.slopes`, spec.slopes, dims);
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

/** @param {string} where @param {string} name @param {any} slopes @param {any} dims */
function normalizeSlopes(where, name, slopes, dims) {
  const heads = dims.leadH ? (dims.leadH.length ? dims.leadH[0] : 1) : dims.heads;
  if (!Array.isArray(slopes) && !ArrayBuffer.isView(slopes)) {
    throw typeError(where, `${name} must be an array of ${heads} number(s) (one per query head H), got ${describe(slopes)}`);
  }
  const n = /** @type {ArrayLike<number>} */ (slopes).length;
  if (n !== heads) {
    throw rangeError(where, `${name} must have one slope per query head (H = ${heads}), got ${n}`);
  }
  const out = new Float32Array(heads);
  for (let h = 0; h < heads; h++) {
    if (typeof slopes[h] !== 'number') throw typeError(where, `${name}[${h}] must be a number, got ${describe(slopes[h])}`);
    out[h] = slopes[h];
  }
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

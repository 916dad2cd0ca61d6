// NumPy .npy reader and writer (format versions 1.0, 2.0 and 3.0):
//   "\x93NUMPY" major minor, header length (u16 for 1.0, u32 for 2.0/3.0),
//   a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//   padded with spaces and '\n', then the data.
// dtypes: f2 f4 f8 (→ Float32Array), i1 i2 i4 i8 u1 u2 u4 u8 b1 (→ Int32Array,
// an error when an 8-byte or u4 value is outside int32), either byte order.
// Object arrays (pickles) and structured dtypes are refused. Fortran-order
// arrays are transposed to C order (a copy).
//
// Copies: little-endian f4/i4 data at an offset that is a multiple of 4 is a
// view over the input buffer (numpy aligns the data to 64 bytes); others are
// converted into fresh arrays. { copy: true } always copies.
import { rangeError, typeError, checkOptions } from '../errors.js';
import { DTYPES, decode, encodeInto, checkWritable, asBytes } from './dtypes.js';

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY
const KIND = { f2: 'F16', f4: 'F32', f8: 'F64', i1: 'I8', i2: 'I16', i4: 'I32', i8: 'I64', u1: 'U8', u2: 'U16', u4: 'U32', u8: 'U64', b1: 'BOOL' };
const DESCR = { F16: '<f2', F32: '<f4', F64: '<f8', I32: '<i4', I64: '<i8' };
const MAX_NPY_HEADER = 1 << 20;

// A small parser of the header's Python literal: a dict of str keys whose
// values are str, True/False, or a tuple of ints.
function parseHeaderDict(where, text) {
  let i = 0;
  const fail = (msg) => rangeError(where, `the header is not a valid .npy header dict (${msg} at character ${i}): ${JSON.stringify(text.slice(0, 120))}`);
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++;
  };
  const expect = (ch) => {
    ws();
    if (text[i] !== ch) throw fail(`expected '${ch}'`);
    i++;
  };
  const str = () => {
    ws();
    const q = text[i];
    if (q !== "'" && q !== '"') throw fail('expected a string');
    const end = text.indexOf(q, i + 1);
    if (end < 0) throw fail('unterminated string');
    const s = text.slice(i + 1, end);
    i = end + 1;
    return s;
  };
  const value = () => {
    ws();
    if (text[i] === "'" || text[i] === '"') return str();
    if (text.startsWith('True', i)) { i += 4; return true; }
    if (text.startsWith('False', i)) { i += 5; return false; }
    if (text[i] === '(') {
      i++;
      const dims = [];
      for (;;) {
        ws();
        if (text[i] === ')') { i++; return dims; }
        const m = /^\d+/.exec(text.slice(i, i + 20));
        if (!m) throw fail('expected a non-negative integer in the shape tuple');
        dims.push(Number(m[0]));
        i += m[0].length;
        ws();
        if (text[i] === ',') i++;
        else if (text[i] !== ')') throw fail("expected ',' or ')'");
      }
    }
    if (text[i] === '[') throw rangeError(where, 'structured dtypes (a list descr) are not supported; save a plain numeric array');
    throw fail('unexpected value');
  };
  expect('{');
  const dict = {};
  for (;;) {
    ws();
    if (text[i] === '}') { i++; break; }
    const key = str();
    expect(':');
    dict[key] = value();
    ws();
    if (text[i] === ',') i++;
    else if (text[i] !== '}') throw fail("expected ',' or '}'");
  }
  return dict;
}

/** Parses a .npy header; returns { dtype, bigEndian, shape, fortran, dataStart, count }. */
export function parseNpyHeader(where, u8) {
  if (u8.byteLength < 10) throw rangeError(where, `truncated file: ${u8.byteLength} bytes, but a .npy file starts with a 10-byte preamble`);
  for (let k = 0; k < 6; k++) {
    if (u8[k] !== MAGIC[k]) throw rangeError(where, 'not a .npy file: it does not start with "\\x93NUMPY"');
  }
  const major = u8[6];
  const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  if (major !== 1 && major !== 2 && major !== 3) throw rangeError(where, `unsupported .npy format version ${major}.${u8[7]}; supported: 1.0, 2.0, 3.0`);
  let headerLen;
  let pos;
  if (major === 1) {
    headerLen = dv.getUint16(8, true);
    pos = 10;
  } else {
    if (u8.byteLength < 12) throw rangeError(where, 'truncated file: the 2.0/3.0 preamble needs 12 bytes');
    headerLen = dv.getUint32(8, true);
    pos = 12;
  }
  if (headerLen > MAX_NPY_HEADER) throw rangeError(where, `header length ${headerLen} bytes exceeds the limit of ${MAX_NPY_HEADER}`);
  if (pos + headerLen > u8.byteLength) throw rangeError(where, `truncated file: the header claims ${headerLen} bytes but only ${u8.byteLength - pos} follow`);
  let text;
  try {
    text = new TextDecoder(major === 3 ? 'utf-8' : 'latin1', { fatal: true }).decode(u8.subarray(pos, pos + headerLen));
  } catch {
    throw rangeError(where, 'the header is not valid text');
  }
  const dict = parseHeaderDict(where, text);
  for (const key of ['descr', 'fortran_order', 'shape']) {
    if (!(key in dict)) throw rangeError(where, `the header has no '${key}'`);
  }
  const { descr, shape } = dict;
  if (typeof descr !== 'string') throw rangeError(where, "'descr' must be a dtype string such as '<f4'");
  if (typeof dict.fortran_order !== 'boolean') throw rangeError(where, "'fortran_order' must be True or False");
  if (!Array.isArray(shape)) throw rangeError(where, "'shape' must be a tuple of integers");
  const m = /^([<>|=]?)([a-zA-Z]\d*)$/.exec(descr);
  const kind = m && KIND[m[2]];
  if (!kind) {
    const why = descr.includes('O') ? ' (object arrays hold pickles, which are never read)' : '';
    throw rangeError(where, `unsupported dtype ${JSON.stringify(descr)}${why}; supported: ${Object.keys(KIND).join(', ')} in either byte order`);
  }
  let count = 1;
  for (const d of shape) count *= d;
  const dataStart = pos + headerLen;
  const need = count * DTYPES[kind].size;
  const have = u8.byteLength - dataStart;
  if (have !== need) {
    throw rangeError(where, `shape (${shape.join(', ')}) of ${descr} needs ${need} bytes of data, but the file has ${have} after the header${have < need ? ' (truncated file)' : ''}`);
  }
  return { dtype: kind, bigEndian: m[1] === '>', shape, fortran: dict.fortran_order, dataStart, count };
}

function fortranToC(data, shape) {
  const n = data.length;
  const r = shape.length;
  if (r < 2) return data;
  const out = new data.constructor(n);
  const idx = new Array(r).fill(0);
  // Walk C order; the Fortran offset has stride 1 on the first axis.
  const fstride = new Array(r);
  fstride[0] = 1;
  for (let k = 1; k < r; k++) fstride[k] = fstride[k - 1] * shape[k - 1];
  for (let c = 0; c < n; c++) {
    let f = 0;
    for (let k = 0; k < r; k++) f += idx[k] * fstride[k];
    out[c] = data[f];
    for (let k = r - 1; k >= 0; k--) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

/**
 * Reads a .npy file held in memory.
 * @param {ArrayBuffer|ArrayBufferView} bytes
 * @param {{ copy?: boolean }} [options]
 * @returns {{ data: Float32Array|Int32Array, shape: number[], dtype: string }}
 */
export function readNpy(bytes, options) {
  return readNpyAs('readNpy', bytes, options);
}

export function readNpyAs(where, bytes, options) {
  const opts = checkOptions(where, 'options', options);
  for (const k of Object.keys(opts)) {
    if (k !== 'copy') throw typeError(where, `unknown option ${JSON.stringify(k)}; allowed: copy`);
  }
  const u8 = asBytes(where, bytes);
  const h = parseNpyHeader(where, u8);
  const block = u8.subarray(h.dataStart);
  let data = decode(where, 'the array', h.dtype, block, h.count, { bigEndian: h.bigEndian, copy: Boolean(opts.copy) && !h.fortran });
  if (h.fortran) data = fortranToC(data, h.shape);
  return { data, shape: h.shape.slice(), dtype: h.dtype };
}

/**
 * Writes a tensor { data, shape, dtype? } as a .npy file (version 1.0, or 2.0
 * when the header needs it), little-endian, C order, data aligned to 64 bytes.
 * dtype: 'F32' (default for float data), 'F16', 'F64', 'I32' (default for an
 * Int32Array) or 'I64'; .npy has no bfloat16.
 * @returns {Uint8Array}
 */
export function writeNpy(tensor) {
  const where = 'writeNpy';
  const t = checkWritable(where, 'tensor', tensor);
  if (!DESCR[t.dtype]) throw rangeError(where, `.npy has no ${t.dtype} dtype; use one of ${Object.keys(DESCR).join(', ')}`);
  const shapeText = t.shape.length === 1 ? `(${t.shape[0]},)` : `(${t.shape.join(', ')})`;
  const dict = `{'descr': '${DESCR[t.dtype]}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  let pre = 10;
  let total = Math.ceil((pre + dict.length + 1) / 64) * 64;
  if (total - pre > 0xffff) {
    pre = 12;
    total = Math.ceil((pre + dict.length + 1) / 64) * 64;
  }
  const headerLen = total - pre;
  const size = DTYPES[t.dtype].size * t.count;
  const out = new Uint8Array(total + size);
  out.set(MAGIC, 0);
  out[6] = pre === 10 ? 1 : 2;
  out[7] = 0;
  const dv = new DataView(out.buffer);
  if (pre === 10) dv.setUint16(8, headerLen, true);
  else dv.setUint32(8, headerLen, true);
  for (let k = 0; k < dict.length; k++) out[pre + k] = dict.charCodeAt(k);
  out.fill(0x20, pre + dict.length, total - 1);
  out[total - 1] = 0x0a;
  encodeInto(where, 'tensor', t.dtype, t.data, out.subarray(total));
  return out;
}

// Element types of weight files, named as safetensors names them (F32, F16,
// BF16, F64, I64, …), and their exact conversion to the two array kinds the
// library hands out: floats become a Float32Array, integers an Int32Array.
//
// Copies: a little-endian F32 or I32 block whose byte offset is a multiple of
// 4 is returned as a view over the caller's buffer (no copy); every other
// block is converted into a fresh array (one copy).
import { rangeError, typeError } from '../errors.js';

/** Bytes per element and the array kind each dtype becomes. */
export const DTYPES = Object.freeze({
  F64: { size: 8, kind: 'float' },
  F32: { size: 4, kind: 'float' },
  F16: { size: 2, kind: 'float' },
  BF16: { size: 2, kind: 'float' },
  I64: { size: 8, kind: 'int' },
  U64: { size: 8, kind: 'int' },
  I32: { size: 4, kind: 'int' },
  U32: { size: 4, kind: 'int' },
  I16: { size: 2, kind: 'int' },
  U16: { size: 2, kind: 'int' },
  I8: { size: 1, kind: 'int' },
  U8: { size: 1, kind: 'int' },
  BOOL: { size: 1, kind: 'int' },
});

/** Dtypes a writer can produce. */
export const WRITABLE = ['F32', 'F16', 'BF16', 'F64', 'I32', 'I64'];

const HOST_LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

// float16 → float32 bit patterns, built once on first use (256 KiB). Exact:
// every half is a float32, NaN payloads keep their bits.
let halfTable = null;
/** The float32 bits of every float16 value (a table of 65536, built once). */
export function halfToFloatBits() {
  if (halfTable) return halfTable;
  halfTable = new Uint32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    const exp = (h >> 10) & 0x1f;
    let mant = h & 0x3ff;
    let bits;
    if (exp === 0x1f) {
      bits = sign | 0x7f800000 | (mant << 13);
    } else if (exp !== 0) {
      bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    } else if (mant === 0) {
      bits = sign;
    } else {
      // Subnormal half: normalise into a float32 normal.
      let e = -14;
      while ((mant & 0x400) === 0) {
        mant <<= 1;
        e--;
      }
      bits = sign | ((e + 127) << 23) | ((mant & 0x3ff) << 13);
    }
    halfTable[h] = bits >>> 0;
  }
  return halfTable;
}

// Float bits are read through a Uint32Array view of the data: reading a
// float32 NaN as a JS number may quiet a signalling NaN and lose its payload.
function floatBits(data) {
  if (data instanceof Float32Array) return new Uint32Array(data.buffer, data.byteOffset, data.length);
  return new Uint32Array(Float32Array.from(data).buffer);
}

/** float32 bits → float16 bits, round to nearest even; exact for representable values. */
export function halfBitsFromFloatBits(bits) {
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  const mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? (mant >>> 13) || 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rem = m & ((1 << shift) - 1);
    let r = m >>> shift;
    if (rem > half || (rem === half && (r & 1))) r++;
    return sign | r;
  }
  let r = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (r & 1))) r++;
  return sign | r;
}

/** float32 bits → bfloat16 bits, round to nearest even; NaN stays NaN. */
export function bf16BitsFromFloatBits(bits) {
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff)) return (bits >>> 16) & 0x7f ? bits >>> 16 : (bits >>> 16) | 0x40;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/**
 * Decodes `count` elements of `dtype` from `bytes` (a Uint8Array holding
 * exactly those elements). Returns a Float32Array or an Int32Array; a view
 * over `bytes.buffer` when no conversion is needed and the offset is aligned.
 * `what` names the tensor in error messages; `bigEndian` is for .npy files
 * written with '>'.
 */
export function decode(where, what, dtype, bytes, count, { bigEndian = false, copy = false } = {}) {
  const info = DTYPES[dtype];
  if (!info) throw rangeError(where, `${what}: unsupported dtype ${JSON.stringify(dtype)}; supported: ${Object.keys(DTYPES).join(', ')}`);
  const le = !bigEndian;
  if ((dtype === 'F32' || dtype === 'I32') && le && HOST_LE) {
    const Ctor = dtype === 'F32' ? Float32Array : Int32Array;
    if (!copy && bytes.byteOffset % 4 === 0) return new Ctor(bytes.buffer, bytes.byteOffset, count);
    return new Ctor(bytes.slice().buffer, 0, count);
  }
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (info.kind === 'float') {
    const out = new Float32Array(count);
    if (dtype === 'F32') {
      for (let i = 0; i < count; i++) out[i] = dv.getFloat32(4 * i, le);
    } else if (dtype === 'F64') {
      for (let i = 0; i < count; i++) out[i] = dv.getFloat64(8 * i, le);
    } else {
      const bitsOut = new Uint32Array(out.buffer);
      if (dtype === 'BF16') {
        for (let i = 0; i < count; i++) bitsOut[i] = dv.getUint16(2 * i, le) << 16;
      } else {
        const table = halfToFloatBits();
        for (let i = 0; i < count; i++) bitsOut[i] = table[dv.getUint16(2 * i, le)];
      }
    }
    return out;
  }
  const out = new Int32Array(count);
  const bad = (i, v) => rangeError(where, `${what}: element ${i} of this ${dtype} tensor is ${v}, outside the int32 range [-2147483648, 2147483647] that integer tensors are read into`);
  switch (dtype) {
    case 'I64':
      for (let i = 0; i < count; i++) {
        const lo = dv.getInt32(le ? 8 * i : 8 * i + 4, le);
        const hi = dv.getInt32(le ? 8 * i + 4 : 8 * i, le);
        if (hi !== (lo < 0 ? -1 : 0)) throw bad(i, dv.getBigInt64(8 * i, le));
        out[i] = lo;
      }
      break;
    case 'U64':
      for (let i = 0; i < count; i++) {
        const lo = dv.getInt32(le ? 8 * i : 8 * i + 4, le);
        const hi = dv.getInt32(le ? 8 * i + 4 : 8 * i, le);
        if (hi !== 0 || lo < 0) throw bad(i, dv.getBigUint64(8 * i, le));
        out[i] = lo;
      }
      break;
    case 'I32':
      for (let i = 0; i < count; i++) out[i] = dv.getInt32(4 * i, le);
      break;
    case 'U32':
      for (let i = 0; i < count; i++) {
        const v = dv.getUint32(4 * i, le);
        if (v > 0x7fffffff) throw bad(i, v);
        out[i] = v;
      }
      break;
    case 'I16':
      for (let i = 0; i < count; i++) out[i] = dv.getInt16(2 * i, le);
      break;
    case 'U16':
      for (let i = 0; i < count; i++) out[i] = dv.getUint16(2 * i, le);
      break;
    case 'I8':
      for (let i = 0; i < count; i++) out[i] = dv.getInt8(i);
      break;
    default: // U8, BOOL
      for (let i = 0; i < count; i++) out[i] = dv.getUint8(i);
  }
  return out;
}

/** Default dtype for a tensor's data: Int32Array → I32, anything else → F32. */
export function defaultDtype(data) {
  return data instanceof Int32Array ? 'I32' : 'F32';
}

/**
 * Encodes `data` (Float32Array, Int32Array or a number array) as `dtype`
 * (little-endian) into `out` (a Uint8Array of exactly count·size bytes).
 */
export function encodeInto(where, what, dtype, data, out) {
  if (!WRITABLE.includes(dtype)) {
    throw rangeError(where, `${what}: cannot write dtype ${JSON.stringify(dtype)}; writable: ${WRITABLE.join(', ')}`);
  }
  const n = data.length;
  const dv = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const isInt = DTYPES[dtype].kind === 'int';
  if (isInt && !(data instanceof Int32Array)) {
    for (let i = 0; i < n; i++) {
      if (!Number.isInteger(data[i]) || data[i] < -2147483648 || data[i] > 2147483647) {
        throw rangeError(where, `${what}: element ${i} (${data[i]}) is not an int32, needed for dtype ${dtype}`);
      }
    }
  }
  switch (dtype) {
    case 'F32':
      if (HOST_LE && data instanceof Float32Array) out.set(new Uint8Array(data.buffer, data.byteOffset, n * 4));
      else for (let i = 0; i < n; i++) dv.setFloat32(4 * i, data[i], true);
      break;
    case 'F64':
      for (let i = 0; i < n; i++) dv.setFloat64(8 * i, data[i], true);
      break;
    case 'F16': {
      const bits = floatBits(data);
      for (let i = 0; i < n; i++) dv.setUint16(2 * i, halfBitsFromFloatBits(bits[i]), true);
      break;
    }
    case 'BF16': {
      const bits = floatBits(data);
      for (let i = 0; i < n; i++) dv.setUint16(2 * i, bf16BitsFromFloatBits(bits[i]), true);
      break;
    }
    case 'I32':
      for (let i = 0; i < n; i++) dv.setInt32(4 * i, data[i], true);
      break;
    default: // I64
      for (let i = 0; i < n; i++) {
        dv.setInt32(8 * i, data[i], true);
        dv.setInt32(8 * i + 4, data[i] < 0 ? -1 : 0, true);
      }
  }
}

/** Checks a tensor given to a writer; returns { data, shape, dtype, count }. */
export function checkWritable(where, what, t) {
  if (t === null || typeof t !== 'object' || Array.isArray(t)) {
    throw typeError(where, `${what} must be a tensor { data, shape, dtype? }, got ${t === null ? 'null' : typeof t}`);
  }
  const { shape } = t;
  /** @type {any} */
  const data = t.data;
  if (!(ArrayBuffer.isView(data) && !(data instanceof DataView)) && !Array.isArray(data)) {
    throw typeError(where, `${what}.data must be a Float32Array, an Int32Array or a number array`);
  }
  if (!Array.isArray(shape) || shape.some((d) => !Number.isInteger(d) || d < 0)) {
    throw typeError(where, `${what}.shape must be an array of non-negative integers`);
  }
  let count = 1;
  for (const d of shape) count *= d;
  const length = /** @type {{ length: number }} */ (t.data).length;
  if (count !== length) {
    throw rangeError(where, `${what}: shape [${shape.join(',')}] needs ${count} elements but data has ${length}`);
  }
  const dtype = t.dtype ?? defaultDtype(data);
  if (typeof dtype !== 'string') throw typeError(where, `${what}.dtype must be a string such as 'F32'`);
  if (!WRITABLE.includes(dtype)) {
    throw rangeError(where, `${what}: cannot write dtype ${JSON.stringify(dtype)}; writable: ${WRITABLE.join(', ')}`);
  }
  return { data, shape, dtype, count };
}

/** Accepts an ArrayBuffer or any ArrayBufferView; returns a Uint8Array over the same bytes. */
export function asBytes(where, bytes) {
  if (bytes instanceof ArrayBuffer || (typeof SharedArrayBuffer === 'function' && bytes instanceof SharedArrayBuffer)) {
    return new Uint8Array(bytes);
  }
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw typeError(where, `bytes must be an ArrayBuffer or a Uint8Array (the file's contents), got ${bytes === null ? 'null' : typeof bytes}`);
}

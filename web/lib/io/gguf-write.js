// GGUF v3 writer (ggml/docs/gguf.md) for F32, F16, Q8_0 and Q4_0 tensors,
// quantizing with the semantics of quantize_row_q8_0_ref / quantize_row_q4_0_ref
// (ggml/src/ggml-quants.c) in float32 arithmetic.
import { GGML_TYPES, ggmlTypeId } from './ggml-types.js';
import { halfBitsFromFloatBits } from './dtypes.js';

export const WRITABLE_GGML = Object.freeze(['F32', 'F16', 'Q8_0', 'Q4_0']);
const fr = Math.fround;
const f32 = new Float32Array(1); const u32 = new Uint32Array(f32.buffer);
const half = (x) => { f32[0] = x; return halfBitsFromFloatBits(u32[0]); };
const roundf = (x) => Math.sign(x) * Math.floor(Math.abs(x) + 0.5);

function quantize(type, x, out) {
  const dv = new DataView(out.buffer, out.byteOffset, out.byteLength);
  if (type === 'F32') { for (let i = 0; i < x.length; i++) dv.setFloat32(4 * i, x[i], true); return; }
  if (type === 'F16') { for (let i = 0; i < x.length; i++) dv.setUint16(2 * i, half(x[i]), true); return; }
  for (let b = 0; b < x.length / 32; b++) {
    const xs = x.subarray(32 * b, 32 * b + 32);
    if (type === 'Q8_0') {
      let amax = 0; for (const v of xs) amax = Math.max(amax, Math.abs(v));
      const d = fr(amax / 127); const id = d ? fr(1 / d) : 0;
      dv.setUint16(34 * b, half(d), true);
      for (let j = 0; j < 32; j++) dv.setInt8(34 * b + 2 + j, roundf(fr(xs[j] * id)));
    } else { // Q4_0
      let amax = 0; let max = 0;
      for (const v of xs) if (Math.abs(v) > amax) { amax = Math.abs(v); max = v; }
      const d = fr(max / -8); const id = d ? fr(1 / d) : 0;
      dv.setUint16(18 * b, half(d), true);
      for (let j = 0; j < 16; j++) {
        const q0 = Math.min(15, Math.trunc(fr(fr(xs[j] * id) + 8.5)));
        const q1 = Math.min(15, Math.trunc(fr(fr(xs[j + 16] * id) + 8.5)));
        out[18 * b + 2 + j] = q0 | (q1 << 4);
      }
    }
  }
}

/** A metadata number written as FLOAT32 even when it is an integer (llama.cpp reads rope.freq_base as one). */
export function ggufFloat32(value) {
  return Object.freeze({ ggufFloat32: value });
}

function valueType(key, v) {
  if (v !== null && typeof v === 'object' && Object.hasOwn(v, 'ggufFloat32')) return 6;
  if (typeof v === 'string') return 8;
  if (typeof v === 'boolean') return 7;
  if (typeof v === 'bigint') return 11;
  if (typeof v === 'number') return key === 'general.alignment' || (Number.isInteger(v) && v >= 0 && v < 2 ** 32) ? 4 : 6;
  if (Array.isArray(v) || v instanceof Int32Array || v instanceof Float32Array) return 9;
  throw new TypeError(`writeGguf: metadata '${key}' is ${typeof v}; allowed: string, boolean, number, bigint or an array of one of those`);
}

/**
 * Writes a GGUF v3 file.
 * @param {Object<string,{data?:Float32Array, raw?:Uint8Array, shape:number[], type?:string}>} tensors  shape in torch order; type one of WRITABLE_GGML (default F32);
 *   `raw`: the tensor's bytes already in that type (whole blocks, as a GGUF file or the core holds them), written as they are
 * @param {Object<string,*>} [metadata]  strings, booleans, numbers (integers → UINT32, others → FLOAT32; ggufFloat32(x) → FLOAT32), bigints (INT64), arrays (an Int32Array: of INT32; a Float32Array: of FLOAT32)
 * @returns {Uint8Array}
 */
export function writeGguf(tensors, metadata = {}) {
  const enc = new TextEncoder(); const parts = []; let size = 0;
  const push = (u8) => { parts.push(u8); size += u8.length; };
  const u32v = (v) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, v, true); push(b); };
  const u64v = (v) => { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, BigInt(v), true); push(b); };
  const str = (s) => { const b = enc.encode(s); u64v(b.length); push(b); };
  const alignment = metadata['general.alignment'] ?? 32;
  if (!(Number.isInteger(alignment) && alignment > 0 && (alignment & (alignment - 1)) === 0)) throw new RangeError(`writeGguf: general.alignment is ${alignment}; allowed: a power of two`);
  const scalar = (t, v) => {
    const b = new Uint8Array(t === 11 ? 8 : t === 7 ? 1 : 4); const dv = new DataView(b.buffer);
    if (t === 5) dv.setInt32(0, v, true); else if (t === 4) dv.setUint32(0, v, true); else if (t === 6) dv.setFloat32(0, typeof v === 'object' ? v.ggufFloat32 : v, true); else if (t === 7) dv.setUint8(0, v ? 1 : 0); else dv.setBigInt64(0, BigInt(v), true);
    push(b);
  };
  const names = Object.keys(tensors); const keys = Object.keys(metadata);
  u32v(0x46554747); u32v(3); u64v(names.length); u64v(keys.length);
  for (const k of keys) {
    const v = metadata[k]; const t = valueType(k, v); str(k); u32v(t);
    if (t === 8) str(v);
    else if (t === 9) {
      // (an Int32Array: INT32 elements, as llama.cpp reads tokenizer.ggml.token_type)
      const et = v instanceof Int32Array ? 5 : v instanceof Float32Array ? 6 : v.length ? valueType(k, v[0]) : 4; if (et === 9) throw new TypeError(`writeGguf: metadata '${k}' nests arrays; allowed: one level`);
      u32v(et); u64v(v.length); for (const e of v) { if (et === 8) str(e); else scalar(et, e); }
    } else scalar(t, v);
  }
  const blobs = []; let offset = 0;
  for (const name of names) {
    const { data, raw, shape, type = 'F32' } = tensors[name];
    if (!WRITABLE_GGML.includes(type) && !(raw && ggmlTypeId(type) >= 0)) throw new TypeError(`writeGguf: tensor '${name}' has type ${type}; allowed: ${WRITABLE_GGML.join(', ')}`);
    const t = GGML_TYPES[ggmlTypeId(type)];
    const count = shape.reduce((a, b) => a * b, 1);
    if (raw !== undefined) {
      if (!(raw instanceof Uint8Array) || raw.length * t.blockSize !== count * t.typeSize) throw new TypeError(`writeGguf: tensor '${name}' (${type}, shape [${shape}]) needs raw bytes of ${(count / t.blockSize) * t.typeSize}`);
    } else if (!(data instanceof Float32Array) || data.length !== count) throw new TypeError(`writeGguf: tensor '${name}' needs a Float32Array of ${count} values (shape [${shape}])`);
    if (shape.length < 1 || shape.length > 4) throw new RangeError(`writeGguf: tensor '${name}' has ${shape.length} dimensions; allowed: 1 to 4`);
    const ne0 = shape[shape.length - 1];
    if (ne0 % t.blockSize) throw new RangeError(`writeGguf: tensor '${name}' (${type}) has a last dimension of ${ne0}; it must be a multiple of ${t.blockSize}`);
    str(name); u32v(shape.length); for (const d of shape.slice().reverse()) u64v(d); u32v(ggmlTypeId(type)); u64v(offset);
    let out = raw;
    if (out === undefined) { out = new Uint8Array((count / t.blockSize) * t.typeSize); quantize(type, data, out); }
    blobs.push(out); offset += Math.ceil(out.length / alignment) * alignment;
  }
  const dataOffset = Math.ceil(size / alignment) * alignment;
  const file = new Uint8Array(dataOffset + offset); let p = 0;
  for (const b of parts) { file.set(b, p); p += b.length; }
  p = dataOffset; for (const b of blobs) { file.set(b, p); p += Math.ceil(b.length / alignment) * alignment; }
  return file;
}

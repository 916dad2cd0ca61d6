// GGUF (llama.cpp's file format, ggml/docs/gguf.md), versions 2 and 3:
// header, metadata key/values, tensor infos and the aligned data section.
// readGgufHeader parses without touching tensor data; openGguf reads a Blob
// lazily (only the header bytes, then one tensor's bytes on demand).
import { GGML_TYPES, dequantizeGgml } from './ggml-types.js';

export const GGUF_MAGIC = 0x46554747; // "GGUF" little-endian
const VT = ['UINT8', 'INT8', 'UINT16', 'INT16', 'UINT32', 'INT32', 'FLOAT32', 'BOOL', 'STRING', 'ARRAY', 'UINT64', 'INT64', 'FLOAT64'];
const SCALAR_SIZE = { UINT8: 1, INT8: 1, UINT16: 2, INT16: 2, UINT32: 4, INT32: 4, FLOAT32: 4, BOOL: 1, UINT64: 8, INT64: 8, FLOAT64: 8 };
const INTS = ['UINT8', 'INT8', 'UINT16', 'INT16', 'UINT32', 'INT32', 'UINT64', 'INT64'];
const FLOATS = ['FLOAT32', 'FLOAT64'];
// Known keys and the value types they may have (gguf.md "Standardized key-value pairs").
const KNOWN = {
  'general.alignment': ['UINT32'],
  'general.architecture': ['STRING'],
  'general.name': ['STRING'],
  'general.file_type': ['UINT32'],
  'general.quantization_version': ['UINT32'],
};
const ARCH_INT = ['context_length', 'embedding_length', 'block_count', 'feed_forward_length', 'attention.head_count', 'attention.head_count_kv', 'vocab_size', 'rope.dimension_count'];
const ARCH_FLOAT = ['attention.layer_norm_epsilon', 'attention.layer_norm_rms_epsilon', 'rope.freq_base'];

class Reader {
  constructor(where, bytes) { this.where = where; this.b = bytes; this.dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength); this.p = 0; }
  need(n, what) {
    if (this.p + n > this.b.length) throw new RangeError(`${this.where}: ${what} at byte ${this.p} needs ${n} bytes, past the end of the file (${this.b.length} bytes)`);
  }
  u32(what) { this.need(4, what); const v = this.dv.getUint32(this.p, true); this.p += 4; return v; }
  u64(what) {
    this.need(8, what); const v = this.dv.getBigUint64(this.p, true); this.p += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`${this.where}: ${what} is ${v}, past the end of the file (${this.b.length} bytes)`);
    return Number(v);
  }
  str(what) {
    const n = this.u64(`the length of ${what}`);
    this.need(n, `${what} (a string of ${n} bytes)`);
    const s = new TextDecoder('utf-8', { fatal: false }).decode(this.b.subarray(this.p, this.p + n)); this.p += n; return s;
  }
  scalar(t, what) {
    this.need(SCALAR_SIZE[t], what); const dv = this.dv; const p = this.p; this.p += SCALAR_SIZE[t];
    switch (t) {
      case 'UINT8': return dv.getUint8(p); case 'INT8': return dv.getInt8(p);
      case 'UINT16': return dv.getUint16(p, true); case 'INT16': return dv.getInt16(p, true);
      case 'UINT32': return dv.getUint32(p, true); case 'INT32': return dv.getInt32(p, true);
      case 'FLOAT32': return dv.getFloat32(p, true); case 'BOOL': {
        const v = dv.getUint8(p); if (v > 1) throw new RangeError(`${this.where}: ${what} is a BOOL of value ${v}; allowed: 0 or 1`); return v === 1; }
      case 'UINT64': { const v = dv.getBigUint64(p, true); return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v; }
      case 'INT64': { const v = dv.getBigInt64(p, true); return (v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER)) ? Number(v) : v; }
      default: return dv.getFloat64(p, true);
    }
  }
  vtype(what) {
    const id = this.u32(`the value type of ${what}`);
    if (id >= VT.length) throw new TypeError(`${this.where}: ${what} has value type ${id}; allowed: 0-12 (${VT.join(', ')})`);
    return VT[id];
  }
  value(t, what, depth = 0) {
    if (t === 'STRING') return this.str(what);
    if (t !== 'ARRAY') return this.scalar(t, what);
    const et = this.vtype(`the elements of ${what}`);
    const n = this.u64(`the length of ${what}`);
    if (et === 'ARRAY' && depth > 2) throw new RangeError(`${this.where}: ${what} nests arrays more than 3 deep`);
    const min = et === 'STRING' ? 8 : et === 'ARRAY' ? 12 : SCALAR_SIZE[et];
    if (n * min > this.b.length - this.p) throw new RangeError(`${this.where}: ${what} is an array of ${n} ${et} values, past the end of the file (${this.b.length} bytes)`);
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = this.value(et, `${what}[${i}]`, depth + 1);
    return out;
  }
}

function checkKnownKey(where, key, type, arch) {
  let allowed = KNOWN[key];
  if (!allowed && arch && key.startsWith(`${arch}.`)) {
    const rest = key.slice(arch.length + 1);
    if (ARCH_INT.includes(rest)) allowed = ['UINT32', 'UINT64', 'INT32'];
    else if (ARCH_FLOAT.includes(rest)) allowed = FLOATS;
  }
  if (allowed && !allowed.includes(type)) {
    throw new TypeError(`${where}: metadata key '${key}' has value type ${type}; allowed: ${allowed.join(' or ')}`);
  }
}

/**
 * Parses a GGUF header from the file's first bytes (they must hold the whole
 * header; `fileSize` is the full file's size, for the data-section checks).
 * Reads no tensor data.
 * @returns {{version:number, metadata:Map<string,*>, metadataTypes:Map<string,string>,
 *   alignment:number, dataOffset:number, tensors:Array<{name:string, ggmlType:string,
 *   dtype:string, shape:number[], ne:number[], count:number, begin:number, end:number}>}}
 */
export function parseGgufHeader(bytes, fileSize = bytes.length, where = 'readGguf') {
  const r = new Reader(where, bytes);
  const magic = r.u32('the magic');
  if (magic !== GGUF_MAGIC) throw new TypeError(`${where}: not a GGUF file (the first 4 bytes are not 'GGUF')`);
  const version = r.u32('the version');
  if (version !== 2 && version !== 3) throw new RangeError(`${where}: GGUF version ${version} is not supported; allowed: 2 or 3${version === 1 ? ' (version 1 used 32-bit lengths and is obsolete)' : ''}`);
  const nTensors = r.u64('the tensor count');
  const nKv = r.u64('the metadata count');
  if (nKv * 13 > bytes.length) throw new RangeError(`${where}: ${nKv} metadata entries cannot fit in the file (${bytes.length} header bytes)`);
  if (nTensors * 24 > bytes.length) throw new RangeError(`${where}: ${nTensors} tensor infos cannot fit in the file (${bytes.length} header bytes)`);
  const metadata = new Map(); const metadataTypes = new Map();
  for (let i = 0; i < nKv; i++) {
    const key = r.str(`metadata key ${i}`);
    const t = r.vtype(`metadata '${key}'`);
    const v = r.value(t, `metadata '${key}'`);
    if (metadata.has(key)) throw new RangeError(`${where}: metadata key '${key}' appears twice`);
    metadata.set(key, v); metadataTypes.set(key, t);
  }
  const arch = metadataTypes.get('general.architecture') === 'STRING' ? metadata.get('general.architecture') : null;
  for (const [k, t] of metadataTypes) checkKnownKey(where, k, t, arch);
  const alignment = metadata.has('general.alignment') ? metadata.get('general.alignment') : 32;
  if (!(alignment > 0 && (alignment & (alignment - 1)) === 0)) throw new RangeError(`${where}: general.alignment is ${alignment}; allowed: a power of two`);
  const infos = [];
  for (let i = 0; i < nTensors; i++) {
    const name = r.str(`the name of tensor ${i}`);
    const nDims = r.u32(`the n_dims of '${name}'`);
    if (nDims < 1 || nDims > 4) throw new RangeError(`${where}: tensor '${name}' has n_dims ${nDims}; allowed: 1 to 4`);
    const ne = [];
    for (let d = 0; d < nDims; d++) ne.push(r.u64(`dimension ${d} of '${name}'`));
    const typeId = r.u32(`the type of '${name}'`);
    const t = GGML_TYPES[typeId];
    if (!t) throw new TypeError(`${where}: tensor '${name}' has unknown ggml type ${typeId}`);
    const offset = r.u64(`the offset of '${name}'`);
    if (offset % alignment) throw new RangeError(`${where}: tensor '${name}' starts at data offset ${offset}, not a multiple of the alignment ${alignment}`);
    const count = ne.reduce((a, b) => a * b, 1);
    if (!Number.isSafeInteger(count) || ne[0] % t.blockSize) throw new RangeError(`${where}: tensor '${name}' (${t.name}) has ne [${ne}]; ne[0] must be a multiple of the block size ${t.blockSize}`);
    infos.push({ name, ggmlType: t.name, dtype: t.name, shape: ne.slice().reverse(), ne, count, offset, size: (count / t.blockSize) * t.typeSize });
  }
  const dataOffset = Math.ceil(r.p / alignment) * alignment;
  const dataSize = fileSize - dataOffset;
  const tensors = [];
  for (const t of infos) {
    if (t.offset >= Math.max(0, dataSize) && t.size > 0) throw new RangeError(`${where}: tensor '${t.name}' starts at data byte ${t.offset}, outside the data section (${Math.max(0, dataSize)} bytes)`);
    if (t.offset + t.size > dataSize) throw new RangeError(`${where}: tensor '${t.name}' (${t.ggmlType}) ends at data byte ${t.offset + t.size}, past the data section (${dataSize} bytes): a truncated block`);
    tensors.push({ name: t.name, ggmlType: t.ggmlType, dtype: t.dtype, shape: t.shape, ne: t.ne, count: t.count,
      begin: dataOffset + t.offset, end: dataOffset + t.offset + t.size });
  }
  const sorted = tensors.slice().sort((a, b) => a.begin - b.begin);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].begin < sorted[i - 1].end) throw new RangeError(`${where}: tensors '${sorted[i - 1].name}' and '${sorted[i].name}' overlap in the data section`);
  }
  const names = new Set();
  for (const t of tensors) { if (names.has(t.name)) throw new RangeError(`${where}: tensor name '${t.name}' appears twice`); names.add(t.name); }
  return { version, metadata, metadataTypes, alignment, dataOffset, tensors };
}

function toBytes(where, x) {
  if (x instanceof Uint8Array) return x;
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  throw new TypeError(`${where}: expected a Uint8Array or an ArrayBuffer, got ${x === null ? 'null' : typeof x}`);
}

/**
 * Reads a whole GGUF file held in memory.
 * @returns the header of parseGgufHeader plus tensor(name) → Float32Array (dequantized) and bytes(name) → Uint8Array (raw)
 */
export function readGguf(source) {
  const bytes = toBytes('readGguf', source);
  const header = parseGgufHeader(bytes, bytes.length, 'readGguf');
  const byName = new Map(header.tensors.map((t) => [t.name, t]));
  const find = (name) => { const t = byName.get(name); if (!t) throw new RangeError(`readGguf: no tensor '${name}' in the file`); return t; };
  return { ...header,
    bytes: (name) => { const t = find(name); return bytes.subarray(t.begin, t.end); },
    tensor: (name) => { const t = find(name); return dequantizeGgml('readGguf', name, t.ggmlType, bytes.subarray(t.begin, t.end), t.count); } };
}

/**
 * Opens a GGUF Blob/File (or bytes) lazily: reads only the header (growing the
 * prefix read until it parses), then one tensor's bytes per call.
 */
export async function openGguf(source) {
  if (!(typeof Blob !== 'undefined' && source instanceof Blob)) return readGguf(source);
  let n = Math.min(source.size, 1 << 20);
  for (;;) {
    const prefix = new Uint8Array(await source.slice(0, n).arrayBuffer());
    try {
      const header = parseGgufHeader(prefix, source.size, 'openGguf');
      const byName = new Map(header.tensors.map((t) => [t.name, t]));
      /** @type {(name: string) => Promise<[typeof header.tensors[number], Uint8Array]>} */
      const raw = async (name) => {
        const t = byName.get(name); if (!t) throw new RangeError(`openGguf: no tensor '${name}' in the file`);
        return [t, new Uint8Array(await source.slice(t.begin, t.end).arrayBuffer())];
      };
      return { ...header, bytes: async (name) => (await raw(name))[1],
        tensor: async (name) => { const [t, b] = await raw(name); return dequantizeGgml('openGguf', name, t.ggmlType, b, t.count); } };
    } catch (e) {
      if (n >= source.size || !/past the end of the file/.test(e.message)) throw e;
      n = Math.min(source.size, n * 4);
    }
  }
}

export { writeGguf, WRITABLE_GGML } from './gguf-write.js';
export { dequantizeGgml, GGML_TYPES } from './ggml-types.js';

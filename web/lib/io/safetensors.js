// safetensors reader and writer (https://huggingface.co/docs/safetensors):
//   [8 bytes: N, little-endian u64][N bytes: JSON header][data]
// The header maps each tensor name to { dtype, shape, data_offsets: [begin,
// end] } (offsets relative to the start of the data) and may hold
// "__metadata__": { string: string }.
//
// Validation: N within the file and under a limit (100 MB by default, as the
// reference implementation), the header valid UTF-8 JSON of the right form,
// each tensor's offsets inside the data, dtype size × shape = its byte length,
// no two tensors overlapping. Gaps between tensors are allowed.
//
// Copies: F32 and I32 tensors whose offset in the buffer is a multiple of 4
// are views over the input buffer (writeSafetensors aligns them so); others
// are converted into fresh arrays. Pass { copy: true } to always copy, so the
// tensors do not share memory with the input.
import { rangeError, typeError, checkOptions } from '../errors.js';
import { DTYPES, decode, encodeInto, checkWritable, asBytes } from './dtypes.js';

/** Largest header accepted by default (bytes), as in the reference implementation. */
export const MAX_HEADER_BYTES = 100_000_000;

const READ_KEYS = ['names', 'copy', 'maxHeaderBytes'];

function checkReadOptions(where, options, allowed = READ_KEYS) {
  const opts = checkOptions(where, 'options', options);
  for (const k of Object.keys(opts)) {
    if (!allowed.includes(k)) throw typeError(where, `unknown option ${JSON.stringify(k)}; allowed: ${allowed.join(', ')}`);
  }
  const maxHeaderBytes = opts.maxHeaderBytes ?? MAX_HEADER_BYTES;
  if (!Number.isSafeInteger(maxHeaderBytes) || maxHeaderBytes < 2) {
    throw rangeError(where, `options.maxHeaderBytes must be an integer >= 2, got ${maxHeaderBytes}`);
  }
  if (opts.names !== undefined && (!Array.isArray(opts.names) || opts.names.some((n) => typeof n !== 'string'))) {
    throw typeError(where, 'options.names must be an array of tensor names');
  }
  return { names: opts.names, copy: Boolean(opts.copy), maxHeaderBytes };
}

/**
 * Reads the 8-byte length prefix. `prefix` holds at least the first 8 bytes
 * of a file of `fileSize` bytes; returns the header length N.
 */
export function safetensorsHeaderLength(where, prefix, fileSize, maxHeaderBytes = MAX_HEADER_BYTES) {
  if (fileSize < 8 || prefix.byteLength < 8) {
    throw rangeError(where, `truncated file: ${fileSize} bytes, but a safetensors file starts with an 8-byte header length`);
  }
  const dv = new DataView(prefix.buffer, prefix.byteOffset, 8);
  const lo = dv.getUint32(0, true);
  const hi = dv.getUint32(4, true);
  const n = hi * 2 ** 32 + lo;
  if (n > maxHeaderBytes) {
    const exact = ((BigInt(hi) << 32n) | BigInt(lo)).toString();
    throw rangeError(where, `header length ${exact} bytes (about 2^${Math.log2(n).toFixed(1)}) exceeds the limit of ${maxHeaderBytes} bytes (options.maxHeaderBytes); this is not a safetensors file or its first 8 bytes are damaged`);
  }
  if (n < 2) throw rangeError(where, `header length ${n} is too small for a JSON object ("{}" is 2 bytes)`);
  if (8 + n > fileSize) {
    throw rangeError(where, `truncated file: the header claims ${n} bytes but only ${fileSize - 8} follow the length prefix`);
  }
  return n;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses and validates the JSON header (the N bytes after the prefix) of a
 * file whose data part is `dataBytes` long. Returns { entries, metadata }:
 * entries [{ name, dtype, shape, begin, end, count }] in header order;
 * begin/end are offsets in the data part.
 */
export function parseSafetensorsHeader(where, headerBytes, dataBytes) {
  let text;
  try {
    text = utf8.decode(headerBytes);
  } catch {
    throw rangeError(where, 'the header is not valid UTF-8');
  }
  if (text[0] !== '{') throw rangeError(where, `the header must be a JSON object starting with '{', got ${JSON.stringify(text.slice(0, 20))}`);
  let header;
  try {
    header = JSON.parse(text);
  } catch (e) {
    throw rangeError(where, `the header is not valid JSON (${e.message})`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) {
    throw rangeError(where, 'the header must be a JSON object of tensor entries');
  }
  let metadata = null;
  const entries = [];
  for (const name of Object.keys(header)) {
    const e = header[name];
    if (name === '__metadata__') {
      if (e === null || typeof e !== 'object' || Array.isArray(e)) throw rangeError(where, '__metadata__ must be an object of string values');
      for (const [k, v] of Object.entries(e)) {
        if (typeof v !== 'string') throw rangeError(where, `__metadata__[${JSON.stringify(k)}] must be a string, got ${JSON.stringify(v)}`);
      }
      metadata = e;
      continue;
    }
    const what = `tensor ${JSON.stringify(name)}`;
    if (e === null || typeof e !== 'object' || Array.isArray(e)) throw rangeError(where, `${what}: the entry must be an object { dtype, shape, data_offsets }`);
    const { dtype, shape, data_offsets: offs } = e;
    if (typeof dtype !== 'string') throw rangeError(where, `${what}: dtype is missing or not a string`);
    const info = DTYPES[dtype];
    if (!info) throw rangeError(where, `${what}: unknown dtype ${JSON.stringify(dtype)}; supported: ${Object.keys(DTYPES).join(', ')}`);
    if (!Array.isArray(shape) || shape.some((d) => !Number.isSafeInteger(d) || d < 0)) {
      throw rangeError(where, `${what}: shape must be an array of non-negative integers, got ${JSON.stringify(shape)}`);
    }
    if (!Array.isArray(offs) || offs.length !== 2 || offs.some((o) => !Number.isSafeInteger(o) || o < 0)) {
      throw rangeError(where, `${what}: data_offsets must be [begin, end] (non-negative integers), got ${JSON.stringify(offs)}`);
    }
    const [begin, end] = offs;
    if (end < begin) throw rangeError(where, `${what}: data_offsets [${begin}, ${end}] end before they begin`);
    if (end > dataBytes) {
      throw rangeError(where, `${what}: data_offsets [${begin}, ${end}] lie outside the data, which has ${dataBytes} bytes (truncated file or a header that lies about offsets)`);
    }
    let count = 1;
    for (const d of shape) count *= d;
    if (count * info.size !== end - begin) {
      throw rangeError(where, `${what}: shape [${shape.join(',')}] of ${dtype} needs ${count} × ${info.size} = ${count * info.size} bytes, but data_offsets [${begin}, ${end}] span ${end - begin}`);
    }
    entries.push({ name, dtype, shape: shape.slice(), begin, end, count });
  }
  const sorted = entries.slice().sort((a, b) => a.begin - b.begin || a.end - b.end);
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1];
    const b = sorted[i];
    if (b.begin < a.end && b.end > b.begin) {
      throw rangeError(where, `tensors ${JSON.stringify(a.name)} [${a.begin}, ${a.end}] and ${JSON.stringify(b.name)} [${b.begin}, ${b.end}] overlap`);
    }
  }
  return { entries, metadata };
}

/** Decodes one validated entry from the bytes of its block. */
export function decodeEntry(where, entry, block, copy = false) {
  return { data: decode(where, `tensor ${JSON.stringify(entry.name)}`, entry.dtype, block, entry.count, { copy }), shape: entry.shape.slice(), dtype: entry.dtype };
}

function pickEntries(where, entries, names) {
  if (!names) return entries;
  const byName = new Map(entries.map((e) => [e.name, e]));
  return names.map((n) => {
    const e = byName.get(n);
    if (!e) throw rangeError(where, `the file has no tensor ${JSON.stringify(n)} (options.names)`);
    return e;
  });
}

/**
 * Reads a whole safetensors file held in memory.
 * @param {ArrayBuffer|ArrayBufferView} bytes
 * @param {{ names?: string[], copy?: boolean, maxHeaderBytes?: number }} [options]
 * @returns {{ tensors: Record<string, {data, shape, dtype}>, metadata: Record<string,string>|null }}
 */
export function readSafetensors(bytes, options) {
  const where = 'readSafetensors';
  const opts = checkReadOptions(where, options);
  const u8 = asBytes(where, bytes);
  const n = safetensorsHeaderLength(where, u8, u8.byteLength, opts.maxHeaderBytes);
  const start = 8 + n;
  const { entries, metadata } = parseSafetensorsHeader(where, u8.subarray(8, start), u8.byteLength - start);
  /** @type {Record<string, any>} */
  const tensors = {};
  for (const e of pickEntries(where, entries, opts.names)) {
    tensors[e.name] = decodeEntry(where, e, u8.subarray(start + e.begin, start + e.end), opts.copy);
  }
  return { tensors, metadata };
}

/**
 * Lists a safetensors file without reading its data: `source` is a Blob (a
 * File from a drop or an <input>) or bytes in memory. Reads only the header
 * (File.slice); `read(names)` then reads only the named tensors' bytes, one
 * block each.
 * @returns {Promise<{ entries, metadata, fileSize, read(names?: string[]): Promise<Record<string, {data, shape, dtype}>> }>}
 */
export async function openSafetensors(source, options) {
  const where = 'openSafetensors';
  const opts = checkReadOptions(where, options, ['maxHeaderBytes']);
  // A Blob or File, or anything with size and slice(a, b) → Blob.
  const isBlob = (typeof Blob === 'function' && source instanceof Blob)
    || (source !== null && typeof source === 'object' && typeof source.size === 'number' && typeof source.slice === 'function' && !ArrayBuffer.isView(source));
  const mem = isBlob ? null : asBytes(where, source);
  const fileSize = isBlob ? source.size : mem.byteLength;
  const slice = isBlob
    ? async (a, b) => new Uint8Array(await source.slice(a, b).arrayBuffer())
    : async (a, b) => mem.subarray(a, b);
  const n = safetensorsHeaderLength(where, await slice(0, 8), fileSize, opts.maxHeaderBytes);
  const start = 8 + n;
  const { entries, metadata } = parseSafetensorsHeader(where, await slice(8, start), fileSize - start);
  return {
    entries: entries.map(({ name, dtype, shape, begin, end }) => ({ name, dtype, shape: shape.slice(), byteLength: end - begin })),
    metadata,
    fileSize,
    async read(names) {
      /** @type {Record<string, any>} */
      const out = {};
      for (const e of pickEntries(`${where}().read`, entries, names)) {
        out[e.name] = decodeEntry(where, e, await slice(start + e.begin, start + e.end), false);
      }
      return out;
    },
  };
}

/**
 * Writes tensors (name → { data, shape, dtype? }; dtype defaults to F32 for
 * float data and I32 for an Int32Array) and optional string metadata as a
 * safetensors file. Tensors are laid out by element size, largest first, so
 * each starts at a multiple of its element size; the header is padded with
 * spaces to a multiple of 8 bytes.
 * @returns {Uint8Array}
 */
export function writeSafetensors(tensors, metadata) {
  const where = 'writeSafetensors';
  if (tensors === null || typeof tensors !== 'object' || Array.isArray(tensors)) {
    throw typeError(where, 'tensors must be an object mapping names to tensors { data, shape, dtype? }');
  }
  if (metadata !== undefined && metadata !== null) {
    if (typeof metadata !== 'object' || Array.isArray(metadata)) throw typeError(where, 'metadata must be an object of string values');
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== 'string') throw typeError(where, `metadata[${JSON.stringify(k)}] must be a string (safetensors metadata is string → string), got ${typeof v}`);
    }
  }
  const items = [];
  for (const name of Object.keys(tensors)) {
    if (name === '__metadata__') throw rangeError(where, '"__metadata__" is reserved for the metadata; pass it as the second argument');
    items.push({ name, begin: 0, end: 0, ...checkWritable(where, `tensors[${JSON.stringify(name)}]`, tensors[name]) });
  }
  const order = items.map((t, i) => i).sort((a, b) => DTYPES[items[b].dtype].size - DTYPES[items[a].dtype].size || a - b);
  const header = {};
  if (metadata) header.__metadata__ = { ...metadata };
  let offset = 0;
  for (const i of order) {
    const t = items[i];
    t.begin = offset;
    offset += t.count * DTYPES[t.dtype].size;
    t.end = offset;
  }
  for (const t of items) header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [t.begin, t.end] };
  let json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + padded + offset);
  out.fill(0x20, 8 + json.length, 8 + padded);
  out.set(json, 8);
  json = null;
  new DataView(out.buffer).setUint32(0, padded % 2 ** 32, true);
  new DataView(out.buffer).setUint32(4, Math.floor(padded / 2 ** 32), true);
  const start = 8 + padded;
  for (const t of items) {
    encodeInto(where, `tensors[${JSON.stringify(t.name)}]`, t.dtype, t.data, out.subarray(start + t.begin, start + t.end));
  }
  return out;
}

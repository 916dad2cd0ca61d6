// lab.loadModel's GGUF path (llama.cpp's format, read by web/lib/io/gguf.js):
// the input recognised by its magic, the header read (only the header: a
// File is sliced, never read whole), the family and config from the
// metadata through the family tables' gguf sections (families/gguf.js), the
// tensors as loadModel's file entries, and the tokenizer from
// tokenizer.ggml.* (gguf-tokenizer.js). load.js then plans, checks and
// streams the tensors as it does a safetensors file's.
//
// Types: F32, F16 and BF16 go in as the safetensors path takes them (a file
// whose matrices are all F16 keeps its projections in 16 bits); Q8_0, Q4_0,
// Q4_K and Q6_K matrices are kept as the file's blocks (plan.js
// keptQuantKind, load.js: the core's GEMV and GEMM read them); under dtype
// 'float32', or where a row is not whole blocks, they are dequantised to
// float32 row by row as they are streamed (entry.decode: io/ggml-types.js,
// llama.cpp's dequantize_row_*).
import { rangeError, typeError } from '../errors.js';
import { parseGgufHeader, GGUF_MAGIC } from '../io/gguf.js';
import { dequantizeGgml, DEQUANTIZABLE } from '../io/ggml-types.js';
import { ggufFamily } from './families/index.js';
import { tokenizerJsonOf } from './gguf-tokenizer.js';

const WHERE = 'loadModel';
/** Types loadModel converts itself (io/dtypes.js decode); the other DEQUANTIZABLE ones go through dequantizeGgml. */
const PLAIN = new Set(['F32', 'F16', 'BF16']);
/** The first header read; it grows ×4 until the header parses. */
const FIRST_HEADER_BYTES = 1 << 20;

function isBlobLike(v) {
  return (typeof Blob === 'function' && v instanceof Blob)
    || (v !== null && typeof v === 'object' && typeof v.size === 'number' && typeof v.slice === 'function' && typeof v.arrayBuffer === 'function');
}

function isBytes(v) {
  return v instanceof ArrayBuffer || ArrayBuffer.isView(v);
}

function u8(v) {
  return v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

function nameOf(v) {
  return v && typeof v.name === 'string' ? v.name.split('/').pop() : null;
}

/** Whether bytes or a Blob start with the magic 'GGUF'. */
async function hasMagic(v) {
  const head = isBlobLike(v) ? new Uint8Array(await v.slice(0, 4).arrayBuffer()) : u8(v).subarray(0, 4);
  return head.length === 4 && new DataView(head.buffer, head.byteOffset, 4).getUint32(0, true) === GGUF_MAGIC;
}

/**
 * loadModel's arguments when `source` is a GGUF input, else null:
 *   - a Uint8Array, ArrayBuffer, Blob or File that starts with 'GGUF';
 *   - a FileList or File[] that holds a *.gguf file and no other weights
 *     (.safetensors, .bin, .pth), with its tokenizer.json if present;
 *   - { weights: <a GGUF file>, tokenizer?, dtype?, signal?, onProgress? }.
 * Bytes or a Blob that are not GGUF get an Error: a file alone must be one.
 * @returns {Promise<object|null>} { weights, tokenizer?, dtype?, signal?, onProgress? }
 */
export async function ggufArgs(source, isFileList) {
  if (isBytes(source) || isBlobLike(source)) {
    if (await hasMagic(source)) return { weights: source };
    throw typeError(WHERE, "a file given alone must be a GGUF file (its first bytes are not 'GGUF'); for a Hugging Face checkpoint pass { config, weights, tokenizer } or the folder's files");
  }
  if (isFileList(source)) {
    const files = Array.from(source);
    const ggufs = files.filter((f) => /\.gguf$/i.test(nameOf(f) ?? ''));
    if (ggufs.length === 0 || files.some((f) => /\.(safetensors|bin|pth)$/i.test(nameOf(f) ?? ''))) return null;
    if (ggufs.length > 1) {
      throw rangeError(WHERE, `the files hold ${ggufs.length} GGUF files (${ggufs.slice(0, 4).map(nameOf).join(', ')}); give one (split GGUF files are not supported)`);
    }
    const tokenizer = files.find((f) => nameOf(f) === 'tokenizer.json');
    return { weights: ggufs[0], ...(tokenizer ? { tokenizer } : {}) };
  }
  if (source !== null && typeof source === 'object' && !Array.isArray(source) && Object.hasOwn(source, 'weights')) {
    const w = source.weights;
    if ((isBytes(w) || isBlobLike(w)) && await hasMagic(w)) {
      if (source.config !== undefined) {
        throw typeError(WHERE, 'config was given with a GGUF file, whose config is its metadata; leave config out');
      }
      return { ...source };
    }
  }
  return null;
}

/** A random-access byte source over a Blob or bytes in memory. */
function byteSource(v, label) {
  if (isBlobLike(v)) return { label, size: v.size, read: async (a, b) => new Uint8Array(await v.slice(a, b).arrayBuffer()) };
  const bytes = u8(v);
  return { label, size: bytes.byteLength, read: async (a, b) => bytes.subarray(a, b) };
}

/** The header, read from a prefix of the file that grows until it holds it all. */
async function readHeader(src) {
  let n = Math.min(src.size, FIRST_HEADER_BYTES);
  for (;;) {
    const prefix = await src.read(0, n);
    try {
      return parseGgufHeader(prefix, src.size, `${WHERE}: ${src.label}`);
    } catch (err) {
      // A header longer than the prefix: read more, unless the file itself ends there.
      if (n >= src.size || !/past the end of the file/.test(err.message)) throw err;
      n = Math.min(src.size, n * 4);
    }
  }
}

/**
 * Opens a GGUF file for loadModel: { type, table, hfConfig, weights, tokenizerJson }.
 * `weights` is what files.js openWeights returns for safetensors:
 * { tensors: Map(name → entry), files, bytes, dtypes }, each entry
 * { name, dtype (the ggml type), shape (torch order), count, begin, end, source, decode? }.
 */
export async function openGgufModel(file) {
  const src = byteSource(file, nameOf(file) ?? 'model.gguf');
  const header = await readHeader(src);
  const tensors = new Map();
  for (const t of header.tensors) {
    if (!DEQUANTIZABLE.includes(t.ggmlType)) {
      throw rangeError(WHERE, `${src.label}: tensor ${JSON.stringify(t.name)} has ggml type ${t.ggmlType}, which loadModel does not read; allowed: ${DEQUANTIZABLE.join(', ')}`);
    }
    const entry = { name: t.name, dtype: t.ggmlType, shape: t.shape, count: t.count, begin: t.begin, end: t.end, source: src };
    if (!PLAIN.has(t.ggmlType)) entry.decode = (bytes, n) => dequantizeGgml(WHERE, t.name, t.ggmlType, bytes, n);
    tensors.set(t.name, entry);
  }
  const names = new Set(tensors.keys());
  const { type, arch, table, hfConfig } = ggufFamily(header.metadata, names);
  // The vocabulary: the metadata's, else the token list's, else the word table's rows.
  const tokens = header.metadata.get('tokenizer.ggml.tokens');
  if (hfConfig.vocab_size === undefined) hfConfig.vocab_size = Array.isArray(tokens) ? tokens.length : tensors.get('token_embd.weight')?.shape[0];
  for (const key of ['bos', 'eos']) {
    const id = header.metadata.get(`tokenizer.ggml.${key}_token_id`);
    if (Number.isSafeInteger(id)) hfConfig[`${key}_token_id`] = id;
  }
  const tokenizerJson = tokenizerJsonOf(header.metadata);
  // (kept for model.save's format 'gguf', which writes them back)
  const tokenizerMeta = [...header.metadata].filter(([k]) => k.startsWith('tokenizer.ggml.'));
  const dtypes = [...new Set([...tensors.values()].map((e) => e.dtype))];
  return {
    type, arch, table, hfConfig, tokenizerJson, tokenizerMeta, version: header.version,
    weights: { tensors, files: [src.label], bytes: src.size, dtypes },
  };
}

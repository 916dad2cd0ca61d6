// The files of a Hugging Face model folder, read locally: config.json and
// tokenizer.json (parsed, or as a Blob/File/ArrayBuffer/Uint8Array, or a URL
// string the caller chose), and the weights (model.safetensors, or shards with
// model.safetensors.index.json; or PyTorch's pytorch_model.bin, or its shards
// with pytorch_model.bin.index.json: io/torch.js). Only the headers are read
// here (a torch checkpoint's zip directory and data.pkl, or the pickles of the
// legacy format); web/lib/model/load.js
// streams the tensors into wasm memory afterwards.
//
// JSON is parsed with a reviver that drops `__proto__` keys (JSON.parse
// already makes them own properties; dropping them keeps a later spread or
// merge from ever treating one as a prototype).
import { rangeError, typeError, describe } from '../errors.js';
import { safetensorsHeaderLength, parseSafetensorsHeader } from '../io/safetensors.js';
import { isTorchCheckpoint, openTorchCheckpoint } from '../io/torch.js';

const WHERE = 'loadModel';

export function isBlob(v) {
  return (typeof Blob === 'function' && v instanceof Blob)
    || (v !== null && typeof v === 'object' && typeof v.size === 'number' && typeof v.slice === 'function' && typeof v.arrayBuffer === 'function');
}

function isBytes(v) {
  return v instanceof ArrayBuffer || ArrayBuffer.isView(v);
}

function asU8(v) {
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

const dropProto = (key, value) => (key === '__proto__' ? undefined : value);

/**
 * JSON.parse without prototype keys; `what` names the file in errors. The
 * reviver runs only when the text could hold such a key (it has "__proto__",
 * or a \u escape that might spell it): a reviver call per value triples the
 * parse of a 262k-token tokenizer.json (docs/models.md, tokenizer load time).
 */
export function parseJson(text, what) {
  try {
    return text.includes('__proto__') || text.includes('\\u') ? JSON.parse(text, dropProto) : JSON.parse(text);
  } catch (err) {
    throw rangeError(WHERE, `${what} is not valid JSON (${err.message})`);
  }
}

/**
 * A JSON file given as an object, its text (a string starting with '{'),
 * its bytes, a Blob/File or a URL string (fetched: the caller chose it).
 * Returns the parsed object.
 */
/**
 * @param {any} source
 * @param {string} what
 * @param {{ signal?: AbortSignal }} [options]
 */
export async function readJson(source, what, { signal = undefined } = {}) {
  if (typeof source === 'string' && /^\s*\{/.test(source)) return parseJson(source, what);
  if (typeof source === 'string') {
    if (typeof fetch !== 'function') throw typeError(WHERE, `${what} is a string, taken as a URL, but this environment has no fetch()`);
    let res;
    try {
      res = await fetch(source, { signal });
    } catch (err) {
      if (err && err.name === 'AbortError') throw err;
      throw typeError(WHERE, `${what}: ${JSON.stringify(source.slice(0, 80))} is neither JSON text nor a URL that could be fetched (${err && err.message})`);
    }
    if (!res.ok) throw rangeError(WHERE, `${what}: fetching ${JSON.stringify(source)} failed with HTTP ${res.status}`);
    return parseJson(await res.text(), what);
  }
  if (isBlob(source)) return parseJson(await source.text(), what);
  if (isBytes(source)) {
    let text;
    try {
      text = utf8.decode(asU8(source));
    } catch {
      throw rangeError(WHERE, `${what} is not valid UTF-8`);
    }
    return parseJson(text, what);
  }
  if (source !== null && typeof source === 'object' && !Array.isArray(source)) {
    // A parsed object: copied through JSON so that nothing the caller holds
    // (getters, prototypes) leaks into the model.
    return parseJson(JSON.stringify(source), what);
  }
  throw typeError(WHERE, `${what} must be the parsed JSON object, its bytes, a Blob/File or a URL string, got ${describe(source)}`);
}

/** A random-access byte source over a Blob or bytes in memory. */
function byteSource(v, label) {
  if (isBlob(v)) {
    return { label, size: v.size, read: async (a, b) => new Uint8Array(await v.slice(a, b).arrayBuffer()) };
  }
  if (isBytes(v)) {
    const u8 = asU8(v);
    return { label, size: u8.byteLength, read: async (a, b) => u8.subarray(a, b) };
  }
  throw typeError(WHERE, `${label} must be a Blob/File, an ArrayBuffer or a Uint8Array, got ${describe(v)}`);
}

/** Reads one safetensors header (or a torch checkpoint's directory): { label, entries: [{ name, dtype, shape, count, begin, end, source }] } with absolute offsets. */
async function openShard(src, unnamed = false) {
  const prefix = await src.read(0, Math.min(8, src.size));
  // PyTorch's torch.save (pytorch_model.bin): one branch, io/torch.js.
  if (isTorchCheckpoint(prefix)) {
    if (unnamed) src.label = 'pytorch_model.bin'; // not the default 'model.safetensors'
    return { label: src.label, metadata: null, entries: (await openTorchCheckpoint(`${WHERE}: ${src.label}`, src, prefix)).entries };
  }
  const where = `${WHERE}: ${src.label}`;
  const n = safetensorsHeaderLength(where, prefix, src.size);
  const start = 8 + n;
  const { entries, metadata } = parseSafetensorsHeader(where, await src.read(8, start), src.size - start);
  return {
    label: src.label,
    metadata,
    entries: entries.map((e) => ({ ...e, begin: start + e.begin, end: start + e.end, source: src })),
  };
}

function nameOf(v) {
  return v && typeof v.name === 'string' ? v.name.split('/').pop() : null;
}

/**
 * The weights argument → { tensors: Map(name → entry), files, bytes }.
 * Accepts one file, or an array of shards plus (optionally) their index (a
 * parsed object with weight_map, or a File named *.index.json). With an
 * index, shards are matched by File name (or, unnamed, in the index's file
 * order) and every tensor must be where the index says.
 */
export async function openWeights(weights) {
  const list = Array.isArray(weights) ? weights.slice() : [weights];
  if (list.length === 0) throw typeError(WHERE, 'weights is an empty array; give model.safetensors (or pytorch_model.bin) or its shards');
  let index = null;
  const shards = [];
  for (const item of list) {
    const name = nameOf(item);
    if (name && name.endsWith('.index.json')) index = await readJson(item, name);
    else if (item && typeof item === 'object' && !isBlob(item) && !isBytes(item) && 'weight_map' in item) index = await readJson(item, 'the index');
    else shards.push(item);
  }
  if (shards.length === 0) throw typeError(WHERE, 'weights holds an index but no shard (.safetensors or .bin)');
  let labels = shards.map((s, i) => nameOf(s) ?? (shards.length === 1 ? 'model.safetensors' : `shard ${i}`));
  let weightMap = null;
  if (index) {
    weightMap = index.weight_map;
    if (weightMap === null || typeof weightMap !== 'object' || Array.isArray(weightMap)) {
      throw rangeError(WHERE, 'the index (model.safetensors.index.json or pytorch_model.bin.index.json) has no "weight_map" object');
    }
    const files = [...new Set(Object.values(weightMap))];
    if (files.some((f) => typeof f !== 'string')) throw rangeError(WHERE, 'the index: every weight_map value must be a file name');
    const named = shards.every((s) => nameOf(s));
    if (!named) {
      if (shards.length !== files.length) {
        throw rangeError(WHERE, `the index names ${files.length} shard files (${files.join(', ')}) but ${shards.length} unnamed shards were given`);
      }
      labels = files;
    }
    const missing = files.filter((f) => !labels.includes(f));
    if (missing.length) throw rangeError(WHERE, `the index needs shard files that were not given: ${missing.slice(0, 4).join(', ')}`);
  }
  const opened = [];
  let bytes = 0;
  for (let i = 0; i < shards.length; i++) {
    const src = byteSource(shards[i], labels[i]);
    bytes += src.size;
    opened.push(await openShard(src, shards.length === 1 && !index && !nameOf(shards[i])));
  }
  const tensors = new Map();
  for (const shard of opened) {
    for (const e of shard.entries) {
      if (tensors.has(e.name)) throw rangeError(WHERE, `tensor ${JSON.stringify(e.name)} is in both ${tensors.get(e.name).source.label} and ${shard.label}`);
      if (weightMap && Object.prototype.hasOwnProperty.call(weightMap, e.name) && weightMap[e.name] !== shard.label) {
        throw rangeError(WHERE, `tensor ${JSON.stringify(e.name)} is in ${shard.label}, but the index puts it in ${weightMap[e.name]}`);
      }
      tensors.set(e.name, e);
    }
  }
  if (weightMap) {
    const absent = Object.keys(weightMap).filter((n) => !tensors.has(n));
    if (absent.length) throw rangeError(WHERE, `the index lists tensors no shard holds: ${absent.slice(0, 4).join(', ')}${absent.length > 4 ? ` and ${absent.length - 4} more` : ''}`);
  }
  const dtypes = [...new Set([...tensors.values()].map((e) => e.dtype))];
  return { tensors, files: opened.map((s) => s.label), bytes, dtypes };
}

/** PyTorch weights of a folder (safetensors are preferred when both are there): pytorch_model.bin, or the index with its shards. */
function torchWeightsOf(byName) {
  if (byName.has('pytorch_model.bin')) return byName.get('pytorch_model.bin');
  const index = byName.get('pytorch_model.bin.index.json');
  if (index) return [index, ...[...byName.entries()].filter(([n]) => /^pytorch_model-\d+-of-\d+\.bin$/.test(n)).map(([, f]) => f)];
  return null;
}

/**
 * A FileList or an array of Files named as a Hugging Face folder names them
 * → { config, weights, tokenizer } for loadModel.
 */
export function splitFolder(files) {
  const list = Array.from(files);
  const byName = new Map();
  for (const f of list) {
    const n = nameOf(f);
    if (!n) throw typeError(WHERE, `a file list's entries must be Files with names, got ${describe(f)}`);
    byName.set(n, f);
  }
  const config = byName.get('config.json');
  if (!config) throw rangeError(WHERE, `the files hold no config.json (got ${[...byName.keys()].slice(0, 6).join(', ')})`);
  const index = byName.get('model.safetensors.index.json');
  let weights;
  const shards = list.filter((f) => /\.safetensors$/.test(nameOf(f)));
  if (byName.has('model.safetensors')) weights = byName.get('model.safetensors');
  else if (index) {
    weights = [index, ...shards];
  } else if (shards.length === 0 && torchWeightsOf(byName)) {
    weights = torchWeightsOf(byName);
  } else {
    if (shards.length !== 1) throw rangeError(WHERE, `the files hold no model.safetensors${shards.length ? ` (and ${shards.length} .safetensors files without model.safetensors.index.json)` : ' (nor pytorch_model.bin)'}`);
    weights = shards[0];
  }
  // SentencePiece models beside no tokenizer.json (Marian's source.spm /
  // target.spm): the model loads and says what to convert.
  const sentencePiece = [...byName.keys()].filter((n) => /\.spm$/.test(n));
  return { config, weights, tokenizer: byName.get('tokenizer.json'), ...(sentencePiece.length ? { sentencePiece } : {}) };
}

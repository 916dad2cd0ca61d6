// PyTorch checkpoints (pytorch_model.bin, .pth, .pt) as torch.save writes
// them since torch 1.6 — a zip (io/zip.js) of one folder <folder>/ holding
// data.pkl (the state dict, read by the restricted unpickler of
// io/torch-pickle.js), data/<key> (each storage's raw little-endian bytes),
// byteorder ('little'; absent in older files, which are little-endian) and
// version; the folder is 'archive' or, in torch < 2, the file's own name —
// and in the legacy format of torch < 1.6 (openLegacyTorch: five pickles in
// a row, then the storages' bytes), which many older hub checkpoints hold.
//
// Tensors are listed as the safetensors reader lists them, { name, dtype,
// shape, count, begin, end, source }: `source` is a byte source and [begin,
// end) the tensor's contiguous bytes in it. A contiguous tensor (the usual
// case, also at a storage offset, also sharing a storage with another: tied
// weights) is a range of the file itself; a non-contiguous view (a
// transposed or sliced tensor saved as is) gets a source of its own that
// gathers its elements into contiguous bytes when first read.
//
// Refused with an Error: big-endian storages, entries outside the folder, any
// pickle global or opcode outside the allowed set, storages whose size does
// not match their element count, views that reach past their storage.
import { rangeError } from '../errors.js';
import { DTYPES, asBytes, decode } from './dtypes.js';
import { openZip, isZip } from './zip.js';
import { unpickle, unpickleAt, PyDict, TorchTensor, STORAGE_DTYPES } from './torch-pickle.js';

export { isZip };

/** Largest data.pkl accepted (bytes): a state dict's pickle is kilobytes per tensor. */
const MAX_PICKLE_BYTES = 256 * 2 ** 20;
/** Largest non-contiguous view gathered into contiguous bytes (the wasm heap holds 2 GiB). */
const MAX_GATHER_BYTES = 2 ** 31;

/**
 * True when `prefix` is the start of the pre-1.6 torch.save format: a pickle
 * of protocol 2 whose first value is torch's magic number, a 10-byte LONG1
 * (80 02 8a 0a; as a safetensors length prefix that would be a 177 MB header).
 */
export function isLegacyTorch(prefix) {
  return prefix.length >= 4 && prefix[0] === 0x80 && prefix[1] === 0x02 && prefix[2] === 0x8a && prefix[3] === 0x0a;
}

function contiguousStrides(shape) {
  const s = new Array(shape.length);
  let k = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = k;
    k *= shape[i];
  }
  return s;
}

function isContiguous(shape, stride) {
  const want = contiguousStrides(shape);
  return shape.every((d, i) => d === 1 || stride[i] === want[i]);
}

/** A byte source of one strided view, gathered into contiguous bytes on first read. */
function gatherSource(label, src, storageBegin, t, elem) {
  const count = t.shape.reduce((a, b) => a * b, 1);
  let low = t.offset;
  let high = t.offset;
  t.shape.forEach((d, i) => { if (d > 0) high += (d - 1) * t.stride[i]; });
  let cache = null;
  return {
    label,
    size: count * elem,
    async read(a, b) {
      if (!cache) {
        const raw = await src.read(storageBegin + low * elem, storageBegin + (high + 1) * elem);
        cache = new Uint8Array(count * elem);
        // Odometer over all but the last dimension; the last one is a strided run.
        const nd = t.shape.length;
        const inner = t.shape[nd - 1];
        const step = t.stride[nd - 1] * elem;
        const idx = new Array(nd).fill(0);
        let k = 0;
        for (let row = 0; row < count / inner; row++) {
          let off = t.offset - low;
          for (let i = 0; i < nd - 1; i++) off += idx[i] * t.stride[i];
          let q = off * elem;
          for (let j = 0; j < inner; j++, q += step) {
            for (let e = 0; e < elem; e++) cache[k++] = raw[q + e];
          }
          for (let i = nd - 2; i >= 0; i--) {
            if (++idx[i] < t.shape[i]) break;
            idx[i] = 0;
          }
        }
      }
      return cache.subarray(a, b);
    },
  };
}

/**
 * The persistent-id handler of a checkpoint's pickle: each ('storage',
 * <storage class>, key, location, numel) — in the legacy format with a sixth
 * item, view_metadata, None unless the storage is a view of an older torch —
 * becomes one { key, dtype, numel }, the same object for the same key.
 */
function storageRegistry(where, legacy) {
  const storages = new Map();
  const items = legacy ? 6 : 5;
  const persistentLoad = (pid) => {
    const [kind, cls, key, , numel, view] = pid;
    if (kind !== 'storage' || pid.length !== items) throw rangeError(where, `bad pickle: a persistent id must be ('storage', <storage class>, key, location, numel${legacy ? ', view_metadata' : ''}), got one of ${pid.length} items starting ${JSON.stringify(String(kind)).slice(0, 30)}`);
    if (!cls || typeof cls.storageClass !== 'string') throw rangeError(where, 'bad pickle: a persistent id\'s storage class is not one of torch\'s storage classes');
    if (typeof key !== 'string' || !/^[\w.-]+$/.test(key)) throw rangeError(where, `bad pickle: storage key ${JSON.stringify(key)} must be a plain name`);
    if (!Number.isSafeInteger(numel) || numel < 0) throw rangeError(where, `bad pickle: storage ${JSON.stringify(key)} has element count ${String(numel)}`);
    if (legacy && view !== null) throw rangeError(where, `storage ${JSON.stringify(key)} is a view of another storage (the old view_metadata), which this reader does not read; re-save the checkpoint with a current torch.save or as safetensors`);
    const dtype = STORAGE_DTYPES[cls.storageClass];
    const old = storages.get(key);
    if (old) {
      if (old.dtype !== dtype || old.numel !== numel) throw rangeError(where, `storage ${JSON.stringify(key)} is named twice with different types or sizes (${old.dtype}×${old.numel}, ${dtype}×${numel})`);
      return old;
    }
    const st = { key, dtype, numel };
    storages.set(key, st);
    return st;
  };
  return { storages, persistentLoad };
}

/** The state dict's tensors as entries over the storages' places ({ src, begin } by key). */
function tensorEntries(where, root, placed) {
  if (!(root instanceof PyDict)) throw rangeError(where, 'the checkpoint does not hold a state dict (a dict of name → tensor) at its top level');
  const entries = [];
  for (const [name, t] of root.map) {
    if (typeof name !== 'string') throw rangeError(where, `the state dict has a key that is not a string (${typeof name})`);
    if (!(t instanceof TorchTensor)) {
      const kind = t instanceof PyDict ? 'a dict' : Array.isArray(t) ? 'a list' : t === null ? 'None' : typeof t;
      throw rangeError(where, `state dict entry ${JSON.stringify(name)} is ${kind}, not a tensor; loadModel reads a flat state dict (model.state_dict()), not a training checkpoint that nests one`);
    }
    const { dtype } = t.storage;
    const elem = DTYPES[dtype].size;
    const count = t.shape.reduce((a, b) => a * b, 1);
    const { src: s, begin } = placed.get(t.storage.key);
    if (count === 0 || isContiguous(t.shape, t.stride)) {
      const b = begin + t.offset * elem;
      entries.push({ name, dtype, shape: t.shape, count, begin: b, end: b + count * elem, source: s });
    } else {
      // (a stride-0 view of a small storage can claim any size: gathered, it must fit in memory)
      if (count * elem > MAX_GATHER_BYTES) throw rangeError(where, `tensor ${JSON.stringify(name)} is a non-contiguous view of ${count * elem} bytes, more than the ${MAX_GATHER_BYTES} this reader gathers`);
      entries.push({ name, dtype, shape: t.shape, count, begin: 0, end: count * elem, source: gatherSource(s.label, s, begin, t, elem) });
    }
  }
  return entries;
}

/** torch's legacy magic number, the first pickle of a pre-1.6 file (torch/serialization.py MAGIC_NUMBER). */
const LEGACY_MAGIC = 0x1950a86a20f9469cfc6cn;
const LEGACY_PROTOCOL = 1001;

/**
 * Opens a checkpoint in the legacy format of torch < 1.6 (still what
 * torch.save writes with _use_new_zipfile_serialization=False): five pickles
 * in a row — the magic number, the protocol version 1001, sys_info
 * ({little_endian, type_sizes, …}), the state dict, the sorted list of storage
 * keys — then each storage in that order as an 8-byte little-endian element
 * count and its raw bytes. Returns { entries } as openTorch does. Reads the
 * pickles (from the first MB, more if they are longer) and 8 bytes per
 * storage; no tensor data.
 * @param {string} where
 * @param {{ label: string, size: number, read(a: number, b: number): Promise<Uint8Array> }} src
 * @param {number} [firstRead] bytes read first for the pickles (quadrupled while they are cut short)
 */
export async function openLegacyTorch(where, src, firstRead = 2 ** 20) {
  const { storages, persistentLoad } = storageRegistry(where, true);
  const noPid = () => { throw rangeError(where, 'bad pickle: a persistent id outside the state dict'); };
  let headBytes = Math.min(src.size, firstRead);
  let parsed = null;
  for (;;) {
    const head = await src.read(0, headBytes);
    storages.clear();
    try {
      const magic = unpickleAt(where, head, 0, noPid);
      if (magic.value !== LEGACY_MAGIC) throw rangeError(where, 'not a torch.save checkpoint: a pickle that does not start with torch\'s magic number');
      const protocol = unpickleAt(where, head, magic.end, noPid);
      if (protocol.value !== LEGACY_PROTOCOL) throw rangeError(where, `legacy torch checkpoint of protocol version ${String(protocol.value)}; this reader reads ${LEGACY_PROTOCOL}`);
      const info = unpickleAt(where, head, protocol.end, noPid);
      const little = info.value instanceof PyDict ? info.value.map.get('little_endian') : undefined;
      if (little === false) throw rangeError(where, 'this checkpoint was saved on a big-endian machine (sys_info little_endian False); this reader reads little-endian storages only: re-save it on a little-endian machine or as safetensors');
      if (little !== true) throw rangeError(where, 'legacy torch checkpoint: its sys_info says nothing of little_endian');
      const main = unpickleAt(where, head, info.end, persistentLoad);
      const keys = unpickleAt(where, head, main.end, noPid);
      if (!Array.isArray(keys.value) || keys.value.some((k) => typeof k !== 'string')) throw rangeError(where, 'legacy torch checkpoint: the list of storage keys is not a list of strings');
      parsed = { root: main.value, keys: keys.value, end: keys.end };
    } catch (err) {
      if (err && err.truncated && headBytes < src.size && headBytes < MAX_PICKLE_BYTES) {
        headBytes = Math.min(src.size, headBytes * 4);
        continue;
      }
      throw err;
    }
    break;
  }
  const placed = new Map();
  let offset = parsed.end;
  for (const key of parsed.keys) {
    const st = storages.get(key);
    if (!st) throw rangeError(where, `legacy torch checkpoint: storage ${JSON.stringify(key)} is listed but no tensor uses it`);
    if (placed.has(key)) throw rangeError(where, `legacy torch checkpoint: storage ${JSON.stringify(key)} is listed twice`);
    if (offset + 8 > src.size) throw rangeError(where, `truncated legacy torch checkpoint: storage ${JSON.stringify(key)}'s size at byte ${offset} lies past the end (${src.size} bytes)`);
    const h = await src.read(offset, offset + 8);
    const dv = new DataView(h.buffer, h.byteOffset, 8);
    const numel = dv.getUint32(4, true) * 2 ** 32 + dv.getUint32(0, true);
    if (numel !== st.numel) throw rangeError(where, `legacy torch checkpoint: storage ${JSON.stringify(key)} has ${numel} elements on file, but the pickle says ${st.numel}`);
    const begin = offset + 8;
    const end = begin + numel * DTYPES[st.dtype].size;
    if (end > src.size) throw rangeError(where, `truncated legacy torch checkpoint: storage ${JSON.stringify(key)} [${begin}, ${end}) runs past the end (${src.size} bytes)`);
    placed.set(key, { src, begin });
    offset = end;
  }
  const missing = [...storages.keys()].filter((k) => !placed.has(k));
  if (missing.length) throw rangeError(where, `legacy torch checkpoint: storage ${JSON.stringify(missing[0])} is used but not in the list of storages`);
  return { entries: tensorEntries(where, parsed.root, placed) };
}

/**
 * Opens a torch.save checkpoint in `src` ({ label, size, read(a, b) }):
 * returns { entries: [{ name, dtype, shape, count, begin, end, source }],
 * folder }. Reads the zip directory, data.pkl, byteorder and each storage's
 * local header; no tensor data (except deflated storages, inflated here).
 * @param {string} where
 */
export async function openTorch(where, src) {
  const zip = await openZip(where, src);
  const pkls = zip.entries.filter((e) => /^[^/]+\/data\.pkl$/.test(e.name));
  if (pkls.length !== 1) {
    throw rangeError(where, pkls.length ? `the zip holds ${pkls.length} data.pkl files (${pkls.map((e) => e.name).join(', ')}); a torch.save checkpoint holds one` : 'this zip is not a torch.save checkpoint: it holds no <folder>/data.pkl');
  }
  const folder = pkls[0].name.slice(0, -'/data.pkl'.length);
  for (const e of zip.entries) {
    // A directory entry ('archive/', 'archive/data/': other zip tools add them) names nothing to read.
    const dir = e.size === 0 && e.name.endsWith('/');
    const parts = (dir ? e.name.slice(0, -1) : e.name).split('/');
    if (parts[0] !== folder || parts.length < (dir ? 1 : 2) || parts.some((s) => s === '..' || s === '') || e.name.includes('\\')) {
      throw rangeError(where, `zip entry ${JSON.stringify(e.name)} lies outside the checkpoint's folder ${JSON.stringify(folder + '/')}`);
    }
  }
  const order = zip.entry(`${folder}/byteorder`);
  if (order) {
    const text = new TextDecoder().decode(await zip.bytes(order));
    if (text === 'big') throw rangeError(where, 'this checkpoint was saved on a big-endian machine (byteorder "big"); this reader reads little-endian storages only: re-save it on a little-endian machine or as safetensors');
    if (text !== 'little') throw rangeError(where, `the checkpoint's byteorder record is ${JSON.stringify(text.slice(0, 20))}; expected "little" or "big"`);
  }
  if (pkls[0].size > MAX_PICKLE_BYTES) throw rangeError(where, `data.pkl is ${pkls[0].size} bytes, over the limit of ${MAX_PICKLE_BYTES}`);
  const pkl = await zip.bytes(pkls[0]);

  const { storages, persistentLoad } = storageRegistry(where, false);
  const root = unpickle(where, pkl, persistentLoad);

  // Each storage's bytes in the file (or, deflated, in memory).
  const placed = new Map();
  for (const s of storages.values()) {
    const e = zip.entry(`${folder}/data/${s.key}`);
    if (!e) throw rangeError(where, `storage ${JSON.stringify(s.key)} has no record ${folder}/data/${s.key} in the zip`);
    const want = s.numel * DTYPES[s.dtype].size;
    if (e.size !== want) throw rangeError(where, `storage ${JSON.stringify(s.key)} holds ${e.size} bytes, but ${s.numel} ${s.dtype} elements need ${want}`);
    if (e.method === 0) {
      const { begin } = await zip.data(e);
      placed.set(s.key, { src, begin });
    } else {
      const bytes = await zip.bytes(e);
      placed.set(s.key, { src: { label: src.label, size: bytes.length, read: async (a, b) => bytes.subarray(a, b) }, begin: 0 });
    }
  }

  return { entries: tensorEntries(where, root, placed), folder };
}

/** True when `prefix` (a file's first bytes, 4 at least) starts a torch.save checkpoint of either format. */
export function isTorchCheckpoint(prefix) {
  return isZip(prefix) || isLegacyTorch(prefix);
}

/** Opens a torch.save checkpoint of either format (isTorchCheckpoint(prefix)): { entries }. */
export async function openTorchCheckpoint(where, src, prefix) {
  return isZip(prefix) ? openTorch(where, src) : openLegacyTorch(where, src);
}

function sourceOf(where, v) {
  const blob = (typeof Blob === 'function' && v instanceof Blob)
    || (v !== null && typeof v === 'object' && typeof v.size === 'number' && typeof v.slice === 'function' && !ArrayBuffer.isView(v) && !(v instanceof ArrayBuffer));
  if (blob) return { label: v.name ?? 'checkpoint', size: v.size, read: async (a, b) => new Uint8Array(await v.slice(a, b).arrayBuffer()) };
  const u8 = asBytes(where, v);
  return { label: 'checkpoint', size: u8.byteLength, read: async (a, b) => u8.subarray(a, b) };
}

/**
 * Lists a torch.save checkpoint (either format) without reading its tensors,
 * as openSafetensors lists a safetensors file: { entries: [{ name, dtype,
 * shape, byteLength }], metadata: null, fileSize, read(names?) } where
 * read() resolves to { name: { data (Float32Array or Int32Array, as
 * readSafetensors gives), shape, dtype } }.
 * @param {Blob|ArrayBuffer|ArrayBufferView} source
 */
export async function openTorchFile(source) {
  const where = 'openTorchFile';
  const src = sourceOf(where, source);
  const prefix = await src.read(0, Math.min(4, src.size));
  if (!isTorchCheckpoint(prefix)) throw rangeError(where, 'not a torch.save checkpoint: it starts neither with the zip magic PK\\x03\\x04 nor with the legacy format\'s pickled magic number');
  const { entries } = await openTorchCheckpoint(where, src, prefix);
  const byName = new Map(entries.map((e) => [e.name, e]));
  return {
    entries: entries.map((e) => ({ name: e.name, dtype: e.dtype, shape: e.shape.slice(), byteLength: e.end - e.begin })),
    metadata: null,
    fileSize: src.size,
    async read(names) {
      /** @type {Record<string, any>} */
      const out = {};
      for (const n of names ?? [...byName.keys()]) {
        const e = byName.get(n);
        if (!e) throw rangeError(`${where}().read`, `the file has no tensor ${JSON.stringify(n)}`);
        out[n] = { data: decode(where, `tensor ${JSON.stringify(n)}`, e.dtype, await e.source.read(e.begin, e.end), e.count, { copy: true }), shape: e.shape.slice(), dtype: e.dtype };
      }
      return out;
    },
  };
}

/**
 * Reads every tensor of a torch.save checkpoint held in memory (or a Blob):
 * { tensors: { name: { data: Uint8Array (contiguous little-endian bytes), shape, dtype } } }.
 * For tests and tools; loadModel streams the tensors instead.
 * @param {ArrayBuffer|ArrayBufferView|Blob} bytes
 */
export async function readTorchBytes(bytes, where = 'readTorch') {
  const src = sourceOf(where, bytes);
  const prefix = await src.read(0, Math.min(4, src.size));
  if (!isTorchCheckpoint(prefix)) {
    throw rangeError(where, 'not a torch.save checkpoint: it starts neither with the zip magic PK\\x03\\x04 nor with the legacy format\'s pickled magic number');
  }
  const { entries } = await openTorchCheckpoint(where, src, prefix);
  const tensors = {};
  for (const e of entries) tensors[e.name] = { data: await e.source.read(e.begin, e.end), shape: e.shape, dtype: e.dtype };
  return { tensors };
}

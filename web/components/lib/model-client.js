// A Hugging Face model folder on the page: listed from config.json and the
// safetensors headers (or a pytorch_model.bin's zip directory and data.pkl)
// alone (nothing else is read), then loaded and run in a
// Web Worker (web/model-worker.js). WorkerModel has the calls of the library's
// Model that the views use (forward, nextTokens, fillMask, headRoles,
// headScores, logitLens, attribute, patch, generate, encode, tokens, dispose),
// as Promises, so <attention-lab-model-view>
// draws a Model of this page's thread and one in the worker alike.
import { splitFolder, openWeights, readJson } from '../../lib/model/files.js';
import { architectureOf } from '../../lib/model/architectures.js';
import { memoryFit, plannedEntries, halfKindOf, publicConfig, keptQuantKind } from '../../lib/model/plan.js';
import { openGgufModel } from '../../lib/model/gguf.js';

const NAMES = /^(config\.json|tokenizer\.json|(model\.safetensors|pytorch_model\.bin)\.index\.json|.*\.safetensors|pytorch_model(-\d+-of-\d+)?\.bin|.*\.gguf)$/;
const GGUF_NAME = /\.gguf$/i;
/** Weight files whose reads are counted (headerBytes). */
const WEIGHT_FILES = /\.(safetensors|bin)$/;

/** The file name without its folder (webkitRelativePath or a dropped entry's path). */
const baseName = (f) => String(f?.name ?? '').split('/').pop();

/**
 * True when the files look like a model folder: a config.json and
 * model.safetensors, pytorch_model.bin or the index of either among them.
 */
export function isModelFolder(files) {
  const names = new Set(Array.from(files, baseName));
  if ([...names].some((n) => GGUF_NAME.test(n))) return true; // a GGUF file holds its own config
  return names.has('config.json') && ['model.safetensors', 'model.safetensors.index.json', 'pytorch_model.bin', 'pytorch_model.bin.index.json'].some((n) => names.has(n));
}

/**
 * The model of a folder's files, from config.json and the safetensors
 * headers only (the library's own readers: files.js openWeights, the
 * architecture tables): { files, modelType, numLayers, numHeads, numKvHeads,
 * embedDim, vocabSize, maxPositions, parameters (elements in the file),
 * tensors, bytes (on file), dtypes, float32Bytes, heapLimit, fits and
 * keptBytes (lab.loadModel's memory-fit rule, model/plan.js memoryFit: what
 * load keeps of the tensors it uses), tokenizerBytes, headerBytes (read), ms }.
 * `heapLimit` is the wasm heap's limit as a lab reports it (lab.heapLimit);
 * without it `fits` is null (unknown) and so is `heapLimit`.
 * @param {Iterable<File>|FileList} fileList
 * @param {{ heapLimit?: number|null }} [options]
 */
export async function listModel(fileList, { heapLimit = null } = {}) {
  if (heapLimit !== null && !(Number.isFinite(heapLimit) && heapLimit > 0)) throw new TypeError(`listModel: heapLimit must be a positive number of bytes (lab.heapLimit) or null, got ${String(heapLimit)}`);
  const t0 = performance.now();
  const list = Array.from(fileList).filter((f) => NAMES.test(baseName(f)));
  const ggufs = list.filter((f) => GGUF_NAME.test(baseName(f)));
  if (ggufs.length) return listGguf(ggufs, list, t0, heapLimit);
  const files = splitFolder(list);
  let read = 0;
  const counted = (f) => ({
    name: f.name,
    size: f.size,
    slice(a, b) {
      read += Math.max(0, Math.min(b ?? f.size, f.size) - (a ?? 0));
      return f.slice(a, b);
    },
    arrayBuffer: () => f.arrayBuffer(),
    text: () => f.text(),
  });
  const hf = await readJson(files.config, 'config.json');
  const { type, arch } = architectureOf(hf);
  const weights = await openWeights(Array.isArray(files.weights) ? files.weights.map((f) => (WEIGHT_FILES.test(baseName(f)) ? counted(f) : f)) : counted(files.weights));
  const c = arch.config(hf, new Set(weights.tensors.keys()));
  let parameters = 0;
  for (const e of weights.tensors.values()) parameters += e.count;
  const kept = plannedEntries(arch, { modelType: type, ...c }, weights.tensors);
  const fit = memoryFit(c, kept, halfKindOf(kept.map((entry) => ({ entry })), 'auto'), heapLimit);
  return {
    files,
    ...publicConfig(type, c),
    parameters,
    tensors: weights.tensors.size,
    bytes: weights.bytes,
    shards: weights.files,
    dtypes: weights.dtypes,
    float32Bytes: parameters * 4,
    heapLimit,
    fits: fit.fits,
    keptBytes: fit.bytes,
    tokenizerBytes: files.tokenizer ? files.tokenizer.size : null,
    hasTokenizer: Boolean(files.tokenizer),
    headerBytes: read,
    ms: performance.now() - t0,
  };
}

/** llama.cpp's role of a GGUF tensor: its name without blk.N. and .weight/.bias (attn_q, ffn_down, token_embd, …). */
const roleOf = (name) => name.replace(/^blk\.\d+\./, '').replace(/\.(weight|bias)$/, '');

/**
 * listModel of a dropped .gguf file (only its header is read: model/gguf.js
 * openGgufModel, as lab.loadModel reads it): the same fields, with
 * `format: 'gguf'`, `hasTokenizer` (tokenizer.ggml.* or a tokenizer.json
 * beside it), and `quantGroups`: per tensor role (attn_q, ffn_down,
 * token_embd, …, llama.cpp's names) its ggml types, tensors, bytes on file
 * and bytes kept in the heap (GGML blocks kept as they are, the rest float32:
 * plan.js keptQuantKind, the rule load follows).
 */
async function listGguf(ggufs, list, t0, heapLimit) {
  if (ggufs.length > 1) throw new RangeError(`the files hold ${ggufs.length} GGUF files; drop one`);
  let read = 0;
  const f = ggufs[0];
  const counted = {
    name: f.name,
    size: f.size,
    slice(a, b) {
      read += Math.max(0, Math.min(b ?? f.size, f.size) - (a ?? 0));
      return f.slice(a, b);
    },
    arrayBuffer: () => f.arrayBuffer(),
  };
  const { type, table, hfConfig, weights, tokenizerJson } = await openGgufModel(counted);
  const names = new Set(weights.tensors.keys());
  const c = table.config(hfConfig, names);
  let parameters = 0;
  for (const e of weights.tensors.values()) parameters += e.count;
  const kept = plannedEntries(table, { modelType: type, ...c }, weights.tensors);
  const halfKind = halfKindOf(kept.map((entry) => ({ entry })), 'auto');
  const fit = memoryFit(c, kept, halfKind, heapLimit);
  const groups = new Map();
  for (const e of kept) {
    const role = roleOf(e.name);
    const g = groups.get(role) ?? { role, types: [], tensors: 0, bytes: 0, keptBytes: 0, entries: [] };
    if (!g.types.includes(e.dtype)) g.types.push(e.dtype);
    g.tensors += 1;
    g.bytes += e.end - e.begin;
    g.entries.push(e);
    groups.set(role, g);
  }
  // (each group's share of the memory rule's count)
  for (const g of groups.values()) {
    g.keptBytes = memoryFit(c, g.entries, halfKind, heapLimit).need;
    g.quantized = g.entries.some((e) => keptQuantKind(e) !== 0);
    delete g.entries;
  }
  const tokenizer = list.find((x) => baseName(x) === 'tokenizer.json');
  return {
    format: 'gguf',
    files: { weights: f, ...(tokenizer ? { tokenizer } : {}) },
    ...publicConfig(type, c),
    parameters,
    tensors: weights.tensors.size,
    bytes: weights.bytes,
    shards: weights.files,
    dtypes: weights.dtypes,
    float32Bytes: parameters * 4,
    heapLimit,
    fits: fit.fits,
    keptBytes: fit.bytes,
    quantGroups: [...groups.values()],
    tokenizerBytes: tokenizer ? tokenizer.size : null,
    hasTokenizer: Boolean(tokenizer || tokenizerJson),
    headerBytes: read,
    ms: performance.now() - t0,
  };
}

function rebuild(error) {
  const Cls = { RangeError, TypeError }[error?.name] ?? Error;
  const e = new Cls(error?.message ?? 'worker error');
  if (!(error?.name in { RangeError: 1, TypeError: 1, Error: 1 })) e.name = error?.name ?? 'Error';
  return e;
}

function abortError() {
  const e = new Error('loading was cancelled');
  e.name = 'AbortError';
  return e;
}

/** A Model loaded and run in a Web Worker (see the file comment). */
export class WorkerModel {
  constructor(worker) {
    this._w = worker;
    this._seq = 1;
    this._wait = new Map();
    this._onProgress = null;
    this.config = null;
    this.disposed = false;
    /** Milliseconds the worker spent on the last answered call. */
    this.lastMs = null;
    worker.onmessage = (ev) => this._message(ev.data);
    worker.onerror = (ev) => {
      ev.preventDefault?.();
      this._failAll(new Error(`the model worker failed: ${ev.message || 'error'}`));
    };
  }

  /**
   * Loads { config, weights, tokenizer } (Files, as listModel's `files`) in a
   * new worker. onProgress({ loaded, total }) as the tensors stream in;
   * signal cancels (the worker is ended if it does not stop at once).
   */
  static async load(files, { onProgress, signal, backend } = {}) {
    const { w, m } = WorkerModel._start();
    m._onProgress = onProgress ?? null;
    const onAbort = () => {
      w.postMessage({ type: 'abort' });
      // A read in flight finishes first; end the worker if it takes long.
      setTimeout(() => {
        if (!m.config) {
          m._failAll(abortError());
          w.terminate();
        }
      }, 1500);
    };
    if (signal?.aborted) {
      w.terminate();
      throw abortError();
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return m._loaded(await m._call({ type: 'load', files, backend }));
    } catch (e) {
      w.terminate();
      m.disposed = true;
      throw signal?.aborted ? abortError() : e;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      m._onProgress = null;
    }
  }

  /** Takes the worker's answer to 'load' / 'pretrained'; returns this. */
  _loaded(info) {
    this.config = Object.freeze(info.config);
    this.byteLevel = info.byteLevel;
    this.hasHeadRoles = info.hasHeadRoles;
    this.loadMs = info.loadMs;
    return this;
  }

  static _start() {
    if (typeof Worker !== 'function') throw new Error('this browser has no Web Worker');
    const w = new Worker(new URL('../../model-worker.js', import.meta.url), { type: 'module' });
    return { w, m: new WorkerModel(w) };
  }

  /** lab.pretrained(name) ('en' | 'zh', the package's shipped models) in a new worker. */
  static async pretrained(name, { backend } = {}) {
    const { w, m } = WorkerModel._start();
    try {
      return m._loaded(await m._call({ type: 'pretrained', name, backend }));
    } catch (e) {
      w.terminate();
      m.disposed = true;
      throw e;
    }
  }

  _message(msg) {
    if (msg.type === 'progress') {
      this._onProgress?.({ loaded: msg.loaded, total: msg.total });
      return;
    }
    const p = this._wait.get(msg.id);
    if (!p) return;
    this._wait.delete(msg.id);
    this.lastMs = msg.ms;
    if (msg.ok) p.resolve(msg.value);
    else p.reject(rebuild(msg.error));
  }

  _failAll(e) {
    for (const p of this._wait.values()) p.reject(e);
    this._wait.clear();
  }

  _call(msg) {
    if (this.disposed) return Promise.reject(new Error('this model was disposed'));
    const id = this._seq++;
    return new Promise((resolve, reject) => {
      this._wait.set(id, { resolve, reject });
      this._w.postMessage({ ...msg, id });
    });
  }

  _method(method, ...args) {
    return this._call({ type: 'call', method, args });
  }

  /**
   * { ids, tokens, attentions: [{ data, shape [1, H, L, L] }] } (no logits). An
   * encoder-decoder takes { decoderInputIds } and answers { ids, tokens,
   * decoderInputIds, decoderTokens, encoderAttentions, decoderAttentions,
   * crossAttentions, crossMean } (crossMean: per layer, the mean over heads).
   */
  forward(input, options) {
    return options?.decoderInputIds !== undefined ? this._method('forward', input, { decoderInputIds: options.decoderInputIds }) : this._method('forward', input);
  }

  nextTokens(input, options) {
    return this._method('nextTokens', input, options);
  }

  fillMask(input, options) {
    return this._method('fillMask', input, options);
  }

  headRoles(input, options) {
    return this._method('headRoles', input, options);
  }

  /**
   * model.headScores(input) in the worker, with headScores.repeated({ length, seed }) as on a
   * Model (docs/interpretability.md).
   */
  get headScores() {
    const f = (input, options) => this._method('headScores', input, options);
    f.repeated = (options) => this._method('headScoresRepeated', options);
    return f;
  }

  logitLens(input, options) {
    return this._method('logitLens', input, options);
  }

  attribute(input, options) {
    return this._method('attribute', input, options);
  }

  patch(options) {
    return this._method('patch', options);
  }

  encode(text) {
    return this._method('encode', text);
  }

  tokens(ids) {
    return this._method('tokens', ids);
  }

  /** model.generate in the worker, pulled one token per next(). signal: stops pulling. */
  generate(prompt, options = {}) {
    const { signal, ...rest } = options;
    const self = this;
    let gid = null;
    let finished = false;
    const stop = async () => {
      finished = true;
      if (gid !== null && !self.disposed) await self._call({ type: 'gen-return', gid });
      return { done: true, value: undefined };
    };
    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      async next() {
        if (finished) return { done: true, value: undefined };
        if (signal?.aborted) return stop();
        if (gid === null) gid = await self._call({ type: 'gen-start', args: [prompt, rest] });
        const r = await self._call({ type: 'gen-next', gid });
        if (r.done) finished = true;
        return r;
      },
      return: stop,
    };
  }

  dispose() {
    if (this.disposed) return;
    this.disposed = true;
    this._failAll(new Error('this model was disposed'));
    this._w.terminate();
  }
}

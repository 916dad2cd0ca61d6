// lab.loadModel: a Hugging Face folder (config.json, model.safetensors or
// shards + index, tokenizer.json) → a Model. Order of work, so that a bad
// file costs nothing:
//   1. config.json → the architecture table → the normalised config
//   2. the safetensors headers only: names, dtypes and shapes checked against
//      the table (missing, unexpected, wrong shape), the size against the
//      wasm heap (refused before any tensor is read)
//   3. tokenizer.json checked against vocab_size
//   4. the block graph allocated once (web/lib/graph/transformer.js), its
//      projections packed for the GEMM (packedWeights: no packing per call),
//      then each tensor streamed from the file into its place, a few MB at a
//      time through one staging buffer, F16/BF16 converted as they are
//      copied: peak memory is the float32 weights plus one chunk. A checkpoint
//      whose matrices are all F16 (or all BF16) keeps its projections in 16
//      bits (dtype 'auto', the default): the core's packed panels hold the
//      file's values and its kernels widen them exactly as they read them, so
//      the results are those of the float32 conversion, from half the bytes
//   5. on a webgpu lab (`gpu`), the same tensors read again and uploaded to
//      GPU buffers (gpu.js), where model.forward runs
// Any failure disposes what was allocated: the heap is back at its baseline.
// A GGUF file (llama.cpp's format) takes steps 1–3 from its header instead
// (gguf.js: the config from its metadata, the tokenizer from
// tokenizer.ggml.*), then the same plan and streaming.
import { rangeError, typeError, describe, checkOptions } from '../errors.js';
import { decode } from '../io/dtypes.js';
import { Transformer } from '../graph/transformer.js';
import { architectureOf, layoutOp } from './families/index.js';
import { readJson, openWeights, splitFolder, isBlob } from './files.js';
import { ModelTokenizer } from './tokenizer.js';
import { plan, halfKindOf, memoryFit, heapLimitOf, keptQuantKind, quantBytes, HALF_KINDS, HEADROOM_BYTES } from './plan.js';
import { Model } from './model.js';
import { EncoderDecoderModel } from './encdec-model.js';
import { uploadToGpu, checkGpuRuns } from './gpu.js';
import { ggufArgs, openGgufModel } from './gguf.js';

export { heapLimitOf } from './plan.js';

const WHERE = 'loadModel';
const KEYS = ['config', 'weights', 'tokenizer', 'dtype', 'signal', 'onProgress'];
const DTYPES = ['auto', 'float32'];
/** The staging buffer (it counts in a load's peak heap: keep it small beside a quantized file). */
const CHUNK_BYTES = 2 * 2 ** 20;
/** Longest context allocated for RoPE models (their tables and cache grow with it). */
const MAX_ROPE_POSITIONS = 8192;

function mib(bytes) {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

function abortError(signal) {
  const reason = signal.reason;
  if (reason instanceof Error) return reason;
  const err = new Error(`${WHERE}: aborted`);
  err.name = 'AbortError';
  return err;
}

function isFileList(v) {
  return (typeof FileList === 'function' && v instanceof FileList)
    || (Array.isArray(v) && v.length > 0 && v.every((f) => isBlob(f) && typeof f.name === 'string'));
}

/**
 * Streams one file tensor into the block graph (Transformer::WriteParam, which
 * also packs the projections for the GEMM), a chunk of rows at a time through
 * `staging` (CHUNK_BYTES in wasm memory).
 */
async function place(Module, handle, step, params, staging, signal, progress, halfKind, keepBlocks) {
  const { entry, t } = step;
  // 16-bit values go in as they are (the core keeps or converts them); GGML
  // GGML Q8_0/Q4_0/Q4_K/Q6_K rows go in as the file's blocks, which the core keeps
  // (plan.js keptQuantKind).
  const quant = keptQuantKind({ ...entry, keepBlocks }, t.op);
  const half = !quant && halfKind !== 0 && HALF_KINDS[entry.dtype] === halfKind ? halfKind : 0;
  const shape = entry.shape;
  const rows = shape.length === 1 ? 1 : shape[0];
  const rowElems = shape.length === 1 ? shape[0] : entry.count / rows;
  // (blocks: the bytes a value takes, 34/32 or 18/32, so that the layout
  // ops' row offsets rowElems·stagedBytes are whole rows of blocks)
  const stagedBytes = quant ? quantBytes(quant, rowElems) / rowElems : half ? 2 : 4;
  const elemBytes = (entry.end - entry.begin) / entry.count;
  const rowsPerChunk = Math.max(1, Math.floor(CHUNK_BYTES / Math.max(rowElems * elemBytes, rowElems * (quant ? stagedBytes : 4))));
  const what = `tensor ${JSON.stringify(entry.name)}`;
  const check = (code) => {
    if (code !== 0) {
      const message = Module.trainLastError();
      if (/must be finite/.test(message)) throw rangeError(WHERE, message);
      // The packed projections take their memory at their first write
      // (weight_store.cpp EnsurePanels), so a heap that memoryFit judged
      // big enough can still run out here when the engine grants less.
      if (code === 2) throw rangeError(WHERE, `out of wasm memory while writing ${what} (${message}); the heap is limited to ${mib(heapLimitOf(Module))} and this engine may grant less`);
      throw new Error(`${WHERE}: internal: ${message}`);
    }
  };
  const writeAs = (srcHalf) => (index, first, count, src, ld, transposed) => {
    check(Module.transformerWriteParam(handle, { index, first, rows: count, ld, src, transposed, half: srcHalf }));
  };
  const writeBlocks = (index, first, count, src, ld, transposed) => {
    if (transposed || ld !== rowElems) throw new Error(`${WHERE}: internal: ${what} is kept as ${entry.dtype} blocks, written by whole rows only`);
    check(Module.transformerWriteParamQuant(handle, { index, first, rows: count, kind: quant, src, bytes: count * rowElems * stagedBytes }));
  };
  const write = quant ? writeBlocks : writeAs(half);
  // For ops that compute values (add-one): the staged values as float32, and
  // float32 values written back through the staging buffer (which holds 4
  // bytes per element of a chunk, whatever was staged).
  const floats = (count) => (half
    ? decode(WHERE, what, entry.dtype, Module.HEAPU8.slice(staging, staging + 2 * count), count)
    : Module.HEAPF32.slice(staging >>> 2, (staging >>> 2) + count));
  const writeFloats = (index, first, count, data, ld, transposed) => {
    Module.HEAPF32.set(data, staging >>> 2);
    writeAs(0)(index, first, count, staging, ld, transposed);
  };
  for (let r0 = 0; r0 < rows; r0 += rowsPerChunk) {
    if (signal?.aborted) throw abortError(signal);
    const r1 = Math.min(rows, r0 + rowsPerChunk);
    const a = entry.begin + r0 * rowElems * elemBytes;
    const b = entry.begin + r1 * rowElems * elemBytes;
    const bytes = await entry.source.read(a, b);
    if (half || quant) {
      Module.HEAPU8.set(bytes, staging); // read afresh: memory may have grown
    } else {
      const n = (r1 - r0) * rowElems;
      // (entry.decode: a GGUF quantized type, dequantised here, io/ggml-types.js)
      const data = entry.decode ? entry.decode(bytes, n) : decode(WHERE, what, entry.dtype, bytes, n);
      Module.HEAPF32.set(data, staging >>> 2);
    }
    layoutOp(t.op).core({ write, floats, writeFloats, params, r0, n: r1 - r0, staging, rowElems, stagedBytes, shape, entry: t, Module });
    progress(b - a);
    // Let the page breathe between chunks.
    await Promise.resolve();
  }
}

/**
 * @param {object} Module the wasm module of a wasm backend
 * @param {object|FileList|File[]} source { config, weights, tokenizer, dtype, signal, onProgress } or a folder's files
 * @param {{ gpu?: import('../backend.js').WebGpuBackend }} [options] gpu: also upload the weights
 *   to this webgpu backend (whose wasm backend `Module` is), where model.forward then runs
 */
export async function loadModel(Module, source, { gpu = undefined } = {}) {
  let args;
  const gguf = await ggufArgs(source, isFileList);
  if (gguf) {
    for (const key of Object.keys(gguf)) {
      if (!KEYS.includes(key)) throw typeError(WHERE, `unknown key ${JSON.stringify(key)}; allowed: ${KEYS.join(', ')}`);
    }
    args = gguf;
  } else if (isFileList(source)) {
    args = splitFolder(source);
  } else {
    const o = checkOptions(WHERE, 'the argument', source);
    for (const key of Object.keys(o)) {
      if (!KEYS.includes(key)) throw typeError(WHERE, `unknown key ${JSON.stringify(key)}; allowed: ${KEYS.join(', ')}`);
    }
    args = { ...o };
  }
  if (args.config === undefined && !gguf) throw typeError(WHERE, 'config is missing: pass the parsed config.json, its bytes or a File');
  if (args.weights === undefined) throw typeError(WHERE, 'weights is missing: pass model.safetensors (a File, Blob, ArrayBuffer or Uint8Array) or its shards with model.safetensors.index.json');
  const { signal, onProgress } = args;
  const dtype = args.dtype ?? 'auto';
  if (!DTYPES.includes(dtype)) throw rangeError(WHERE, `dtype must be ${DTYPES.map((d) => `'${d}'`).join(' or ')}, got ${describe(dtype)}`);
  if (onProgress !== undefined && typeof onProgress !== 'function') throw typeError(WHERE, `onProgress must be a function, got ${describe(onProgress)}`);
  if (signal !== undefined && (signal === null || typeof signal.aborted !== 'boolean')) throw typeError(WHERE, `signal must be an AbortSignal, got ${describe(signal)}`);

  let hfConfig, type, table, weights, fileTokenizer = null, ggufTokenizer = null;
  if (gguf) {
    ({ hfConfig, type, table, weights, tokenizerJson: fileTokenizer, tokenizerMeta: ggufTokenizer } = await openGgufModel(args.weights));
  } else {
    hfConfig = await readJson(args.config, 'config.json', { signal });
    ({ type, arch: table } = architectureOf(hfConfig));
    weights = await openWeights(args.weights);
  }
  const names = new Set(weights.tensors.keys());
  const c = { modelType: type, ...table.config(hfConfig, names) };
  const steps = plan(table, c, weights.tensors);
  // Fields that follow the file's dtypes (Gemma's embedding scale, rounded to the weights' dtype).
  table.withFileDtypes?.(c, (file) => steps.find((st) => st.t.file === file)?.entry.dtype);
  checkCoreFields(Module, c);
  if (c.isEncoderDecoder) checkCoreFields(Module, { ...c, core: c.encoder.core });
  const toGpu = Boolean(gpu) && !gpu.deviceLost; // after a device loss the wasm copy answers alone
  if (toGpu) checkGpuRuns(c);
  const halfKind = halfKindOf(steps, dtype);
  const limit = heapLimitOf(Module);
  const fit = memoryFit(c, steps.map((st) => ({ ...st.entry, op: st.t.op, keepBlocks: dtype !== 'float32' })), halfKind, limit);
  if (!fit.fits) {
    throw rangeError(WHERE, `the model needs ${mib(fit.need)} of ${fit.quantBytes ? 'weights (its quantized matrices as the file\'s blocks)' : halfKind ? 'weights (its matrices in 16 bits)' : 'float32 weights'} (${fit.floats} parameters, ${mib(weights.bytes)} on file), more than the wasm heap can hold: its limit is ${mib(limit)} (with ${mib(HEADROOM_BYTES)} kept for activations)`);
  }
  let tokenizerJson = null;
  let tokenizer = null;
  if (args.tokenizer !== undefined && args.tokenizer !== null) {
    tokenizerJson = await readJson(args.tokenizer, 'tokenizer.json', { signal });
  } else if (args.tokenizer === undefined && fileTokenizer) {
    tokenizerJson = fileTokenizer;
  }
  if (tokenizerJson) tokenizer = new ModelTokenizer(tokenizerJson, c.vocabSize);
  if (signal?.aborted) throw abortError(signal);

  const maxLength = c.core.positional === 'rope' ? Math.min(c.maxPositions, MAX_ROPE_POSITIONS) : c.maxPositions;
  // One block graph, or an encoder-decoder's two (the table's `to` names
  // say which: 'encoder:…', 'decoder:…').
  const graph = (g) => new Transformer(Module, {
    vocabSize: c.vocabSize, maxLength, embedDim: c.embedDim, numHeads: g.numHeads, numLayers: g.numLayers,
    ffnDim: g.ffnDim, causal: g.core.causal, positional: g.core.positional, eps: c.eps, ...onlyKeys(g.core, ['prenorm', 'activation', 'tieEmbeddings', 'headBias']),
  }, { ...g.core, initWeights: false, packedWeights: true, packedHalf: halfKind });
  const graphs = [];
  try {
    for (const [name, g] of c.isEncoderDecoder ? [['encoder', c.encoder], ['decoder', c]] : [['', c]]) graphs.push({ name, t: graph(g) });
  } catch (err) {
    for (const g of graphs) g.t.dispose();
    throw err;
  }
  const transformer = graphs[graphs.length - 1].t;
  let staging = 0;
  let gpuSide = null;
  try {
    const index = new Map(graphs.flatMap((g) => g.t._params.map((p, i) => [g.name ? `${g.name}:${p.name}` : p.name, { t: g.t, i }])));
    let largestRow = 0;
    for (const st of steps) largestRow = Math.max(largestRow, st.entry.shape.length === 1 ? st.entry.count : st.entry.count / st.entry.shape[0]);
    staging = Module._malloc(Math.max(CHUNK_BYTES, 4 * largestRow)) >>> 0; // (unsigned: the heap passes 2 GiB)
    if (!staging) throw rangeError(WHERE, 'out of wasm memory for the loading buffer');
    let loaded = 0;
    // On webgpu every tensor is read twice: into the block graph, then to the GPU.
    const total = steps.reduce((n, s) => n + (s.entry.end - s.entry.begin), 0) * (toGpu ? 2 : 1);
    const progress = (bytes) => {
      loaded += bytes;
      onProgress?.({ loaded, total });
    };
    onProgress?.({ loaded: 0, total });
    for (const step of steps) {
      const targets = step.t.to.map((name) => {
        if (!index.has(name)) throw new Error(`${WHERE}: internal: the block graph has no ${name}`);
        return index.get(name);
      });
      await place(Module, targets[0].t._handle, step, targets.map((x) => x.i), staging, signal, progress, halfKind, dtype !== 'float32');
    }
    for (const g of graphs) {
      const code = Module.transformerCheckParams(g.t._handle);
      if (code !== 0) throw rangeError(WHERE, Module.trainLastError());
    }
    Module._free(staging);
    staging = 0;
    // The weights were checked (finite, shapes) on the way into the block graph.
    if (toGpu) gpuSide = await uploadToGpu(gpu, c, maxLength, steps, { signal, progress, abortError: () => abortError(signal) });
  } catch (err) {
    for (const g of graphs) g.t.dispose();
    throw err;
  } finally {
    if (staging) Module._free(staging);
  }
  const info = { modelType: type, hfConfig, c, tokenizerJson, files: weights.files, dtypes: weights.dtypes, gpu: gpuSide, ggufTokenizer: tokenizerJson === fileTokenizer ? ggufTokenizer : null };
  // A folder with SentencePiece files and no tokenizer.json (a Marian
  // checkpoint as Helsinki-NLP publishes it): the model runs by ids, and
  // its text methods say what to convert.
  if (!tokenizer && args.sentencePiece?.length) info.tokenizerMissing = args.sentencePiece;
  if (c.isEncoderDecoder) return new EncoderDecoderModel(Module, graphs[0].t, transformer, tokenizer, info);
  return new Model(Module, transformer, tokenizer, info);
}

/**
 * Refuses a family's block-graph field that this build's core does not have
 * (TransformerConfig's field list, transformerConfigDefaults()), which the
 * graph would otherwise never see.
 */
function checkCoreFields(Module, c) {
  const known = Module.transformerConfigDefaults();
  const missing = Object.keys(c.core).filter((k) => !(k in known));
  if (missing.length) {
    throw rangeError(WHERE, `model_type ${JSON.stringify(c.modelType)} needs the block graph's field${missing.length > 1 ? 's' : ''} ${missing.map((k) => `${k} (${JSON.stringify(c.core[k])})`).join(', ')}, which this build of the core does not have`);
  }
}

function onlyKeys(obj, keys) {
  const out = {};
  for (const k of keys) if (k in obj) out[k] = obj[k];
  return out;
}

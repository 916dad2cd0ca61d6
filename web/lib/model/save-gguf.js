// model.save({ format: 'gguf' }): the model as one GGUF v3 file
// (ggml/docs/gguf.md; io/gguf-write.js writes the layout: the header, the
// metadata, the tensor infos with ne in ggml's order, general.alignment 32,
// each tensor's data aligned), through the GGUF view of the family table
// (families/gguf.js): llama.cpp's tensor names, and the layouts its
// converter writes (llama's Q/K rows permuted again, GPT-2's Conv1D weights
// as [out, in]; each layout op's file face).
//   - tensors: a matrix held as GGML blocks (a GGUF file's Q8_0, Q4_0, Q4_K,
//     Q6_K) is written as those blocks, its rows moved whole (copy,
//     rope-unpermute, split-rows), so a quantized file saves to the same
//     bytes; any other matrix in F32, or F16 with dtype 'F16'; vectors
//     (norms, biases) F32, as convert_hf_to_gguf.py keeps them;
//   - metadata: general.architecture, the family's `${arch}.` keys from the
//     model's config (integers UINT32; epsilons, the RoPE base and other
//     real values FLOAT32, as llama.cpp reads them), general.file_type, and
//     the tokenizer.ggml.* entries of the GGUF file it was loaded from
//     (token_type as INT32 and scores as FLOAT32 arrays, the types
//     llama.cpp's llama-vocab.cpp asks for); a model loaded with a
//     tokenizer.json gets them from it (gguf-tokenizer.js
//     ggufTokenizerEntriesOf: byte-level BPE as 'gpt2', SentencePiece-style
//     BPE as 'llama'; other tokenizers, none).
import { rangeError, describe } from '../errors.js';
import { saveModel } from './save.js';
import { writeGguf, ggufFloat32 } from '../io/gguf-write.js';
import { GGML_TYPES } from '../io/ggml-types.js';
import { ggufView, layoutOp } from './families/index.js';
import { ropeRowOf } from './families/layout.js';
import { ggufTokenizerEntriesOf } from './gguf-tokenizer.js';

/** llama_ftype of a file whose matrices are all of one type (MOSTLY_*; 15 Q4_K_M for a Q4_K/Q6_K mix). */
const FILE_TYPE = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 7, Q4_K: 15, Q6_K: 18 };
/** Metadata keys llama.cpp reads as FLOAT32. */
const FLOAT_KEY = /epsilon|freq_base|softcapping|scale|factor|scalar/;

/** The rows of `raw` (rowBytes each) in file order for a row op over held blocks, or null when the op moves more than rows. */
function blockRows(entry, parts) {
  if (entry.op === 'copy') return parts[0].raw;
  // (split-heads of one head: GPT-2's qkv as the converter writes it, row blocks q | k | v)
  if (entry.op === 'split-rows' || (entry.op === 'split-heads' && entry.heads === 1)) {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.raw.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p.raw, at);
      at += p.raw.length;
    }
    return out;
  }
  if (entry.op === 'rope-unpermute') {
    const R = entry.shape[0];
    const rowBytes = parts[0].raw.length / R;
    const D = R / entry.heads;
    const out = new Uint8Array(parts[0].raw.length);
    // file row g holds the Hugging Face row ropeRowOf(g, D)
    for (let g = 0; g < R; g++) out.set(parts[0].raw.subarray(ropeRowOf(g, D) * rowBytes, (ropeRowOf(g, D) + 1) * rowBytes), g * rowBytes);
    return out;
  }
  return null;
}

/** { 'model.gguf': Uint8Array } of a model. info: { modelType, hfConfig, c, ggufTokenizer? }. */
export function saveGguf(where, transformer, info, dtype, Module) {
  const view = ggufView(info.modelType);
  if (!view) throw rangeError(where, `format 'gguf' needs a family that llama.cpp converts; ${info.modelType} has none (use format 'safetensors')`);
  const { arch, g, table } = view;
  const index = new Map(transformer._params.map((p, i) => [p.name, i]));
  const blocksOf = (name) => {
    const i = index.get(name);
    const kind = Module.transformerParamQuantKind(transformer._handle, i);
    if (!kind) return null;
    const p = transformer._params[i];
    const n = p.shape.reduce((a, d) => a * d, 1);
    const bytes = (n / GGML_TYPES[kind].blockSize) * GGML_TYPES[kind].typeSize;
    const ptr = Module._malloc(bytes);
    if (!ptr) throw rangeError(where, `out of wasm memory for ${bytes} bytes of ${name}`);
    try {
      const got = Module.transformerCopyParamBlocks(transformer._handle, i, ptr, bytes);
      if (got !== bytes) throw new Error(`${where}: internal: ${name} gave ${got} bytes of blocks, not ${bytes}`);
      return { kind, raw: Module.HEAPU8.slice(ptr, ptr + bytes) };
    } finally {
      Module._free(ptr);
    }
  };
  let weights = null; // getWeights, read once when a tensor needs floats
  /** @type {Record<string, { data?: Float32Array, raw?: Uint8Array, shape: number[], type?: string }>} */
  const tensors = {};
  const types = new Set();
  for (const entry of table.tensors(info.c)) {
    const parts = entry.shape.length === 2 ? entry.to.map(blocksOf) : [];
    const kinds = new Set(parts.map((p) => p?.kind ?? 0));
    const raw = parts.length && kinds.size === 1 && !kinds.has(0) ? blockRows(entry, parts) : null;
    if (raw) {
      const type = GGML_TYPES[parts[0].kind].name;
      tensors[entry.file] = { raw, shape: entry.shape.slice(), type };
      types.add(type);
      continue;
    }
    weights ??= transformer.getWeights();
    const { data, shape } = layoutOp(entry.op).file(entry, entry.to.map((name) => weights[name].data));
    const type = shape.length === 2 && dtype === 'F16' ? 'F16' : 'F32';
    tensors[entry.file] = { data: data instanceof Float32Array ? data : Float32Array.from(data), shape, type };
    if (shape.length === 2) types.add(type);
  }
  /** @type {Record<string, any>} */
  const meta = { 'general.architecture': arch, 'general.name': String(info.hfConfig._name_or_path ?? `attention-lab ${info.modelType}`) };
  for (const [hfKey, key] of Object.entries(g.config)) {
    const v = info.hfConfig[hfKey];
    if (typeof v !== 'number' || !Number.isFinite(v)) continue;
    meta[`${arch}.${key}`] = FLOAT_KEY.test(key) || !Number.isInteger(v) || v < 0 ? ggufFloat32(v) : v;
  }
  // The rotary dims (convert_hf_to_gguf.py writes rope.dimension_count; a
  // partial rotary, Phi-3's or GPT-NeoX's, is read back from it).
  if (info.c.core?.positional === 'rope' && info.c.core.rotaryDim > 0) meta[`${arch}.rope.dimension_count`] = info.c.core.rotaryDim;
  const quant = [...types].filter((t) => t !== 'F32' && t !== 'F16');
  const main = quant.includes('Q4_K') ? 'Q4_K' : quant.length ? quant[0] : types.has('F16') ? 'F16' : 'F32';
  meta['general.file_type'] = FILE_TYPE[main];
  if (quant.length) meta['general.quantization_version'] = 2;
  const tok = info.ggufTokenizer ?? (info.tokenizerJson ? ggufTokenizerEntriesOf(info.tokenizerJson, info.c.vocabSize, info.hfConfig) : null);
  for (const [k, v] of tok ?? []) {
    if (k === 'tokenizer.ggml.token_type') meta[k] = Int32Array.from(v);
    else if (k === 'tokenizer.ggml.scores') meta[k] = Float32Array.from(v);
    else meta[k] = v;
  }
  return { 'model.gguf': writeGguf(tensors, meta) };
}

/**
 * model.save's two formats: 'safetensors' (save.js, dtype 'F32' | 'F16' | …) or 'gguf' (above,
 * dtype 'F32' | 'F16' for the matrices that are not GGML blocks). `o` holds only those two keys.
 */
export function saveFiles(where, transformer, info, o, Module) {
  const format = o.format ?? 'safetensors';
  if (format !== 'safetensors' && format !== 'gguf') throw rangeError(where, `format must be 'safetensors' or 'gguf', got ${describe(format)}`);
  if (format === 'safetensors') return saveModel(where, transformer, info, o.dtype ?? 'F32');
  if (![undefined, 'F32', 'F16'].includes(o.dtype)) throw rangeError(where, `dtype must be 'F32' or 'F16', got ${describe(o.dtype)}`);
  return saveGguf(where, transformer, info, o.dtype ?? 'F32', Module);
}

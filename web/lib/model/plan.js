// What loadModel keeps of a checkpoint, decided before any tensor is read:
// the plan (each table tensor's file entry), the 16-bit kind, and the one
// memory-fit rule that loadModel applies and the folder listing
// (web/components/lib/model-client.js) reports.
import { rangeError } from '../errors.js';
import { GGML_TYPES, ggmlTypeId } from '../io/ggml-types.js';

const WHERE = 'loadModel';
/** The core's 16-bit kinds (src/kernels/kernels.h HalfKind). */
export const HALF_KINDS = { F16: 1, BF16: 2 };
const FLOAT_DTYPES = new Set(['F32', 'F16', 'BF16', 'F64']);
/**
 * The GGML block types the core keeps as they are (kernels::QuantKind: its
 * GEMV and GEMM read the blocks): the ggml type id by name.
 */
export const KEPT_QUANT = Object.freeze({ Q8_0: 8, Q4_0: 2, Q4_K: 12, Q6_K: 14 });

/**
 * The ggml type id a file entry is kept in as GGML blocks, or 0 (then it is
 * dequantised to float32): a matrix of a kept type whose rows are whole
 * blocks. `op` (the table's layout op, when known) must move whole rows:
 * copy, rope-unpermute, split-rows, split-heads.
 * @param {{ dtype?: string, shape: number[], keepBlocks?: boolean }} entry
 * @param {string} [op]
 */
export function keptQuantKind(entry, op) {
  // (keepBlocks false: loadModel's dtype 'float32' dequantises everything)
  const kind = entry.keepBlocks === false ? 0 : KEPT_QUANT[entry.dtype] ?? 0;
  if (!kind || entry.shape.length !== 2 || entry.shape[1] % GGML_TYPES[ggmlTypeId(entry.dtype)].blockSize !== 0) return 0;
  return op === undefined || ['copy', 'rope-unpermute', 'split-rows', 'split-heads'].includes(op) ? kind : 0;
}

/** The bytes `count` values of a kept GGML type take (whole blocks). */
export function quantBytes(kind, count) {
  const t = GGML_TYPES[kind];
  return (count / t.blockSize) * t.typeSize;
}

/**
 * The most the wasm heap of `Module` may grow to, as the module reports it
 * (emscripten_get_heap_max: MAXIMUM_MEMORY of CMakeLists.txt, 4 GB, which
 * Emscripten caps one 64 KiB page short: 4,294,901,760 bytes). lab.heapLimit.
 */
export function heapLimitOf(Module) {
  return Module.heapMaxBytes();
}
/** Room kept for activations, the cache and the runtime. */
export const HEADROOM_BYTES = 192 * 2 ** 20;

/** Each table tensor with the file name it resolves to (prefix, aliases), or null when the file lacks it. */
function resolve(table, c, entries) {
  const names = new Set(entries.keys());
  const wanted = table.tensors(c);
  // The prefix the file uses, found from the first table tensor.
  const first = wanted.find((t) => !t.absolute);
  const prefix = table.prefixes.find((p) => names.has(p + first.file) || (first.alias && names.has(p + first.alias))) ?? table.prefixes[0];
  return wanted.map((t) => {
    const base = t.absolute ? '' : prefix;
    let name = base + t.file;
    if (!names.has(name) && t.alias && names.has(base + t.alias)) name = base + t.alias;
    return { t, name: names.has(name) ? name : null, wantedName: name };
  });
}

/** The file entries the table uses (those present; nothing checked): what load keeps, for the folder listing. */
export function plannedEntries(table, c, entries) {
  return resolve(table, c, entries).filter((r) => r.name !== null).map((r) => entries.get(r.name));
}

/** Resolves the file names the table asks for (prefix, aliases) and checks names and shapes: [{ entry, t }]. */
export function plan(table, c, entries) {
  const names = new Set(entries.keys());
  const used = new Set();
  const missing = [];
  const steps = [];
  for (const { t, name, wantedName } of resolve(table, c, entries)) {
    if (name === null) {
      missing.push(wantedName);
      continue;
    }
    used.add(name);
    const e = entries.get(name);
    if (!FLOAT_DTYPES.has(e.dtype) && !e.decode) {
      throw rangeError(WHERE, `tensor ${JSON.stringify(name)} has dtype ${e.dtype}; weights must be F32, F16, BF16 or F64`);
    }
    if (e.shape.length !== t.shape.length || e.shape.some((d, i) => d !== t.shape[i])) {
      throw rangeError(WHERE, `tensor ${JSON.stringify(name)} has shape [${e.shape.join(', ')}], but ${table.configSource ?? 'config.json'} implies [${t.shape.join(', ')}]${t.why ? ` (${t.why})` : ''}`);
    }
    steps.push({ entry: e, t });
  }
  if (missing.length) {
    throw rangeError(WHERE, `the weights lack ${missing.length} tensor${missing.length > 1 ? 's' : ''} a ${c.modelType} model with this ${table.configSource ?? 'config.json'} needs: ${missing.slice(0, 4).map((n) => JSON.stringify(n)).join(', ')}${missing.length > 4 ? ', …' : ''}`);
  }
  const ignore = [...table.ignore, ...(table.extraIgnore ? table.extraIgnore(c) : [])];
  const extra = [...names].filter((n) => !used.has(n) && !ignore.some((re) => re.test(n)));
  if (extra.length) {
    throw rangeError(WHERE, `the weights hold ${extra.length} tensor${extra.length > 1 ? 's' : ''} a ${c.modelType} model does not use: ${extra.slice(0, 4).map((n) => JSON.stringify(n)).join(', ')}${extra.length > 4 ? ', …' : ''}${table.configSource ? '' : ' (is config.json from the same model?)'}`);
  }
  return steps;
}

/**
 * 1 (F16) or 2 (BF16) when every matrix of the file has that dtype and dtype
 * is 'auto': the core then keeps the projections in 16 bits; else 0.
 */
export function halfKindOf(steps, dtype) {
  if (dtype === 'float32') return 0;
  // A learned position or token-type table in F32 does not decide: it is
  // never a packed projection, and llama.cpp's converter keeps those tables
  // F32 in its 16-bit and quantized files (convert_hf_to_gguf.py: POS_EMBD,
  // TOKEN_TYPES).
  const table = (s) => s.entry.dtype === 'F32' && s.t?.to.length === 1 && /^(pos|type)\.weight$/.test(s.t.to[0]);
  const kinds = new Set(steps.filter((s) => s.entry.shape.length === 2 && !table(s)).map((s) => s.entry.dtype));
  return kinds.size === 1 ? HALF_KINDS[[...kinds][0]] ?? 0 : 0;
}

/**
 * The memory-fit rule: the bytes the block graph keeps for a model's planned
 * tensors (`entries`: { count, shape }) with `halfKind` (halfKindOf): its
 * matrices in 16 bits when the checkpoint's are all F16 (or all BF16), the
 * matrices of a GGUF file in Q8_0, Q4_0, Q4_K or Q6_K as the file's blocks
 * (keptQuantKind), the rest float32. It fits when that plus HEADROOM_BYTES is within `limit`,
 * the heap's limit (heapLimitOf; null: unknown, and `fits` is null).
 * `headCopy` is the 16-bit copy of a tied LM head that a 16-bit checkpoint
 * also keeps for decoding when there is room (optional: without room the
 * float head runs, so it does not decide `fits`); `bytes` is need + headCopy.
 * @param {{ vocabSize: number, embedDim: number, core: { tieEmbeddings?: boolean, hasHead?: boolean } }} c the normalised config
 * @param {Array<{ count: number, shape: number[], dtype?: string, op?: string }>} entries
 * @param {number} halfKind 0, 1 (F16) or 2 (BF16)
 * @param {number|null} limit the wasm heap's limit in bytes (heapLimitOf)
 */
export function memoryFit(c, entries, halfKind, limit) {
  let floats = 0;
  let need = 0;
  let blocks = 0;
  for (const e of entries) {
    floats += e.count;
    // (16 bits: the projections stay 16-bit, the rest is float32; the core's
    // allocation checks the exact sum, counted here from below. Q8_0, Q4_0,
    // Q4_K and Q6_K matrices stay as the file's blocks (with dtype
    // 'float32' they are dequantised: 4 bytes).)
    // (an F32 table beside 16-bit matrices, halfKindOf, stays float32)
    const quant = keptQuantKind(e, e.op);
    const half = halfKind && e.shape.length === 2 && (e.dtype === undefined || HALF_KINDS[e.dtype] === halfKind);
    if (quant) blocks += quantBytes(quant, e.count);
    need += quant ? quantBytes(quant, e.count) : e.count * (half ? 2 : 4);
  }
  const headCopy = halfKind && c.core.tieEmbeddings && c.core.hasHead !== false ? c.vocabSize * c.embedDim * 2 : 0;
  return {
    floats, need, headCopy, bytes: need + headCopy, quantBytes: blocks, headroom: HEADROOM_BYTES, limit,
    fits: limit === null ? null : need + HEADROOM_BYTES <= limit,
  };
}

/**
 * The bytes the block graph holds for its weights: float32, 16 bits for the
 * packed projections of a 16-bit checkpoint, or the GGML blocks a parameter
 * is held in (Transformer::ParamQuantKind); and those blocks' bytes by type.
 */
export function keptBytes(Module, transformer) {
  let bytes = 0;
  const quantized = {};
  transformer._params.forEach((p, i) => {
    const n = p.shape.reduce((a, d) => a * d, 1);
    const kind = Module.transformerParamQuantKind(transformer._handle, i);
    if (kind) {
      const b = quantBytes(kind, n);
      const name = GGML_TYPES[kind].name;
      quantized[name] = (quantized[name] ?? 0) + b;
      bytes += b;
    } else {
      bytes += n * (p.packed && transformer.config.packedHalf ? 2 : 4);
    }
  });
  return { bytes, quantized: Object.keys(quantized).length ? Object.freeze(quantized) : null };
}

/** The public config a loaded Model and a listed folder share: { modelType, numLayers, …, maxPositions, causal, maskToken }. */
export function publicConfig(modelType, c) {
  return {
    modelType,
    numLayers: c.numLayers,
    numHeads: c.numHeads,
    numKvHeads: c.numKvHeads,
    embedDim: c.embedDim,
    ffnDim: c.ffnDim,
    vocabSize: c.vocabSize,
    maxPositions: c.maxPositions,
    // false for the encoders (bert, distilbert, roberta, xlm-roberta): fillMask, not nextTokens
    causal: c.core.causal,
    // the token fillMask predicts at ([MASK], RoBERTa's <mask>); null for the causal models
    maskToken: c.maskToken ?? null,
  };
}

// Type declarations for attention-lab (browser and Node entries share them;
// CommonJS consumers get them through web/index.d.cts, which re-exports this
// file, so nothing here needs copying there except new *value* exports).
// Shape legend: B batch, Lq/Lk (L) sequence, E embed, H heads, D head dim (E = H·D).
//
// How to extend (one section per feature, appended at the end of the file):
//   * new functions on the lab object: merge into the interface with the SAME
//     type parameter line, and wrap results that the backend computes in
//     `Returned<M, T>` (a value on wasm, a Promise on webgpu):
//       export interface AttentionLab<M extends LabMode = 'either'> {
//         myOp(x: TensorLike): Returned<M, Tensor>;
//       }
//   * new options: `export interface InitOptions { … }`, `ForwardOptions`, … merge the same way;
//   * new value exports (functions, classes): declare them here AND add one
//     line to web/index.d.cts (`export declare const name: typeof api.name;`).

/** A dense float32 tensor, row-major. */
export interface Tensor {
  data: Float32Array;
  shape: number[];
}

/** Nested number arrays, e.g. `[[1, 2], [3, 4]]`. */
export type NestedArray = number[] | NestedArray[];

/**
 * Tensor input: `{ data, shape }` (data may be any numeric typed array or a
 * number array; converted to float32) or a nested number array.
 */
export type TensorLike = Tensor | { data: ArrayLike<number>; shape: number[] } | NestedArray;

export type BackendName = 'wasm' | 'wasm-scalar' | 'webgpu';

export interface InitOptions {
  /**
   * 'auto' (default): WebGPU on a hardware adapter (browser), else wasm SIMD,
   * else scalar. 'webgpu' also accepts software adapters (SwiftShader).
   */
  backend?: 'auto' | BackendName;
  /** Maps a file name (e.g. 'attention_lab_simd.wasm') to the URL or path to load it from. */
  locateFile?: (fileName: string, variant: 'simd' | 'scalar' | 'threads') => string | URL;
  /** The .wasm bytes of the selected variant, to skip fetching. */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /**
   * Run lab.warmUp() before `init` resolves (true: the default sizes), so
   * that the first real call costs about what a steady one does.
   */
  warmUp?: boolean | WarmUpOptions;
  /**
   * Scan every tensor argument of every call for NaN and ±Infinity and throw
   * a RangeError naming the first one (default false: they propagate). A
   * call's own `checkFinite` option wins.
   */
  checkFinite?: boolean;
}

/** Options of lab.warmUp(): the sizes to prepare memory for, and a time cap. */
export interface WarmUpOptions {
  /** E of the sizes to prepare for (default 512). */
  embedDim?: number;
  /** H (default 8). */
  numHeads?: number;
  /** L (default 128). */
  seqLen?: number;
  /** B (default 1). */
  batch?: number;
  /** Stop the warm-up rounds after this many milliseconds (default 3000). */
  budgetMs?: number;
}

/** What lab.warmUp() did. */
export interface WarmUpReport {
  rounds: number;
  ms: number;
}

/** The per-call switch of init's `checkFinite`. */
export interface CheckFiniteOption {
  /** Refuse NaN and ±Infinity in this call's tensors (RangeError); default: the lab's setting. */
  checkFinite?: boolean;
}

/**
 * Thrown when a disposed multiHeadAttention, selfAttentionLayer or KV cache
 * is used: a TypeError named 'DisposedError' (docs/errors.md).
 */
export declare class DisposedError extends TypeError {
  constructor(message?: string);
  readonly name: 'DisposedError';
}

/**
 * How a lab's compute functions return their results:
 * - 'sync': a value (the 'wasm' and 'wasm-scalar' backends);
 * - 'async': a Promise (the 'webgpu' backend);
 * - 'either': one or the other, decided at run time ('auto' picks webgpu or
 *   wasm); `await` works for both.
 */
export type LabMode = 'sync' | 'async' | 'either';

/** What a compute function of a lab in mode `M` returns for a result `T`. */
export type Returned<M extends LabMode, T> =
  M extends 'sync' ? T : M extends 'async' ? Promise<T> : T | Promise<T>;

/** Causal mask: query i may see keys j ≤ i (top-left aligned when Lq ≠ Lk). */
export interface CausalMask {
  kind: 'causal';
}
/** Padding mask: key j of batch row b is masked when j ≥ lengths[b]. */
export interface PaddingMask {
  kind: 'padding';
  lengths: ArrayLike<number>;
}
/**
 * Tensor mask, broadcast (numpy rules, right-aligned) to the scores [B,H,Lq,Lk].
 * 'keep': 0 means masked (PyTorch `masked_fill(mask == 0, -1e9)`);
 * 'block': 1 means masked (TensorFlow `scores += mask * -1e9`);
 * 'additive': added to the scores as is.
 */
export interface TensorMask {
  kind: 'keep' | 'block' | 'additive';
  data: ArrayLike<number> | NestedArray | boolean[] | boolean[][];
  shape?: number[];
}
export type MaskSpec = CausalMask | PaddingMask | TensorMask | WindowMask | AlibiMask;
/** One mask spec, or several combined (at most one of each kind). */
export type Mask = MaskSpec | MaskSpec[];

export interface AttentionResult {
  output: Tensor;
  /** null when `needWeights: false`. */
  weights: Tensor | null;
  /** scaledDotProductAttention / selfAttention with `trace`: scores, (mask), softmax, weighted_sum. */
  trace?: TraceStep[];
}

export interface TraceStep {
  step: 'input' | 'linear_qkv' | 'split_heads' | 'scores' | 'softcap' | 'mask' | 'softmax' | 'weighted_sum' | 'merge_heads' | 'output_linear' | 'dropout' | 'residual' | 'layer_norm';
  shape: number[];
  formula: string;
  shapes?: Record<string, number[]>;
  /** With `trace: 'values'`: the step's value, computed by the backend in use (shape = `shape`). */
  value?: Tensor;
  /** With `trace: 'values'`, on linear_qkv and split_heads: `{ q, k, v }`. */
  values?: Record<string, Tensor>;
}

export interface ForwardResult extends AttentionResult {
  trace?: TraceStep[];
}

export interface LayerForwardResult extends ForwardResult {
  /** The dropout seed this call used (0 in eval mode). */
  dropoutSeed: number;
}

export type WeightLayout = 'torch' | 'keras';

export interface MhaWeights {
  wq?: TensorLike; bq?: TensorLike;
  wk?: TensorLike; bk?: TensorLike;
  wv?: TensorLike; bv?: TensorLike;
  wo?: TensorLike; bo?: TensorLike;
}
export interface LayerWeights extends MhaWeights {
  gamma?: TensorLike;
  beta?: TensorLike;
}

export interface MhaConfig {
  /** E */
  embedDim: number;
  /** H; must divide embedDim. */
  numHeads: number;
  /** Width of the key input (default E). */
  kdim?: number;
  /** Width of the value input (default E). */
  vdim?: number;
  /** Q/K/V/O linear layers with bias (default true). */
  bias?: boolean;
  /** Seed of the deterministic Xavier-uniform initialisation (default 0). */
  seed?: number;
}

export interface ForwardOptions extends CheckFiniteOption {
  mask?: Mask;
  /** Return the attention weights (default true). */
  needWeights?: boolean;
  /** Average the weights over heads: [B,Lq,Lk] instead of [B,H,Lq,Lk] (default false). */
  averageWeights?: boolean;
  /** true: the shape trace; 'values': every step with its value (default false). */
  trace?: boolean | 'values';
}

export interface MhaForwardOptions extends ForwardOptions {
  /**
   * Incremental decoding: `key`/`value` are only the new positions; their K
   * and V are appended to the cache and attention covers every cached
   * position (Lk_total = kvCache.length + Lk). Causal masking is then
   * bottom-right aligned (query i sees keys j <= Lk_total - Lq + i); tensor
   * masks and weights cover [.., Lq, Lk_total].
   */
  kvCache?: KVCache;
}

/** Keys and values of the positions a MultiHeadAttention has seen (from createKVCache). */
export interface KVCache {
  readonly batch: number;
  readonly maxLength: number;
  /** Positions held. */
  readonly length: number;
  readonly disposed: boolean;
  /** Forgets every position (length 0), keeping the memory. */
  reset(): void;
  /** Keeps the first `length` positions (0..length): rolls back steps or returns to a prompt. */
  truncate(length: number): void;
  /** Bytes held by the cached keys and values. */
  heldBytes(): number;
  /** Frees the cache; safe to call twice. */
  dispose(): void;
}

export interface MultiHeadAttention {
  readonly embedDim: number;
  readonly numHeads: number;
  readonly headDim: number;
  readonly kdim: number;
  readonly vdim: number;
  readonly bias: boolean;
  readonly seed: number;
  readonly disposed: boolean;
  /** Sets any subset of the weights. torch: W [out,in]; keras: W [in,out]; biases [E]. */
  setWeights(weights: MhaWeights, options?: { layout?: WeightLayout; checkFinite?: boolean }): this;
  getWeights(options?: { layout?: WeightLayout }): Record<'wq' | 'wk' | 'wv' | 'wo', Tensor> & Partial<Record<'bq' | 'bk' | 'bv' | 'bo', Tensor>>;
  /** query [B,Lq,E] (or [Lq,E]); key [B,Lk,kdim] (default query); value [B,Lk,vdim] (default key). */
  forward(query: TensorLike, key?: TensorLike, value?: TensorLike, options?: MhaForwardOptions): Promise<ForwardResult>;
  /** Synchronous forward (wasm backends only). */
  forwardSync(query: TensorLike, key?: TensorLike, value?: TensorLike, options?: MhaForwardOptions): ForwardResult;
  /**
   * A key/value cache of `batch` (default 1) sequences of up to `maxLength`
   * positions (2·batch·maxLength·embedDim floats). On webgpu, cached steps run
   * on wasm.
   */
  createKVCache(options: { maxLength: number; batch?: number }): KVCache;
  /** Bytes held in wasm memory by weights and reusable buffers. */
  heldBytes(): number;
  /** Frees the weights and buffers; safe to call twice. */
  dispose(): void;
}

export interface LayerConfig extends Omit<MhaConfig, 'kdim' | 'vdim'> {
  /** Dropout probability in [0, 1) (default 0.1); active only with `training: true`. */
  dropout?: number;
  /** LayerNorm epsilon (default 1e-5). */
  eps?: number;
}

export interface LayerForwardOptions extends ForwardOptions {
  /** Apply dropout (default false). */
  training?: boolean;
  /** uint32 seed of this call's dropout mask (default: the next seed of the layer's stream). */
  dropoutSeed?: number;
}

/** y = LayerNorm(x + Dropout(MHA(x, x, x))) — tutorial 1, step 5. */
export interface SelfAttentionLayer {
  readonly embedDim: number;
  readonly numHeads: number;
  readonly headDim: number;
  readonly dropout: number;
  readonly eps: number;
  readonly bias: boolean;
  readonly seed: number;
  readonly disposed: boolean;
  setWeights(weights: LayerWeights, options?: { layout?: WeightLayout; checkFinite?: boolean }): this;
  getWeights(options?: { layout?: WeightLayout }): Record<'wq' | 'wk' | 'wv' | 'wo' | 'gamma' | 'beta', Tensor> & Partial<Record<'bq' | 'bk' | 'bv' | 'bo', Tensor>>;
  forward(x: TensorLike, options?: LayerForwardOptions): Promise<LayerForwardResult>;
  forwardSync(x: TensorLike, options?: LayerForwardOptions): LayerForwardResult;
  heldBytes(): number;
  dispose(): void;
}

export interface ShapeTraceParams {
  batch?: number;
  lq: number;
  lk?: number;
  embedDim: number;
  numHeads: number;
  kdim?: number;
  vdim?: number;
  mask?: boolean;
  layer?: boolean;
  unbatched?: boolean;
  training?: boolean;
  /** The weight layout the formulas are written in (default 'torch': x·Wᵀ; 'keras': x·W). */
  layout?: WeightLayout;
}

/** A value, or a Promise of it on the 'webgpu' backend (`await` works for both). */
export type MaybePromise<T> = T | Promise<T>;

/**
 * The API object `init` resolves to. `M` says how compute functions return
 * (see LabMode): `init({ backend: 'wasm' })` gives `AttentionLab<'sync'>`, so
 * `lab.selfAttention(x).output` type-checks; 'webgpu' gives
 * `AttentionLab<'async'>`; 'auto' (the default) gives `AttentionLab<'either'>`.
 */
export interface AttentionLab<M extends LabMode = 'either'> {
  /**
   * The backend in use. A 'webgpu' lab reads 'wasm' after its device was lost
   * (its calls keep returning Promises).
   */
  readonly backend: M extends 'sync' ? 'wasm' | 'wasm-scalar' : BackendName;
  /** The kernel set, e.g. 'sse4.1' (wasm SIMD128) or 'scalar'. */
  readonly kernelArch: string;
  /**
   * Bytes the wasm heap may grow to, as the wasm module reports it: the build's
   * maximum of 4 GB, which Emscripten caps one 64 KiB page short (4,294,901,760).
   * loadModel's memory rule and the folder listing use it; an engine may still
   * grant less at run time. On webgpu, that of its wasm backend; null without one.
   */
  readonly heapLimit: number | null;
  /** Sinusoidal positional encoding [seqLen, dModel]. */
  positionalEncoding(seqLen: number, dModel: number, options?: { base?: number }): Returned<M, Tensor>;
  /** softmax(X·Xᵀ/√E)·X for x [L,E] or [B,L,E]. */
  selfAttention(x: TensorLike, options?: { mask?: Mask; scale?: number; trace?: boolean | 'values'; checkFinite?: boolean }): Returned<M, AttentionResult>;
  /** softmax(Q·Kᵀ·scale + mask)·V over any leading dims; scale defaults to 1/√D. */
  scaledDotProductAttention(q: TensorLike, k: TensorLike, v: TensorLike, options?: SdpaOptions & { trace?: boolean | 'values'; checkFinite?: boolean }): Returned<M, AttentionResult>;
  multiHeadAttention(config: MhaConfig): MultiHeadAttention;
  selfAttentionLayer(config: LayerConfig): SelfAttentionLayer;
  /**
   * Runs every function once per round, at small sizes until the engine has
   * optimized code for them, then once at the given sizes (memory grown), so
   * that the first real call costs about what a steady one does. Objects it
   * makes are disposed.
   */
  warmUp(options?: WarmUpOptions): Promise<WarmUpReport>;
  /** The shape trace of a forward pass, without computing it. */
  shapeTrace(params: ShapeTraceParams): TraceStep[];
  /**
   * 'devicelost': the WebGPU device was lost; 'backendchange': calls now run on
   * wasm (`lab.backend` reads 'wasm'). No-ops on the wasm backends.
   */
  addEventListener(type: 'devicelost' | 'backendchange', listener: (event: Event) => void): void;
  removeEventListener(type: 'devicelost' | 'backendchange', listener: (event: Event) => void): void;
}

/**
 * Loads the library. Several calls with the same backend share one wasm
 * instance. The result's type follows the backend asked for: 'wasm' and
 * 'wasm-scalar' return values, 'webgpu' Promises, 'auto' either (use `await`).
 */
export function init(options: InitOptions & { backend: 'wasm' | 'wasm-scalar' }): Promise<AttentionLab<'sync'>>;
export function init(options: InitOptions & { backend: 'webgpu' }): Promise<AttentionLab<'async'>>;
export function init(options?: InitOptions): Promise<AttentionLab<'either'>>;

/** True when the engine validates a WebAssembly SIMD128 module. */
export function simdSupported(): boolean;

// ---- Weight files (web/lib/io; docs/weights.md) ------------------------------

/** Element types of weight files, by their safetensors names. */
export type WeightDtype = 'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'U64' | 'I32' | 'U32' | 'I16' | 'U16' | 'I8' | 'U8' | 'BOOL';
/** Dtypes the writers produce. */
export type WritableDtype = 'F32' | 'F16' | 'BF16' | 'F64' | 'I32' | 'I64';

/**
 * A tensor read from a file: float dtypes become a Float32Array (exactly for
 * F16/BF16, rounded for F64), integer dtypes an Int32Array (values outside
 * int32 are an error). `dtype` is the file's. The data may be a view over the
 * input buffer (F32/I32 at an aligned offset) unless `copy: true`.
 */
export interface FileTensor {
  data: Float32Array | Int32Array;
  shape: number[];
  dtype: WeightDtype;
}

/** A tensor to write; dtype defaults to 'I32' for an Int32Array, else 'F32'. */
export interface WritableTensor {
  data: Float32Array | Int32Array | ArrayLike<number>;
  shape: number[];
  dtype?: WritableDtype;
}

export interface SafetensorsReadOptions {
  /** Read only these tensors (an error names one the file lacks). */
  names?: string[];
  /** Always copy the data instead of viewing the input buffer (default false). */
  copy?: boolean;
  /** Largest header accepted in bytes (default 100 000 000). */
  maxHeaderBytes?: number;
}

export interface SafetensorsContents {
  tensors: Record<string, FileTensor>;
  /** The file's "__metadata__" (string → string), or null. */
  metadata: Record<string, string> | null;
}

export interface SafetensorsEntry {
  name: string;
  dtype: WeightDtype;
  shape: number[];
  byteLength: number;
}

/** A safetensors file listed from its header; tensors are read on demand. */
export interface OpenedSafetensors {
  entries: SafetensorsEntry[];
  metadata: Record<string, string> | null;
  fileSize: number;
  /** Reads the named tensors (default: all), each with one File.slice. */
  read(names?: string[]): Promise<Record<string, FileTensor>>;
}

export interface WeightFileFunctions {
  /** Reads a safetensors file held in memory. Bad files throw a RangeError naming the problem. */
  readSafetensors(bytes: ArrayBuffer | ArrayBufferView, options?: SafetensorsReadOptions): SafetensorsContents;
  /** Writes tensors and string metadata as safetensors (header padded to 8 bytes, data aligned). */
  writeSafetensors(tensors: Record<string, WritableTensor>, metadata?: Record<string, string> | null): Uint8Array;
  /** Lists a Blob/File (or bytes) by reading only its header; `read` fetches the tensors asked for. */
  openSafetensors(source: Blob | { size: number; slice(start: number, end: number): Blob } | ArrayBuffer | ArrayBufferView, options?: { maxHeaderBytes?: number }): Promise<OpenedSafetensors>;
  /** Reads a .npy file (v1.0–3.0, either byte order, C or Fortran order). */
  readNpy(bytes: ArrayBuffer | ArrayBufferView, options?: { copy?: boolean }): FileTensor;
  /** Writes a .npy file (v1.0, little-endian, C order); .npy has no BF16. */
  writeNpy(tensor: WritableTensor): Uint8Array;
  /** Reads an .npz of stored members (numpy.savez); names lose '.npy'. Deflated members are refused. */
  readNpz(bytes: ArrayBuffer | ArrayBufferView, options?: { copy?: boolean }): { tensors: Record<string, FileTensor> };
  /** Writes an .npz of stored NAME.npy members. */
  writeNpz(tensors: Record<string, WritableTensor>): Uint8Array;
}

export interface AttentionLab<M extends LabMode = 'either'> extends WeightFileFunctions {}

/**
 * One layer's attention weights as forward returns them, { data, shape [B, H, Lq, Lk] }, averaged
 * over the heads in float64 → { data: Float32Array, shape [B, Lq, Lk] }: PyTorch's
 * average_attn_weights=True, the same values as forward's attentions: 'mean' (for when the heads
 * are wanted too). Throws a TypeError for anything that is not such a tensor.
 */
export declare function headMean(attention: { data: ArrayLike<number>; shape: number[] }): Tensor;

export declare const readSafetensors: WeightFileFunctions['readSafetensors'];
export declare const writeSafetensors: WeightFileFunctions['writeSafetensors'];
export declare const openSafetensors: WeightFileFunctions['openSafetensors'];
export declare const readNpy: WeightFileFunctions['readNpy'];
export declare const writeNpy: WeightFileFunctions['writeNpy'];
export declare const readNpz: WeightFileFunctions['readNpz'];
export declare const writeNpz: WeightFileFunctions['writeNpz'];

// ---- GGUF files (web/lib/io/gguf.js; llama.cpp's format, docs/models.md) ----

export type GgmlTypeName = 'F32' | 'F16' | 'BF16' | 'Q8_0' | 'Q4_0' | 'Q4_K' | 'Q6_K' | string;
export interface GgufTensorInfo {
  name: string;
  /** ggml type name, e.g. 'Q4_K' (dtype is the same string). */
  ggmlType: GgmlTypeName;
  dtype: GgmlTypeName;
  /** torch order: ggml's ne reversed. */
  shape: number[];
  /** ggml order (ne[0] is the innermost, contiguous dimension). */
  ne: number[];
  count: number;
  /** absolute byte range in the file: [begin, end). */
  begin: number;
  end: number;
}
export interface GgufHeader {
  version: 2 | 3;
  /** values: number, bigint (64-bit beyond 2^53), boolean, string or (nested) arrays. */
  metadata: Map<string, unknown>;
  /** 'UINT8' … 'FLOAT64', 'STRING', 'ARRAY' per key. */
  metadataTypes: Map<string, string>;
  alignment: number;
  dataOffset: number;
  tensors: GgufTensorInfo[];
}
export interface GgufFile extends GgufHeader {
  bytes(name: string): Uint8Array;
  tensor(name: string): Float32Array;
}
export interface GgufLazyFile extends GgufHeader {
  bytes(name: string): Promise<Uint8Array>;
  tensor(name: string): Promise<Float32Array>;
}

export interface GgufFunctions {
  /** Parses a GGUF v2/v3 header from the file's first bytes (fileSize: the whole file's, for the data checks); reads no tensor data. */
  parseGgufHeader(bytes: Uint8Array, fileSize?: number, where?: string): GgufHeader;
  /** Reads a whole GGUF file held in memory; tensor(name) dequantizes (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K). */
  readGguf(source: Uint8Array | ArrayBuffer | ArrayBufferView): GgufFile;
  /** Opens a GGUF Blob/File lazily: only the header, then one tensor per call. */
  openGguf(source: Blob | Uint8Array | ArrayBuffer): Promise<GgufLazyFile | GgufFile>;
  /** Writes a GGUF v3 file of F32, F16, Q8_0 or Q4_0 tensors (quantized as ggml-quants.c's reference quantizers). */
  writeGguf(
    tensors: Record<string, { data: Float32Array; shape: number[]; type?: 'F32' | 'F16' | 'Q8_0' | 'Q4_0' }>,
    metadata?: Record<string, string | number | boolean | bigint | Array<string | number | boolean | bigint>>,
  ): Uint8Array;
}

export declare const parseGgufHeader: GgufFunctions['parseGgufHeader'];
export declare const readGguf: GgufFunctions['readGguf'];
export declare const openGguf: GgufFunctions['openGguf'];
export declare const writeGguf: GgufFunctions['writeGguf'];

// ---- State dicts of other frameworks (web/lib/io/state-dict.js; docs/weights.md) ----

export type StateDictFormat = 'torch' | 'hf-bert' | 'hf-gpt2' | 'hf-llama' | 'keras';

/** One attention layer found in a state dict. */
export interface AttentionLayerInfo {
  /** The layer's own prefix, e.g. 'h.0.', 'bert.encoder.layer.3.', 'layers.0.self_attn.'. */
  prefix: string;
  format: StateDictFormat;
  embedDim?: number;
  kdim?: number;
  vdim?: number;
  /** null when the weights do not determine it (all but keras). */
  numHeads?: number | null;
  bias?: boolean;
  /** A decoder layer meant to run with a causal mask (GPT-2, Llama). */
  causal?: boolean;
  /** Llama: rotary position embeddings; qDim/kvDim are the q_proj and k_proj rows. */
  rope?: boolean;
  qDim?: number;
  kvDim?: number;
  /** The norm that goes with the attention: 'post' = LayerNorm(x + attn(x)), 'pre' = x + attn(norm(x)). */
  norm?: { placement: 'pre' | 'post'; kind: 'layer' | 'rms' } | null;
  /** Why the layer cannot be loaded (e.g. torch add_bias_kv). */
  error?: string;
}

export interface StateDictLayer {
  format: StateDictFormat;
  prefix: string;
  config: { embedDim: number; numHeads: number | null; kdim: number; vdim: number; bias: boolean; causal?: boolean; eps?: number; numKvHeads?: number; headDim?: number; qDim?: number; kvDim?: number; rope?: { kind: 'rotate_half'; base: number } };
  /** Torch layout (W [out, in]), ready for setWeights(weights, { layout: 'torch' }). */
  weights: Record<'wq' | 'wk' | 'wv' | 'wo', Tensor> & Partial<Record<'bq' | 'bk' | 'bv' | 'bo', Tensor>>;
  norm: { gamma: Tensor; beta: Tensor | null; eps: number; placement: 'pre' | 'post'; kind: 'layer' | 'rms' } | null;
}

export interface StateDictOptions {
  /** Default: the only format found. */
  format?: StateDictFormat;
  /** Default: the only layer found. */
  prefix?: string;
}

type StateDictInput = Record<string, { data?: ArrayLike<number>; shape: number[] }> | SafetensorsEntry[];

export interface StateDictFunctions {
  /** The attention layers of a state dict (tensors, or openSafetensors entries). */
  listAttentionLayers(tensors: StateDictInput): AttentionLayerInfo[];
  /** One layer's weights in torch layout, its config and its norm. `numHeads` splits Llama's GQA heads. */
  fromStateDict(tensors: Record<string, { data: ArrayLike<number>; shape: number[] }>, options?: StateDictOptions & { numHeads?: number }): StateDictLayer;
  /** A state dict of `format` from torch-layout weights (as getWeights() returns). */
  toStateDict(weights: MhaWeights, options: { format: StateDictFormat; prefix?: string; config: { embedDim: number; numHeads: number; kdim?: number; vdim?: number; bias?: boolean }; norm?: { gamma: Tensor; beta?: Tensor | null } | null }): Record<string, Tensor>;
}

export interface AttentionLab<M extends LabMode = 'either'> extends StateDictFunctions {}

export declare const listAttentionLayers: StateDictFunctions['listAttentionLayers'];
export declare const fromStateDict: StateDictFunctions['fromStateDict'];
export declare const toStateDict: StateDictFunctions['toStateDict'];

export interface MultiHeadAttention {
  /**
   * Loads one attention layer of a state dict (e.g. readSafetensors(bytes).tensors).
   * The module's sizes, heads (when the file records them) and bias setting
   * must match; a RangeError says what differs. Returns this.
   */
  loadStateDict(tensors: Record<string, { data: ArrayLike<number>; shape: number[] }>, options?: StateDictOptions | AttentionLayerInfo): this;
  /** The weights as a state dict of `format`, names after `prefix` (default ''). Bit-exact. */
  stateDict(options: { format: StateDictFormat; prefix?: string }): Record<string, Tensor>;
}

export interface SelfAttentionLayer {
  /** Loads attention + post-LN LayerNorm ('torch' inside nn.TransformerEncoderLayer, 'hf-bert'); pre-norm formats are refused. */
  loadStateDict(tensors: Record<string, { data: ArrayLike<number>; shape: number[] }>, options?: StateDictOptions | AttentionLayerInfo): this;
  /** The weights and LayerNorm as a 'torch' (prefix default 'self_attn.') or 'hf-bert' state dict. */
  stateDict(options: { format: 'torch' | 'hf-bert'; prefix?: string }): Record<string, Tensor>;
}

// ---- Attention variants: GQA/MQA, RoPE, windows, softcap, ALiBi, maskFill ----
// (docs/attention-variants.md)

export interface CausalMask {
  /**
   * 'top-left' (default): query i sees keys j ≤ i. 'bottom-right': the last
   * query sees every valid key: j ≤ i + len_b − Lq (len_b = padding lengths[b] or Lk).
   */
  align?: 'top-left' | 'bottom-right';
  /** With 'top-left': query i sits at p_i = i + offset (e.g. ONNX's past length). */
  offset?: number;
}
/** Sliding window: query i (at p_i, from `align`) sees keys p_i − left ≤ j ≤ p_i + right; −1 leaves a side unbounded. */
export interface WindowMask {
  kind: 'window';
  left?: number;
  right?: number;
  align?: 'top-left' | 'bottom-right';
  /** With 'top-left': query i sits at p_i = i + offset. */
  offset?: number;
}
/** ALiBi bias −slopes[h]·|p_i − j| (p_i from the causal mask's align); default: the paper's slopes. */
export interface AlibiMask {
  kind: 'alibi';
  /** One slope per query head H. */
  slopes?: ArrayLike<number>;
}

export interface SdpaOptions {
  mask?: Mask;
  scale?: number;
  needWeights?: boolean;
  /** Soft-capping: scores = softcap·tanh(scores/softcap), after scaling, before the masks (> 0). */
  softcap?: number;
  /** Value of masked scores: −1e9 (default: a fully masked row is uniform) or −Infinity (ONNX: zero weights and output). */
  maskFill?: number;
}

export interface ForwardOptions {
  /** Value of masked scores: −1e9 (default) or −Infinity. */
  maskFill?: number;
}

export interface RopeConfig {
  /** Default 10000. */
  base?: number;
  /** Rotated dims R (even, ≤ D); default D. */
  rotaryDim?: number;
  /** Pairs (2i, 2i+1) instead of halves (i, i+R/2); default false. */
  interleaved?: boolean;
}

export interface MhaConfig {
  /** GQA/MQA: K and V heads Hkv (divides numHeads; default numHeads). The KV cache holds Hkv heads. */
  numKvHeads?: number;
  /** Rotary embedding of Q and K after the projection (positions continue from a KV cache's length). */
  rope?: RopeConfig | boolean;
}

/** checkFinite scans x, cos and sin. */
export interface RotaryEmbeddingOptions extends CheckFiniteOption {
  /** Positions [B, L]: rows of cos/sin, or the angles' positions (default 0..L−1). */
  positionIds?: ArrayLike<number> | number[][] | TensorLike;
  /** [maxPosition, R/2] with positionIds, [B, L, R/2] without; default: computed from base. */
  cos?: TensorLike;
  sin?: TensorLike;
  base?: number;
  rotaryDim?: number;
  interleaved?: boolean;
  /** H, for x of shape [B, L, H·D]. */
  numHeads?: number;
}

export interface AttentionLab<M extends LabMode = 'either'> {
  /** Rotary position embedding (ONNX RotaryEmbedding) of x [B,H,L,D] or [B,L,H·D]. */
  rotaryEmbedding(x: TensorLike, options?: RotaryEmbeddingOptions): Returned<M, Tensor>;
  /** cos/sin tables [maxPosition, rotaryDim/2] of p·base^(−2i/rotaryDim). */
  rotaryCache(maxPosition: number, rotaryDim: number, options?: { base?: number }): Returned<M, { cos: Tensor; sin: Tensor }>;
  /** The ALiBi paper's slopes for `heads` heads. */
  alibiSlopes(heads: number): Returned<M, Float32Array>;
}

/** checkFinite scans x and weight. */
export interface RmsNormOptions extends CheckFiniteOption {
  /** [E] (x's last dim); default ones. */
  weight?: TensorLike;
  /** > 0; default 1e-5 (ONNX RMSNormalization). */
  eps?: number;
}

export interface AttentionLab<M extends LabMode = 'either'> {
  /**
   * RMSNorm over the last dim of x [..., E]: x / sqrt(mean(x²) + eps) · weight
   * (Llama's pre-norm; the per-head QK-norm of Qwen3, OLMo 2, Gemma 3). Same shape as x.
   */
  rmsNorm(x: TensorLike, options?: RmsNormOptions): Returned<M, Tensor>;
  /**
   * A linear layer, as torch.nn.Linear or a Keras Dense: x [..., in] → [..., out],
   * x·Wᵀ + b with weight [out, in] (layout 'torch', the default) or x·W + b with
   * weight [in, out] (layout 'keras': a Dense kernel, GPT-2's Conv1D). bias [out] or null.
   */
  linear(x: TensorLike, weight: TensorLike, bias?: TensorLike | ArrayLike<number> | null, options?: { layout?: WeightLayout } & CheckFiniteOption): Returned<M, Tensor>;
}

// ---------------------------------------------------------------------------
// Training (docs/training.md). Runs on the wasm backends; on webgpu these
// throw an Error naming the backend to use.

/** Token ids [B, L]: { data: Int32Array | number[], shape }, nested arrays, or one flat sequence. */
export type TokensLike = { data: ArrayLike<number>; shape: readonly number[] } | number[][] | number[];
export interface IntTensor {
  data: Int32Array;
  shape: number[];
}

export interface SdpaBackwardResult {
  dq: Tensor;
  dk: Tensor;
  dv: Tensor;
  /** The recomputed forward output. */
  output: Tensor;
}

export interface MhaGradients {
  output: Tensor;
  dQuery: Tensor;
  dKey: Tensor;
  dValue: Tensor;
  /** Torch layout; biases absent when the config has none. */
  dWeights: { wq: Tensor; bq?: Tensor; wk: Tensor; bk?: Tensor; wv: Tensor; bv?: Tensor; wo: Tensor; bo?: Tensor };
}

export interface LayerGradients {
  output: Tensor;
  dx: Tensor;
  dWeights: MhaGradients['dWeights'] & { gamma: Tensor; beta: Tensor };
}

export interface MultiHeadAttention {
  /** Gradients of Σ dOutput ⊙ forward(query, key, value) (the forward's options). */
  backward(query: TensorLike, key: TensorLike | undefined, value: TensorLike | undefined, dOutput: TensorLike, options?: { mask?: Mask; maskFill?: number }): MhaGradients;
}

export interface SelfAttentionLayer {
  /** Gradients of Σ dOutput ⊙ forward(x); with training: true, dropout uses dropoutSeed. */
  backward(x: TensorLike, dOutput: TensorLike, options?: { mask?: Mask; maskFill?: number; training?: boolean; dropoutSeed?: number }): LayerGradients;
}

export interface TransformerConfig {
  vocabSize: number;
  maxLength: number;
  /** E (default 64) */
  embedDim?: number;
  /** H, divides E unless headDim is given (default 4) */
  numHeads?: number;
  /** N blocks (default 1) */
  numLayers?: number;
  /** F (default 4·E) */
  ffnDim?: number;
  causal?: boolean;
  /**
   * Positions (default 'sinusoidal'): added to the token embedding
   * ('sinusoidal', 'learned'), rotary embedding of Q and K in every block's
   * attention ('rope': all D = E/H dims, halves pairing, base 10000; D must be
   * even), or none.
   */
  positional?: 'sinusoidal' | 'learned' | 'rope' | 'none';
  /** On the attention and feed-forward outputs while training (default 0). */
  dropout?: number;
  eps?: number;
  seed?: number;
  /**
   * 'gpt2': GPT-2's block, the one lab.loadModel runs for GPT-2 files: pre-LayerNorm
   * with a final norm, gelu_new, learned positions, causal, the head tied to the
   * token embedding (no head bias) and GPT-2's init (normal 0.02, residual
   * projections 0.02/√(2N)); save() then writes Hugging Face files. Default:
   * the post-LayerNorm block of the training chapter.
   */
  architecture?: 'default' | 'gpt2';
  /** Pre-norm blocks and a final norm (default false; 'gpt2': true). */
  prenorm?: boolean;
  /**
   * MLP activation (default 'gelu', erf; 'gpt2': 'gelu_new', the tanh form).
   * 'swiglu', 'geglu' (exact GELU) and 'geglu_tanh' (tanh GELU) are gated:
   * W2·(act(Wg·x) ⊙ W1·x), with the gate ffn.wg; 'relu' (T5) and 'silu' (Marian's swish) are not.
   */
  activation?: 'gelu' | 'gelu_new' | 'swiglu' | 'geglu' | 'geglu_tanh' | 'relu' | 'silu';
  /** The head is the token embedding (default false; 'gpt2': true). */
  tieEmbeddings?: boolean;
  /** A bias on the logits (default true; 'gpt2': false). */
  headBias?: boolean;
  /** D of every head (default 0: embedDim / numHeads); with it, numHeads need not divide embedDim. Wq [H·D, E], Wo [E, H·D]. */
  headDim?: number;
  /** RMSNorm (eps) over D of each head's q and k, before RoPE (default false; weights attn.q_norm / attn.k_norm [D], init 1). */
  qkNorm?: boolean;
  /** The attention score scale (default 0: 1/√D). */
  attnScale?: number;
  /** > 0: attention scores c·tanh(s/c) after the scale, before the mask (default 0: none). */
  attnSoftcap?: number;
  /** > 0: logits c·tanh(z/c) (default 0: none). */
  finalSoftcap?: number;
  /** > 0: on local layers query i sees keys i − window < j ≤ i (causal, with the KV cache too), or |i − j| < window (causal false: ModernBERT's local layers) (default 0). */
  slidingWindow?: number;
  /** '' (default: every layer local when slidingWindow > 0), or numLayers chars 'g' (global) / 'l' (local). */
  layerKinds?: string;
  /** The RoPE base of local layers (default 0: the RoPE base). */
  ropeLocalTheta?: number;
  /** R, even, ≤ D: RoPE on the first R dims of each head (default 0: all D). */
  rotaryDim?: number;
  /** Pre-norm only: x + Attn(Norm1(x)) + MLP(Norm2(x)) (default false). */
  parallelResidual?: boolean;
  /** Pre-norm only: post-attention and post-FFN norms, h = x + PostAttnNorm(Attn(Norm1(x))), x' = h + PostFfnNorm(MLP(Norm2(h))) (default false). */
  sandwichNorm?: boolean;
  /** The token embedding is multiplied by it, before positions are added (default 1). */
  embedScale?: number;
  /** false: the LayerNorms have no bias (ModernBERT's norm_bias false; default true). */
  normBias?: boolean;
  /** false (pre-norm only): block 0 attends to its input itself, without norm1 (ModernBERT's identity attn_norm; default true). */
  firstNorm1?: boolean;
  /** A gated activation's gate bias, blocks.{i}.ffn.bg [F], init 0 (default false). */
  gateBias?: boolean;
}

export interface TrainerOptions {
  optimizer?: 'adamw';
  /** default 1e-3 */
  lr?: number;
  betas?: [number, number];
  eps?: number;
  /** Decoupled, on weight matrices and embeddings (default 0.01). */
  weightDecay?: number;
  /** Steps of linear learning-rate warmup (default 0). */
  warmup?: number;
  /** Global gradient-norm clip, 0 = off (default 1). */
  clip?: number;
}

export interface StepResult {
  loss: number;
  /** Share of the positions with lossMask > 0 predicted right. */
  accuracy: number;
  /** Share of sequences with all of those positions right. */
  sequenceAccuracy: number;
  gradNorm: number;
  lr: number;
  step: number;
}

export interface Trainer {
  readonly options: Readonly<Required<TrainerOptions>>;
  /** The message of the step that stopped on a non-finite loss, else null. */
  readonly stopped: string | null;
  /** Forward, backward and AdamW in one wasm call. Throws TrainingStoppedError on a NaN loss (weights kept). */
  step(tokens: TokensLike, targets: TokensLike, options?: { lossMask?: TensorLike | ArrayLike<number> }): StepResult;
  evaluate(tokens: TokensLike, targets: TokensLike, options?: { lossMask?: TensorLike | ArrayLike<number> }): Pick<StepResult, 'loss' | 'accuracy' | 'sequenceAccuracy'>;
  /** Sets the base learning rate of the next steps (a schedule's: call it before each step), keeping the AdamW moments and the step count (a new trainer resets them). */
  setLearningRate(lr: number): void;
  reset(): void;
}

/** Thrown by trainer.step when the loss or gradient becomes non-finite; the weights of the last good step are kept. */
export declare class TrainingStoppedError extends Error {
  readonly name: 'TrainingStoppedError';
}

export type WeightMap = Record<string, Tensor>;

export interface Transformer {
  readonly config: Readonly<Required<TransformerConfig>>;
  readonly parameterCount: number;
  readonly disposed: boolean;
  /** logits [B, L, vocab] and one attention map [B, H, L, L] per layer. */
  forward(tokens: TokensLike, options?: { attention?: boolean }): { logits: Tensor; attention: Tensor[] };
  trainer(options?: TrainerOptions): Trainer;
  getWeights(): WeightMap;
  getGradients(): WeightMap;
  setWeights(weights: Partial<WeightMap>): void;
  setHeadEnabled(layer: number, head: number, enabled: boolean): void;
  /**
   * Writes a weight (or rows [first, …) of it) from GGML blocks as a GGUF file
   * holds a Q8_0, Q4_0, Q4_K or Q6_K tensor [R rows of C]: C / 32 blocks a
   * row, 34 (Q8_0) or 18 (Q4_0) bytes each, or C / 256 super-blocks of 144
   * (Q4_K) or 210 (Q6_K). The weight takes their dequantized values (ggml's
   * dequantize_row_*); C must be a multiple of the block.
   */
  writeParamQuant(weight: string | number, kind: 'Q8_0' | 'Q4_0' | 'Q4_K' | 'Q6_K' | 8 | 2 | 12 | 14, data: Uint8Array, options?: { first?: number }): void;
  heldBytes(): number;
  /**
   * The Hugging Face files of a model with architecture 'gpt2' (GPT2LMHeadModel
   * names), which lab.loadModel and transformers read. Other architectures throw.
   */
  save(options?: { tokenizer?: object; dtype?: 'F32' | 'F16' }): ModelFiles;
  dispose(): void;
}

// ---- Whole models (docs/models.md) ---------------------------------------------

/** A Blob/File, bytes in memory, or (config and tokenizer) a parsed object, JSON text or a URL string. */
export type ModelFileSource = Blob | ArrayBuffer | ArrayBufferView;

/**
 * A GGUF file (llama.cpp's format, v2 or v3) with loadModel's options: its
 * config is its metadata (general.architecture llama, qwen2, qwen3, gemma,
 * gemma2, gemma3, phi3, gptneox or gpt2; Mistral is written as llama), so no
 * `config`; its tokenizer comes from tokenizer.ggml.* unless `tokenizer`
 * is given (null: none). F32/F16/BF16 tensors are kept as safetensors' are;
 * Q8_0, Q4_0, Q4_K and Q6_K are dequantised to float32 at load.
 */
export interface GgufLoadModelArgs {
  /** The .gguf file (its first bytes are 'GGUF'). */
  weights: ModelFileSource;
  tokenizer?: object | string | ModelFileSource | null;
  dtype?: 'auto' | 'float32';
  signal?: AbortSignal;
  onProgress?: (progress: { loaded: number; total: number }) => void;
}

export interface LoadModelArgs {
  /** The parsed config.json, its text or bytes, a Blob/File, or a URL string (fetched). */
  config: object | string | ModelFileSource;
  /**
   * model.safetensors, or its shards plus model.safetensors.index.json (a File or the parsed object); F32, F16, BF16.
   * Also PyTorch's pytorch_model.bin (torch.save's zip format, and the legacy format of torch < 1.6; read by a
   * restricted unpickler that runs nothing), or its shards plus pytorch_model.bin.index.json: told apart by the
   * file's first bytes.
   */
  weights: ModelFileSource | Array<ModelFileSource | object>;
  /** tokenizer.json (parsed, text, bytes, Blob/File or URL string); without it the model takes ids only. */
  tokenizer?: object | string | ModelFileSource | null;
  /**
   * 'auto' (default): a checkpoint whose matrices are all F16 (or all BF16) keeps its projections in 16 bits,
   * widened exactly inside the GEMM and GEMV (the same results as 'float32', half the memory and the bytes a
   * decoding step reads); 'float32' converts every weight as it is copied.
   */
  dtype?: 'auto' | 'float32';
  /** Cancels the load; what was allocated is freed. */
  signal?: AbortSignal;
  /** Bytes of tensors read so far, of the total. */
  onProgress?: (progress: { loaded: number; total: number }) => void;
}

/** Hugging Face files as save() writes them. */
export interface ModelFiles {
  'config.json': string;
  'model.safetensors': Uint8Array;
  'tokenizer.json'?: string;
}

export interface ModelConfig {
  modelType: 'gpt2' | 'llama' | 'qwen2' | 'qwen3' | 'mistral' | 'gemma' | 'gemma2' | 'gemma3_text' | 'phi3' | 'gpt_neox' | 'gpt_neo' | 'bert'
    | 'distilbert' | 'roberta' | 'xlm-roberta' | 'marian' | 'bart' | 't5';
  /** The decoder's (an encoder-decoder's) numbers of layers and heads; encoderLayers / encoderHeads the encoder's. */
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  embedDim: number;
  /** The MLP's inner width F (n_inner / intermediate_size). */
  ffnDim: number;
  vocabSize: number;
  /** The longest input (RoBERTa's: max_position_embeddings - pad_token_id - 1). */
  maxPositions: number;
  /** False for the encoders (bert, distilbert, roberta, xlm-roberta): fillMask, no nextTokens or generate. */
  causal: boolean;
  /** The token fillMask predicts at: '[MASK]' (bert, distilbert), '<mask>' (roberta, xlm-roberta); null for the causal models. */
  maskToken: string | null;
  /** As transformers' num_parameters(): tied weights once. */
  parameters: number;
  /** Bytes of weights held in wasm memory (float32, the projections of a 16-bit checkpoint in 16 bits, a GGUF file's Q8_0/Q4_0/Q4_K/Q6_K matrices as its blocks, plus the 16-bit copy of a tied LM head). */
  bytes: number;
  /** How the projections that are not GGML blocks are held: 'float32', or the checkpoint's 'float16' / 'bfloat16' (LoadModelArgs.dtype). */
  weightsDtype: 'float32' | 'float16' | 'bfloat16';
  /** The bytes held as GGML blocks, by ggml type (a GGUF file's Q8_0 / Q4_0 / Q4_K / Q6_K matrices, read as they are by the kernels), or null. */
  quantized: Readonly<Record<string, number>> | null;
  /** True for the encoder-decoders (marian, bart, t5): the model is an EncoderDecoderModel. */
  isEncoderDecoder?: boolean;
}

export interface EncoderDecoderConfig extends ModelConfig {
  modelType: 'marian' | 'bart' | 't5';
  isEncoderDecoder: true;
  encoderLayers: number;
  encoderHeads: number;
  /** The decoder's first id (config.json decoder_start_token_id; Marian's pad id). */
  decoderStartTokenId: number;
}

export interface EncoderDecoderForwardOptions {
  /** The decoder's ids (default: [decoderStartTokenId]); at most maxPositions. */
  decoderInputIds?: ArrayLike<number>;
  /**
   * default true; 'mean': each of the three kinds averaged over heads, [1, Lq, Lk] per layer
   * (PyTorch's average_attn_weights=True; headMean).
   */
  attentions?: boolean | 'mean';
}

/** transformers' Seq2SeqLMOutput: Le source tokens, Ld decoder tokens. */
export interface EncoderDecoderOutput {
  ids: number[];
  tokens: string[] | null;
  decoderInputIds: number[];
  decoderTokens: string[] | null;
  /** [1, Ld, V] */
  logits: Tensor;
  /** One [1, encoderHeads, Le, Le] per encoder layer ([1, Le, Le] with attentions: 'mean'); null with attentions: false. */
  encoderAttentions: Tensor[] | null;
  /** One [1, H, Ld, Ld] per decoder layer (causal; [1, Ld, Ld] with attentions: 'mean'). */
  decoderAttentions: Tensor[] | null;
  /** One [1, H, Ld, Le] per decoder layer ([1, Ld, Le] with attentions: 'mean'): which source tokens each target position read. */
  crossAttentions: Tensor[] | null;
  /** [1, Le, E]: the memory the decoder's cross-attention reads. */
  encoderLastHiddenState: Tensor;
}

/**
 * A translation model (marian, bart, t5): lab.loadModel<EncoderDecoderModel>(files). The encoder runs
 * once per source; the decoder's cross keys and values of its output are projected once and
 * decoding runs on the decoder's key/value cache. On a webgpu lab forward runs the encoder and
 * the decoder on the GPU (forwardSync, nextTokens and generate on the wasm copy). fillMask, save,
 * headRoles, headScores, logitLens, attribute and patch throw for these models.
 */
export interface EncoderDecoderModel extends Omit<Model, 'config' | 'forward' | 'forwardSync' | 'nextTokens' | 'generate'> {
  readonly config: Readonly<EncoderDecoderConfig>;
  forward(input: string | ArrayLike<number>, options?: EncoderDecoderForwardOptions): Promise<EncoderDecoderOutput>;
  forwardSync(input: string | ArrayLike<number>, options?: EncoderDecoderForwardOptions): EncoderDecoderOutput;
  /** The next target tokens after decoderInputIds (default: the start token) for the source `input`. */
  nextTokens(input: string | ArrayLike<number>, options?: { decoderInputIds?: ArrayLike<number>; k?: number; temperature?: number }): Promise<TokenProbability[]>;
  /** The translation of `input`, a token at a time from decoderStartTokenId (topK 1: greedy; text: special tokens skipped). */
  generate(input: string | ArrayLike<number>, options?: Omit<GenerateOptions, 'ablate'>): AsyncIterableIterator<GeneratedToken>;
}

export interface ModelOutput {
  ids: number[];
  /** The token strings (null without a tokenizer). */
  tokens: string[] | null;
  /** [1, L, V]; null for an encoder without its head. */
  logits: Tensor | null;
  /** One [1, H, L, L] per layer ([1, L, L], the mean over heads, with attentions: 'mean'); null with attentions: false. */
  attentions: Tensor[] | null;
  /**
   * The last hidden state [1, L, E] (after the final norm); always for the encoders. With hiddenStates: 'all',
   * transformers' output_hidden_states: numLayers + 1 of them (the embeddings, every block's input,
   * then the last hidden state).
   */
  hiddenStates: Tensor | Tensor[] | null;
}

export interface TokenProbability {
  id: number;
  token: string | null;
  prob: number;
}

export interface GeneratedToken {
  id: number;
  token: string | null;
  /** What this token adds to the decoded text. */
  text: string;
}

export interface GenerateOptions {
  /** default 32 */
  maxNewTokens?: number;
  /** >= 0; 0 is greedy (default 1). */
  temperature?: number;
  /** 0: off (default). */
  topK?: number;
  /** in (0, 1] (default 1). */
  topP?: number;
  /** The draws' seed (default 0): the same seed gives the same tokens. */
  seed?: number;
  signal?: AbortSignal;
  /** Generate from the ablated model (zero: over the cache; mean: the whole sequence each step). */
  ablate?: HeadAblation[];
}

/** A GPT-2, Llama or BERT checkpoint run by the library (lab.loadModel). */
export interface Model {
  readonly config: Readonly<ModelConfig>;
  readonly disposed: boolean;
  /** Ids with the special tokens the tokenizer's post-processor adds (as transformers' tokenizer(text)). */
  encode(text: string): number[];
  decode(ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }): string;
  /** Token strings as the tokenizer spells them ('Ġ', '▁', '##'). */
  tokens(ids: ArrayLike<number>): string[];
  /**
   * One forward pass: on a webgpu lab on the GPU (after a device loss on the wasm copy), else on wasm.
   * With `ablate`, of the ablated model, on the wasm copy (docs/interpretability.md).
   */
  forward(input: string | ArrayLike<number>, options?: ForwardOptions): Promise<ModelOutput>;
  /** The same call, synchronously, on the model's wasm copy (every backend). */
  forwardSync(input: string | ArrayLike<number>, options?: ForwardOptions): ModelOutput;
  /** The k most likely next tokens (causal models); with `ablate`, of the ablated model. */
  nextTokens(input: string | ArrayLike<number>, options?: { k?: number; temperature?: number; ablate?: HeadAblation[] }): Promise<TokenProbability[]>;
  /** A masked LM's top predictions at each mask token ([MASK]; <mask> for roberta and xlm-roberta), for the encoders with their MLM head. */
  fillMask(input: string | ArrayLike<number>, options?: { k?: number }): Promise<Array<{ position: number; predictions: TokenProbability[] }>>;
  /** Generated tokens, one at a time, over the key/value cache (causal models). */
  generate(prompt: string | ArrayLike<number>, options?: GenerateOptions): AsyncIterableIterator<GeneratedToken>;
  /** The Hugging Face files (config.json, model.safetensors in F32 or F16, tokenizer.json). */
  save(options?: { dtype?: 'F32' | 'F16'; format?: 'safetensors' }): ModelFiles;
  /** One GGUF v3 file (llama.cpp's names and layouts; matrices held as GGML blocks written as those blocks, the others in F32 or F16; the GGUF tokenizer metadata it was loaded with). */
  save(options: { dtype?: 'F32' | 'F16'; format: 'gguf' }): { 'model.gguf': Uint8Array };
  /** Every head's role scores on `text` (at most the model's positions), with their chance levels. */
  headRoles(text: string | ArrayLike<number>, options?: HeadRolesOptions): HeadRoles;
  /**
   * TransformerLens's head scores (head_detector.py, "mul" measure) from one forward with
   * attentions on the wasm copy; `headScores.repeated` scores (bos) r r (docs/interpretability.md).
   */
  readonly headScores: HeadScoresFunction;
  /**
   * The logit lens (TransformerLens accumulated_resid with apply_ln): the top-k next tokens at every
   * position for the embeddings and the residual after each block, each through the final norm
   * (its scale from that residual) and the unembedding. Pre-norm decoders only.
   */
  logitLens(input: string | ArrayLike<number>, options?: { k?: number; logits?: boolean }): LogitLens;
  /**
   * Direct logit attribution of logit[target] − logit[baseline] (or logit[target] without a baseline)
   * at `position` (default: the last), the final norm's scale frozen there. Pre-norm decoders only.
   */
  attribute(input: string | ArrayLike<number>, options: { target: number | string; baseline?: number | string; position?: number }): Attribution;
  /**
   * Activation patching from `clean` into `corrupted` (equal token lengths):
   * (LD_patched − LD_corrupted) / (LD_clean − LD_corrupted), LD at the last position. Pre-norm decoders only.
   */
  patch(options: PatchOptions): PatchResult;
  dispose(): void;
}

export interface ForwardOptions {
  /** default true; 'mean': averaged over heads, [1, L, L] per layer (PyTorch's average_attn_weights=True; headMean). */
  attentions?: boolean | 'mean';
  hiddenStates?: boolean | 'all';
  /** Heads whose z (attention-weighted sum of V, before o_proj) is replaced, at every position. */
  ablate?: HeadAblation[];
}

/** zero: z = 0; mean: z = its mean over this input's positions, in the ablated run. */
export interface HeadAblation {
  layer: number;
  head: number;
  mode: 'zero' | 'mean';
}

export interface LogitLens {
  ids: number[];
  tokens: string[] | null;
  /** [numLayers + 1, L, k] (Int32Array): row r is x_r (0: the embeddings; numLayers: the last block's output). */
  topIds: { data: Int32Array; shape: number[] };
  /** [numLayers + 1, L, k]: softmax over the vocabulary. */
  topProbs: Tensor;
  /** The strings of topIds, flat in the same order (null without a tokenizer). */
  topTokens: string[] | null;
  /** [numLayers + 1, L, V] with logits: true; its last row is forward's logits. */
  logits: Tensor | null;
}

/** The parts of the logit difference; they sum to logitDiff. */
export interface Attribution {
  target: number;
  baseline: number | null;
  position: number;
  /** x_0 (token + learned position embeddings). */
  embed: number;
  /** [numLayers, numHeads]: z_h · W_O[:, h]ᵀ, without the bias. */
  heads: Tensor;
  /** [numLayers]: o_proj's bias. */
  attnBias: Tensor;
  /** [numLayers]: each MLP's output. */
  mlps: Tensor;
  /** The final norm's bias and the unembedding's bias (TransformerLens leaves them out). */
  constant: number;
  /** logit[target] − logit[baseline] from the model's logits. */
  logitDiff: number;
}

export interface PatchOptions {
  clean: string | ArrayLike<number>;
  corrupted: string | ArrayLike<number>;
  target: number | string;
  baseline: number | string;
  /** 'heads' (default): [numLayers, numHeads], each head's z; 'residual': [numLayers, L], x_l at one position. */
  over?: 'heads' | 'residual';
}

export interface PatchResult extends Tensor {
  over: 'heads' | 'residual';
  target: number;
  baseline: number;
  ldClean: number;
  ldCorrupted: number;
  /** The raw LD of every patched run, same shape. */
  ldPatched: Tensor;
}

/** Each score of every head, [numLayers, numHeads]. */
export interface HeadScores {
  /** Σ_{i≥1} A[i][i−1] / L. */
  previousToken: Tensor;
  /** Σ over j < i with ids[j] = ids[i] of A[i][j], / L. */
  duplicateToken: Tensor;
  /** Σ over 1 ≤ j ≤ i with ids[j−1] = ids[i] (j−1 < i) of A[i][j], / L. */
  induction: Tensor;
  /** Σ_i A[i][0] / L (an attention sink; not a TransformerLens type). Floor 1/L on a causal model: row 0 always adds 1. */
  firstToken: Tensor;
}

export interface HeadScoresFunction {
  /** The scores on a text or ids (2 … the model's positions). */
  (input: string | ArrayLike<number>): HeadScores;
  /**
   * The scores on `length` seeded random tokens repeated twice (after the bos token when the model
   * has one; the same draw as headRoles), with the ids scored. length: 1 … ⌊(positions − bos) / 2⌋; seed: 0 … 2³² − 1 (default 0).
   */
  repeated(options: { length: number; seed?: number }): HeadScores & { ids: number[] };
}

export interface HeadRolesOptions {
  /** Length T of the random sequence repeated for the induction score (default min(64, positions / 2), or of the positions after the text with oneForward). */
  inductionLength?: number;
  /** Random sequences averaged (default 4; with oneForward, 1 and at most 1). */
  inductionSamples?: number;
  /**
   * Causal models: every score from one forward with attentions, over the text followed by
   * (bos) r r (the text's rows are those of the text alone). Default false: the text, then each
   * induction sequence, on its own.
   */
  oneForward?: boolean;
  /** Their seed (default 0). */
  seed?: number;
  /** Score the previous line (default: when the text has ，。 lines). */
  previousLine?: boolean;
}

/** Mean attention weights: on i − 1, on i, on 0, induction (r r: r_k → r_{k+1}), char j of line n → line n − 1. */
export interface HeadRoleScores {
  previousToken: number;
  self: number;
  firstToken: number;
  induction: number;
  /** Verse only: lines split at ，。！？； within a poem. */
  previousLine?: number;
}

export interface HeadRoles {
  heads: Array<{ layer: number; head: number } & HeadRoleScores>;
  /** The same means for a head that spreads its weight evenly (1/(i+1) at row i). */
  chance: HeadRoleScores;
  /** Tokens of the text. */
  length: number;
  /** The sequences of the induction score. */
  inductionIds: number[][];
  /** Forward passes the scores took (1 with oneForward). */
  forwards: number;
}

export interface AttentionLab<M extends LabMode = 'either'> {
  /**
   * A Hugging Face checkpoint (model_type gpt2, llama, qwen2 or bert), from its files:
   * { config, weights, tokenizer } or a FileList / array of Files named as the
   * folder names them; or a GGUF file (llama.cpp's format: bytes, a Blob/File,
   * { weights: file, … }, or a file list holding one .gguf and no other weights). Nothing is fetched unless a URL string is passed. Runs on
   * every backend; on 'webgpu' the weights are also uploaded to the GPU, where
   * model.forward runs (the other calls run on the model's wasm copy; docs/models.md).
   * The encoder-decoders (marian, bart, t5) load as an EncoderDecoderModel
   * (lab.loadModel<EncoderDecoderModel>(files)); on 'webgpu' their forward runs both stacks on the GPU.
   */
  loadModel(source: LoadModelArgs | GgufLoadModelArgs | ModelFileSource | FileList | File[]): Promise<Model>;
  loadModel<T extends EncoderDecoderModel>(source: LoadModelArgs | ModelFileSource | FileList | File[]): Promise<T>;
  /**
   * The package's character-level GPT-2 (English prose, Tang poems, or 'induction': chapter 10's
   * small English model trained with repeated random spans, which has an induction head), read
   * lazily from its own files (docs/models.md, docs/training.md).
   */
  pretrained(name: 'en' | 'zh' | 'induction'): Promise<Model>;
}

export interface TaskOptions {
  length?: number;
  vocab?: number;
  batch?: number;
  seed?: number;
}
export interface TaskBatch {
  tokens: IntTensor;
  targets: IntTensor;
  lossMask: Tensor;
}
export type TaskGenerator = (options?: TaskOptions) => TaskBatch;

export interface AttentionLab<M extends LabMode = 'either'> {
  /** Gradients of Σ dOutput ⊙ scaledDotProductAttention(q, k, v, options) (wasm backends). */
  /**
   * Takes the forward's options: every mask kind (causal with align/offset,
   * padding, window, alibi, keep/block/additive), scale, softcap and
   * maskFill; k and v may have Hkv heads (GQA/MQA: dk, dv sum over the
   * group's query heads).
   */
  scaledDotProductAttentionBackward(q: TensorLike, k: TensorLike, v: TensorLike, dOutput: TensorLike, options?: { mask?: Mask; scale?: number; softcap?: number; maskFill?: number }): SdpaBackwardResult;
  transformer(config: TransformerConfig): Transformer;
  readonly tasks: { copy: TaskGenerator; reverse: TaskGenerator; sort: TaskGenerator; shift: TaskGenerator; induction: TaskGenerator };
}

export interface StateDictFunctions {
  /** The names of the tensors one listed layer needs (attention and norm), so a big file's others are never read. */
  layerTensorNames(tensors: StateDictInput, layer: Pick<AttentionLayerInfo, 'prefix' | 'format'>): string[];
}
export declare const layerTensorNames: StateDictFunctions['layerTensorNames'];

// ---- Threads (docs/threads.md) ---------------------------------------------

export interface InitOptions {
  /**
   * Threads for the wasm kernels: 1 (the default), a count from 1 to 16, or
   * 'auto' = min(4, cores) where the threaded build can run (Node, or a
   * crossOriginIsolated page), else 1 without a word. A count above 1 on a page
   * without COOP/COEP isolation, or with backend 'wasm-scalar', is an error.
   */
  threads?: number | 'auto';
}

export interface AttentionLab<M extends LabMode = 'either'> {
  /** Threads the kernels use (1 unless `init({ threads })` started more; 1 after dispose()). */
  readonly threads: number;
  /**
   * Lets go of the backend. Labs of the same threaded module share its workers;
   * the last one disposed stops them. Objects made by a disposed lab must not
   * be used. A no-op the second time.
   */
  dispose(): void;
}

/** True when the threaded build can run here: Node, or a crossOriginIsolated page with shared wasm memory. */
export function threadsSupported(): boolean;

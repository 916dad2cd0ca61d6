// The backend interface: every operation a backend (wasm-backend.js,
// webgpu-backend.js) implements, and each argument bag written ONCE.
// `tsc -p web/lib/tsconfig.json` (part of `npm run typecheck`, run by
// `npm test`) checks web/lib against it: a missing or misnamed field fails
// the type check, not a run.
//
// The public API (lab.js and the module classes) validates and normalises
// every argument before a backend sees it: backends receive plain
// Float32Arrays, integer sizes and a normalised mask, and never re-validate
// user input. Wasm backends answer synchronously, the webgpu backend with
// Promises (`async` says which).
//
// Adding a free-function op: an entry in the op table (ops.js), whose
// OpTypes line declares its bag; both backends answer it through `op` (the
// wasm backend by name from its binding) without an edit here.
// Adding a method with its own kernels on both backends (the forwards):
// add its bag here, implement it in both backends (the type check then lists
// what is missing), call it from the wrapper.
// Adding an option to an existing op: add an optional field to its bag.
//
// Shape legend: B batch, Lq/Lk (L) sequence, E embed, H heads, D head dim,
// Dv value head dim.

import type { OpTypes } from './ops.js';

export type MaybePromise<T> = T | Promise<T>;

/** The ops of the op table (ops.js), answered through Backend.op. */
export type OpName = keyof OpTypes;
export type { OpTypes };

export type WeightKey = 'wq' | 'bq' | 'wk' | 'bk' | 'wv' | 'bv' | 'wo' | 'bo';
export type WeightLayout = 'torch' | 'keras';

/**
 * A mask after lib/mask.js normalizeMask: what every backend consumes.
 * kind: 0 none, 1 keep (0 = masked), 2 block (1 = masked), 3 additive.
 * shape4: the tensor mask folded to [mB, mH, mLq, mLk] (1 = broadcast).
 */
export interface MaskArgs {
  causal: boolean;
  /** Padding: per batch row, keys j >= lengths[b] are masked. */
  lengths: Int32Array | null;
  kind: number;
  data: Float32Array | null;
  shape4: number[];
  /** Whether the caller gave any mask (for the shape trace). */
  given: boolean;
  /** Attention variants (docs/attention-variants.md); align: 0 top-left, 1 bottom-right. */
  causalAlign?: number;
  /** Top-left: query i sits at i + offset. */
  causalOffset?: number;
  window?: boolean;
  /** -1: unbounded. */
  windowLeft?: number;
  windowRight?: number;
  windowAlign?: number;
  windowOffset?: number;
  alibi?: boolean;
  /** [H], or null for the paper's default slopes. */
  slopes?: Float32Array | null;
  /** Value of masked scores: -1e9 (default) or -Infinity. */
  fill?: number;
}

/** Configuration of a MultiHeadAttention (validated by validate.js readConfig). */
export interface MhaConfigArgs {
  embedDim: number;
  numHeads: number;
  kdim: number;
  vdim: number;
  bias: boolean;
  /** uint32 seed of the Xavier-uniform default weights. */
  seed: number;
  /** GQA/MQA: heads of K and V (default numHeads). */
  numKvHeads?: number;
  /** Rotary embedding of Q and K, or null. */
  rope?: { base: number; rotaryDim: number; interleaved: boolean } | null;
}

/** Configuration of a SelfAttentionLayer (kdim = vdim = embedDim). */
export interface LayerConfigArgs extends MhaConfigArgs {
  /** Dropout probability in [0, 1). */
  dropout: number;
  /** LayerNorm epsilon > 0. */
  eps: number;
}

/** Scaled dot-product attention over [B, H, L, D] row-major inputs. */
export interface SdpaArgs {
  /** Function name for error messages. */
  where: string;
  batch: number;
  heads: number;
  lq: number;
  lk: number;
  d: number;
  dv: number;
  /** [B, H, Lq, D] */
  q: Float32Array;
  /** [B, H, Lk, D]; may be the same array as q (self-attention). */
  k: Float32Array;
  /** [B, H, Lk, Dv]; may be the same array as k. */
  v: Float32Array;
  /** undefined: 1/√D. */
  scale: number | undefined;
  /** GQA/MQA: k and v have kvHeads heads (default heads). */
  kvHeads?: number;
  /** > 0, or undefined for none. */
  softcap?: number | undefined;
  mask: MaskArgs;
  needWeights: boolean;
  /** trace: 'values': also return scores, masked and weights (TraceOut). */
  trace: boolean;
}

/** Forward pass of a MultiHeadAttention. */
export interface MhaForwardArgs<C = any> {
  where: string;
  batch: number;
  lq: number;
  /** New keys of this call. */
  lk: number;
  /** Keys attended over: cached + new (= lk without a cache). */
  lkTotal: number;
  embedDim: number;
  numHeads: number;
  /** [B, Lq, E] */
  query: Float32Array;
  /** [B, Lk, kdim]; may be the same array as query. */
  key: Float32Array;
  /** [B, Lk, vdim]; may be the same array as key or query. */
  value: Float32Array;
  mask: MaskArgs;
  needWeights: boolean;
  /** Weights averaged over heads: [B, Lq, LkTotal] instead of [B, H, Lq, LkTotal]. */
  averageWeights: boolean;
  /** A createKvCache() handle, or null. */
  cache: C | null;
  /** trace: 'values': also return q, k, v, scores, masked, weights, context (TraceOut). */
  trace: boolean;
}

/** Forward pass of a SelfAttentionLayer (x is query, key and value). */
export interface LayerForwardArgs {
  where: string;
  batch: number;
  seqLen: number;
  embedDim: number;
  numHeads: number;
  /** [B, L, E] */
  x: Float32Array;
  mask: MaskArgs;
  training: boolean;
  /** uint32 seed of the dropout hash (0 in eval mode). */
  dropoutSeed: number;
  needWeights: boolean;
  averageWeights: boolean;
  /** trace: 'values': also return every TraceOut field. */
  trace: boolean;
}

/**
 * The intermediates of a forward with `trace: true` in its bag, computed by
 * the backend in use (Lk: every key attended over, cached ones included).
 */
export interface TraceOut {
  /** [B, Lq, E] Q projection (MHA, layer). */
  q?: Float32Array;
  /** [B, Lk, E] */
  k?: Float32Array;
  /** [B, Lk, E] */
  v?: Float32Array;
  /** [B, H, Lq, Lk] Q·Kᵀ·scale */
  scores: Float32Array;
  /** [B, H, Lq, Lk] after softcap (SDPA with a softcap) */
  capped?: Float32Array;
  /** [B, H, Lq, Lk] after the mask (masked positions: the fill) */
  masked: Float32Array;
  /** [B, H, Lq, Lk] softmax, never averaged */
  weights: Float32Array;
  /** [B, Lq, E] weights·V with heads merged (MHA, layer) */
  context?: Float32Array;
  /** [B, L, E] the layer's output projection, before dropout */
  attention?: Float32Array;
  /** [B, L, E] the layer's dropout output */
  dropout?: Float32Array;
  /** [B, L, E] x + dropout */
  residual?: Float32Array;
}

/** What sdpa, mhaForward and layerForward return. */
export interface ForwardOut {
  output: Float32Array;
  /** null when needWeights is false. */
  weights: Float32Array | null;
  /** When the bag asked for the trace. */
  trace?: TraceOut;
}

/**
 * Every backend. M: the backend's handle of an MHA or a layer; C: its handle
 * of a KV cache (both opaque to the wrapper).
 */
export interface Backend<M = any, C = any> {
  /** 'wasm' | 'wasm-scalar' | 'webgpu' (webgpu reports the fallback's name after a device loss). */
  readonly name: string;
  /** true: computing methods return Promises. */
  readonly async: boolean;
  readonly kernelArch: string;

  addEventListener?(type: string, listener: any, options?: any): void;
  removeEventListener?(type: string, listener: any, options?: any): void;

  sdpa(p: SdpaArgs): MaybePromise<ForwardOut>;
  /**
   * An op of the op table (ops.js), by name: `args` is its bag (OpTypes[name].args),
   * `outputs` the float count of each output field; resolves to those fields' values.
   */
  op<K extends OpName>(name: K, args: OpTypes[K]['args'], outputs: Record<OpTypes[K]['out'], number>): MaybePromise<Record<OpTypes[K]['out'], Float32Array>>;
  /** y [rows, dim] = LayerNorm(x + residual)·gamma + beta (residual, gamma, beta may be null). */
  addLayerNorm(rows: number, dim: number, x: Float32Array, residual: Float32Array | null,
    gamma: Float32Array | null, beta: Float32Array | null, eps: number): MaybePromise<Float32Array>;
  /** The dropout hash: the uniform in [0, 1) of element i under seed. */
  dropoutUniform(seed: number, i: number): number;

  // ---- modules: opaque handles holding weights ----------------------------
  createMha(cfg: MhaConfigArgs): M;
  createLayer(cfg: LayerConfigArgs): M;
  destroy(obj: M): void;
  heldBytes(obj: M): number;
  setWeight(obj: M, key: WeightKey, data: Float32Array, layout: WeightLayout): void;
  getWeight(obj: M, key: WeightKey, layout: WeightLayout, count: number): Float32Array;
  setNorm(obj: M, gamma: Float32Array | null, beta: Float32Array | null): void;
  getNorm(obj: M, dim: number): { gamma: Float32Array; beta: Float32Array };
  mhaForward(obj: M, p: MhaForwardArgs<C>): MaybePromise<ForwardOut>;
  layerForward(obj: M, p: LayerForwardArgs): MaybePromise<ForwardOut>;

  // ---- key/value cache of an MHA ------------------------------------------
  createKvCache(obj: M, batch: number, maxLength: number): C;
  kvCacheReset(c: C): void;
  kvCacheTruncate(c: C, length: number): void;
  kvCacheHeldBytes(c: C): number;
  kvCacheDestroy(c: C): void;

  /** Bytes of backend memory (wasm: the linear memory; webgpu: pooled + persistent buffers). */
  memoryBytes?(): number;

  // ---- threads (the threaded wasm build only; web/lib/loader.js) ------------
  /** Threads the kernels use (absent: 1). */
  readonly threads?: number;
  /** One lab lets go; the last one stops the workers. */
  release?(): void;
  /** Live Emscripten workers (tests). */
  workerCount?(): number;
}

/** The wasm backends' extras (tests and the bench). */
export interface WasmBackend<M = any, C = any> extends Backend<M, C> {
  async: false;
  memoryBytes(): number;
  /** Bytes currently allocated by malloc (leak tests). */
  heapBytesInUse(): number;
  /** The Emscripten module, for the training API (web/lib/train/). */
  wasmModule?: any;
}

export interface AdapterInfo {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter: boolean;
}

/** The webgpu backend's extras (diagnostics, tests, device loss). */
export interface WebGpuBackend<M = any, C = any> extends Backend<M, C> {
  readonly adapterInfo: AdapterInfo;
  readonly limits: Record<string, number>;
  /** True once calls go to the wasm fallback (device lost or failed). */
  readonly deviceLost: boolean;
  /** { reason, message } of the loss or failure, else null. */
  readonly lostInfo: { reason: string; message: string } | null;
  poolStats(): Record<string, number>;
  resetPoolStats(): void;
  trimPool(): void;
  counters(): Record<string, number>;
  memoryBytes(): number;
  warmUp(): Promise<void>;
  simulateDeviceLoss(): Promise<void>;
  /** Resolves once the wasm backend (the fallback) is loaded (createWebGpuBackend awaits it). */
  readonly wasmReady: Promise<Backend | null>;
  /** Inverted dropout of x (a copy) on the GPU. */
  dropout(x: Float32Array, p: number, seed: number): Promise<Float32Array>;

  // ---- whole models (web/lib/webgpu-model.js; lab.loadModel on a webgpu lab) ----
  /** An empty GPU model of the block graph (spec: the normalised config of web/lib/model/architectures.js). */
  modelCreate(spec: Record<string, any>): Promise<GpuModelHandle>;
  /**
   * One tensor, by the block graph's name; matrices in keras layout [in, out]. Float32 values, or
   * (half 'F16' / 'BF16') a 16-bit file's values as they were, padded to an even count, for the
   * tensors webgpu-graph-fields.js keptHalfOnGpu names.
   */
  modelUpload(m: GpuModelHandle, where: string, name: string, shape: number[], data: Float32Array | Uint16Array, half?: 'F16' | 'BF16'): void;
  modelBytes(m: GpuModelHandle): number;
  /** The forward on the GPU, or null once calls go to wasm (device lost): the caller runs its wasm copy. */
  modelForward(m: GpuModelHandle, ids: Int32Array, want: { attentions: boolean; hiddenStates: boolean }): Promise<GpuModelOutput | null>;
  modelDispose(m: GpuModelHandle): void;
}

/** A whole model's GPU buffers (opaque to callers). */
export type GpuModelHandle = { readonly disposed: boolean };
export interface GpuModelOutput {
  /** [L·V], null without a head */
  logits: Float32Array | null;
  /** [H·L·L] per layer, or null */
  attentions: Float32Array[] | null;
  /** [L·E], or null */
  hidden: Float32Array | null;
}

// Type declarations for attention-lab/components (web/components/index.js).
//
// Custom elements for documentation sites. Attributes configure them; rich
// data goes in as properties. Each element renders into an open shadow root
// styled with constructable stylesheets and themable through CSS variables:
//   --al-fg, --al-bg, --al-card, --al-muted, --al-border, --al-accent,
//   --al-on-accent, --al-error, --al-font, --al-mono, --al-slab-stroke
// Elements start lazily when they scroll near the viewport (IntersectionObserver);
// the boolean attribute `eager` starts them at once. All elements of a page
// share one library instance per backend.
//
// Common attributes: lang ('en' | 'zh'; default: the nearest [lang] ancestor),
// backend ('cpu' (default: wasm SIMD, else scalar) | 'auto' | 'wasm' | 'wasm-scalar' | 'webgpu'), eager.
//
// Events (bubbling, composed): 'al-render' after each render; 'al-cell' from a
// heatmap when the hovered/locked cell changes (detail {i, j, locked, value} or
// null); 'al-step' / 'al-select' from a shape flow.

import type { AttentionLab, Model, ModelConfig, TokenProbability, GeneratedToken, GenerateOptions, HeadScores } from '../index.js';

/** A dense float32 tensor. */
export interface Tensor {
  data: Float32Array;
  shape: number[];
}

/** Attention weights [H, Lq, Lk] or [Lq, Lk], as a tensor or nested arrays. */
export type AttentionInput =
  | { data: Float32Array | ArrayLike<number>; shape: readonly number[] }
  | number[][]
  | number[][][];

declare const HTMLElementBase: typeof HTMLElement;

/** Shared base of the four elements. */
export declare class AttentionLabElement extends HTMLElementBase {
  /** True once the element has started (came into view, or `eager`). */
  readonly started: boolean;
  /** Resolves after the pending render. */
  readonly updateComplete: Promise<void>;
  /** Schedules a render (batched). */
  requestRender(): Promise<void> | undefined;
}

/**
 * `<attention-lab-heatmap>`: attention maps for given tokens and settings
 * (computed by the library), or for attention arrays set as a property.
 *
 * Attributes: `tokens` (text; words split on spaces, CJK one character per
 * token), `heads` (H, default 2), `embed-dim` (E, default 32), `seed`,
 * `mask` ('none' | 'causal'), `head` ('all' (default; every head plus the
 * average) | 'average' | a head index), `size` (largest map side in px),
 * `scale` (the factor of Q·Kᵀ, default 1/√D: larger sharpens the maps).
 * `model` ('en' | 'zh') draws the package's shipped model instead (its real
 * heads, `lab.pretrained(model)`): `text`, `layer` (default 0) and `head`
 * apply; the settings above do not.
 *
 * Attention variants (docs/attention-variants.md), passed to the library:
 * `softcap` (c > 0: scores = c·tanh(scores/c)), `window` ("left,right", e.g.
 * "3,0"; −1 leaves a side unbounded), `alibi` (no value: the paper's slopes;
 * or a comma list, one slope per head), `num-kv-heads` (GQA; 1 = MQA; must
 * divide `heads`), `rope` (no value: base 10000; or the base), `mask-fill`
 * (the value of masked scores, default −1e9; "-inf" follows ONNX),
 * `causal-align` ('top-left' | 'bottom-right'; needs mask="causal"; the two
 * agree here, where Lq = Lk). With `rope` or `alibi` no sinusoidal encoding
 * is added to the embeddings. A malformed or refused value shows the
 * element's error state (data-state="error") with a message naming it.
 */
export declare class AttentionLabHeatmap extends AttentionLabElement {
  /** Weights to draw instead of computing them (no wasm is loaded then). Setting a bad shape throws. */
  get attention(): Tensor | null;
  set attention(value: AttentionInput | null);
  /** Labels of both axes. */
  get tokens(): string[] | null;
  set tokens(value: Iterable<string> | null);
  get queryTokens(): string[] | null;
  set queryTokens(value: Iterable<string> | null);
  get keyTokens(): string[] | null;
  set keyTokens(value: Iterable<string> | null);
  /** The heatmap widgets shown (e.g. `maps[0].export('png')`). */
  readonly maps: Heatmap[];
  /**
   * With the `model` attribute ('en' | 'zh': the package's shipped models, `lab.pretrained`,
   * loaded lazily and once per page; attributes `text` (default a sample), `layer` (default 0),
   * `head`): what was drawn, `model.forwardSync(text, { attentions: true })`'s ids and one layer's
   * maps [H, L, L]; `unknown` lists the characters outside the vocabulary (drawn as the model's
   * [UNK] token). null before the first render, or without `model`.
   */
  readonly modelRun: PretrainedHeatmapRun | null;
}

/** `AttentionLabHeatmap.modelRun`. */
export interface PretrainedHeatmapRun {
  model: 'en' | 'zh';
  text: string;
  layer: number;
  ids: number[];
  /** The model's token strings. */
  tokens: string[];
  /** The axis labels (readable text: ␣ for a space, ↵ for a newline). */
  labels: string[];
  unknown: string[];
  attention: Tensor;
}

/**
 * `<attention-lab-shape-flow>`: the dimension animation, shapes from
 * `lab.shapeTrace`. Attributes: `batch` (2), `seq-len` (5), `kv-len`,
 * `embed-dim` (512), `num-heads` (8), `mask`, `layer` (append dropout,
 * residual, LayerNorm), `autoplay`, `values` ('false' to skip computing the
 * values shown when a block is clicked).
 */
export declare class AttentionLabShapeFlow extends AttentionLabElement {
  readonly flow: ShapeFlow | undefined;
  readonly trace: TraceRecord[] | null;
}

/**
 * `<attention-lab-positional-encoding>`: PE heatmap, sin/cos curves and
 * PE·PEᵀ. Attributes: `positions` (64), `d-model` (128), `base` (10000),
 * `dims` ('0,1,4,5'), `similarity` ('false' hides PE·PEᵀ).
 */
export declare class AttentionLabPositionalEncoding extends AttentionLabElement {
  readonly encoding: Tensor | null;
}

/**
 * `<attention-lab-explorer>`: the whole explorer (sentence, H, E, seed and
 * mask controls, per-head maps and their average, the dimension flow).
 * Attributes: `text`, `heads` (4), `embed-dim` (64), `seed`, `mask` ('none' | 'causal'),
 * and the attention-variant attributes of `<attention-lab-heatmap>` (`softcap`,
 * `window`, `alibi`, `num-kv-heads`, `rope`, `mask-fill`, `causal-align`).
 */
export declare class AttentionLabExplorer extends AttentionLabElement {
  readonly result: { output: Tensor; weights: Tensor; trace: TraceRecord[]; tokens: string[] } | null;
}

/**
 * Attention of a whole model: a list of per-layer tensors [B, H, Lq, Lk] or
 * [H, Lq, Lk] (transformers' `output_attentions=True`), or one tensor
 * [layers, H, Lq, Lk] (also [layers, B, H, Lq, Lk], [H, Lq, Lk], [Lq, Lk]);
 * nested arrays work too.
 */
export type ModelAttentionInput =
  | Array<{ data: Float32Array | ArrayLike<number>; shape: readonly number[] }>
  | { data: Float32Array | ArrayLike<number>; shape: readonly number[] }
  | number[][][][] | number[][][];

/**
 * `<attention-lab-model-view>`: BertViz's two views of a model's attention.
 * The model view is a layers × heads grid of thumbnails (arrow keys move,
 * Enter/click enlarges to a full heatmap with its table and exports, Escape
 * returns); the head view draws lines from each query token to the keys,
 * one colour per head, opacity = weight. A table fallback and PNG/SVG/JSON
 * exports come with both. Nothing is computed by wasm.
 *
 * Attributes: `src` (URL of a .npy, .npz, .safetensors or .json file; tokens
 * from safetensors metadata "tokens" or the JSON's "tokens"), `tokens`
 * (space-separated), `view` (ModelViewName: 'model' (default) | 'head'; with an
 * encoder-decoder model 'encoder' | 'decoder' | 'cross' (default)), `layer` (head
 * and cross views, default 0), `head` (cross view: 'mean' (default) or a head
 * index), `heads` ('all' or a comma list), `batch` (0), `min-weight`
 * (head-view lines, default 0.01), `thumb-size` (px, 56).
 *
 * An encoder-decoder model (`config.isEncoderDecoder`: Marian, BART, T5) is run as
 * a translation: Translate (generate, greedy at temperature 0 by default), then
 * one forward with `decoderInputIds` = [decoder start, …translation] for the
 * encoder's and decoder's self-attention and the cross-attention (the
 * alignment map: target tokens down, source tokens across; hovering a target
 * token shades the source tokens it read).
 */
export declare class AttentionLabModelView extends AttentionLabElement {
  get attention(): ModelAttentionInput | null;
  /** Setting a bad shape throws (RangeError/TypeError). */
  set attention(value: ModelAttentionInput | null);
  get tokens(): string[] | null;
  set tokens(value: Iterable<string> | null);
  /** The arrays shown, normalised to [layers, H, Lq, Lk]. */
  readonly data: { layers: number; heads: number; lq: number; lk: number; data: Float32Array } | null;
  /** Reads a dropped File/Blob or bytes locally (never uploaded). */
  load(source: Blob | ArrayBuffer | Uint8Array): Promise<{ layers: number; heads: number; lq: number; lk: number; data: Float32Array } | null>;
  /** Model view: shows layer l, head h enlarged. */
  enlarge(layer: number, head: number): void;
  /** Saves and returns the model grid (png), the head view (svg) or the arrays and tokens (json; with a model also text, ids, modelTokens, modelType). */
  export(format: 'png' | 'svg' | 'json'): Promise<Blob | null>;
  /**
   * A whole model (lab.loadModel's Model, or a WorkerModel): the element runs
   * it on `text` and draws its attentions, the tokens, the next-token panel
   * (causal models), Generate, the [MASK] predictions (bert) and the head
   * roles. The `src` attribute may instead name a same-origin folder URL
   * ending in '/' (config.json, tokenizer.json, model.safetensors or
   * model.safetensors.index.json + shards), loaded in a Web Worker.
   */
  get model(): ModelViewModel | null;
  set model(value: ModelViewModel | null);
  /** The sentence the model runs on (the `text` attribute until the reader edits the field). */
  get text(): string;
  set text(value: string | null);
  /** The last whole-model run and what the panels show (null before one). */
  readonly modelRun: ModelViewRun | null;
  /** The enlarged map of the model view: the values drawn. */
  readonly enlarged: { layer: number; head: number; data: Float32Array } | null;
  /**
   * Starts Generate (as its button does); resolves when it ends or stops. An
   * encoder-decoder translates again with the panel's settings and redraws its views.
   */
  generate(): Promise<unknown> | undefined;
  /** The cross view's alignment map as drawn (an encoder-decoder model; null before one). */
  readonly crossMap: ModelViewCrossMap | null;
  /** The target token whose reading the cross view shows (hover or focus), or null. */
  readonly highlighted: { target: number; token: string; weights: number[] } | null;
  /** Stops a generation in flight. */
  stop(): void;
  /**
   * The "What the heads do" section of a whole model (head scores, logit lens, heads switched
   * off, attribution, patching; lib/heads-panel.js): computed when opened. `shown` holds what
   * each of its views last drew; data-heads on the element says 'pending' | 'ready' | 'error'.
   */
  readonly heads: { readonly shown: HeadsPanelShown; toggleHead(layer: number, head: number): Promise<void>; setPair(clean: string, corrupted: string): Promise<void> } | null;
  /** Opens the heads section; resolves when its views are drawn. */
  openHeads(): Promise<void>;
}

type HeadScoreLists = { L: number; ids: number[]; previousToken: number[]; duplicateToken: number[]; induction: number[]; firstToken: number[] };

/** What each view of the heads panel last drew (null before it, or when the model refused the call). */
export interface HeadsPanelShown {
  scores: HeadScoreLists | null;
  repeated: (HeadScoreLists & { length: number; seed: number; tokens: string[] }) | null;
  map: { which: 'text' | 'repeated'; layer: number; head: number; L: number; data: Float32Array } | null;
  /** model.logitLens(text, { k: 3 }) flattened, shape [numLayers + 1, L, 3]. */
  lens: { shape: [number, number, number]; topIds: number[]; topProbs: number[]; topTokens: string[] } | null;
  /** model.nextTokens(text, { k: 10 }) intact (base) and with the heads switched off (ablated, null when none). */
  next: { ablate: ModelAblation[]; base: TokenProbability[]; ablated: TokenProbability[] | null } | null;
  attribution: { target: number; baseline: number; targetToken: string; baselineToken: string; position: number; heads: number[]; embed: number; attnBias: number[]; mlps: number[]; constant: number; logitDiff: number } | null;
  patch: { clean: string; corrupted: string; target: number; baseline: number; targetToken: string; baselineToken: string; data: number[]; ldClean: number; ldCorrupted: number } | null;
}

/** One head switched off, as forward/nextTokens/generate's `ablate` option takes it. */
export interface ModelAblation {
  layer: number;
  head: number;
  mode: 'zero' | 'mean';
}

/** <attention-lab-model-view>'s `view`: 'model' | 'head'; for an encoder-decoder model 'encoder' | 'decoder' | 'cross'. */
export type ModelViewName = 'model' | 'head' | 'encoder' | 'decoder' | 'cross';

/** The alignment map of the cross view: target tokens (rows) × source tokens (columns). */
export interface ModelViewCrossMap {
  layer: number;
  /** A head index, or 'mean' (the mean over heads). */
  head: number | 'mean';
  rows: number;
  cols: number;
  /** [rows·cols], row-major. */
  data: Float32Array;
  /** The target tokens: the decoder's input (its start token, then the translation), shown readably. */
  rowLabels: string[];
  /** The source tokens, shown readably. */
  colLabels: string[];
}

/** What <attention-lab-model-view>'s `model` property takes: a Model, or a WorkerModel. */
export type ModelViewModel = Model | WorkerModel;

export interface HeadRoleRow {
  layer: number;
  head: number;
  previousToken: number;
  self: number;
  firstToken: number;
  induction: number;
  /** The role scored most above its chance level. */
  role: 'previousToken' | 'self' | 'firstToken' | 'induction';
}

export interface ModelViewRun {
  ids: number[];
  /** The token strings as the tokenizer spells them. */
  tokens: string[];
  /** The same, shown readably (byte-level pieces decoded, a leading space as ␣). */
  shown: string[];
  /** Milliseconds of the forward (in the worker for a WorkerModel). */
  forwardMs: number;
  /** An encoder-decoder's: the decoder's input ids (start token, then the translation). */
  decoderInputIds?: number[];
  /** An encoder-decoder's: the decoder's input tokens as the tokenizer spells them. */
  decoderTokens?: string[];
  /** An encoder-decoder's: the same, shown readably. */
  targetShown?: string[];
  /** An encoder-decoder's: the translation the views were drawn from. */
  generated?: { ids: number[]; tokens: string[]; text: string; seed: number; temperature: number; maxNewTokens: number; state: 'running' | 'done' | 'stopped' };
  panels: {
    tokens: Array<{ id: number; token: string; shown: string }> | null;
    next: { temperature: number; list: TokenProbability[] } | null;
    generated: { ids: number[]; tokens: string[]; text: string; seed: number; temperature: number; maxNewTokens: number; state: 'running' | 'done' | 'stopped'; ms?: number } | null;
    mask: Array<{ position: number; predictions: TokenProbability[] }> | null;
    roles: { rows: HeadRoleRow[]; chance: Record<'previousToken' | 'self' | 'firstToken' | 'induction', number> } | null;
  } | null;
}

/** A model folder listed from config.json and the safetensors headers only (listModel). */
export interface ModelListing {
  files: { config: File; weights: File | File[]; tokenizer?: File };
  modelType: string;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  embedDim: number;
  vocabSize: number;
  maxPositions: number;
  /** Elements of the tensors in the file(s). */
  parameters: number;
  tensors: number;
  /** Bytes on file. */
  bytes: number;
  shards: string[];
  dtypes: string[];
  float32Bytes: number;
  /** The wasm heap's limit given to listModel (lab.heapLimit), or null. */
  heapLimit: number | null;
  /** Whether the kept bytes plus the headroom fit within heapLimit; null when no limit was given. */
  fits: boolean | null;
  tokenizerBytes: number | null;
  /** Bytes read to list it (the headers). */
  headerBytes: number;
  ms: number;
}

/** True when the files hold config.json and model.safetensors or model.safetensors.index.json. */
export declare function isModelFolder(files: Iterable<File> | FileList): boolean;
/** Lists a model folder's Files from config.json and the safetensors headers (no weight is read). */
export declare function listModel(files: Iterable<File> | FileList, options?: { heapLimit?: number | null }): Promise<ModelListing>;

/** A Model loaded and run in a Web Worker: the calls the model view uses, as Promises. */
export declare class WorkerModel {
  static load(files: ModelListing['files'], options?: { onProgress?: (p: { loaded: number; total: number }) => void; signal?: AbortSignal; backend?: 'wasm' | 'wasm-scalar' }): Promise<WorkerModel>;
  /** lab.pretrained(name) in a new worker: the package's shipped models. */
  static pretrained(name: 'en' | 'zh' | 'induction', options?: { backend?: 'wasm' | 'wasm-scalar' }): Promise<WorkerModel>;
  readonly config: Readonly<ModelConfig>;
  readonly disposed: boolean;
  /** Milliseconds the worker spent on the last answered call. */
  readonly lastMs: number | null;
  /** Whether the tokenizer's pieces are byte-level (GPT-2's Ġ). */
  readonly byteLevel: boolean;
  readonly loadMs: number;
  forward(input: string | ArrayLike<number>): Promise<{ ids: number[]; tokens: string[] | null; attentions: Array<{ data: Float32Array; shape: number[] }> }>;
  /**
   * An encoder-decoder's forward with decoderInputIds (default: its start token): the three
   * attentions, and per layer the cross-attention's mean over heads ([1, 1, Ld, Le]).
   */
  forward(input: string | ArrayLike<number>, options: { attentions?: boolean; decoderInputIds?: ArrayLike<number> }): Promise<{
    ids: number[]; tokens: string[] | null; decoderInputIds: number[]; decoderTokens: string[] | null;
    encoderAttentions: Array<{ data: Float32Array; shape: number[] }>;
    decoderAttentions: Array<{ data: Float32Array; shape: number[] }>;
    crossAttentions: Array<{ data: Float32Array; shape: number[] }>;
    crossMean: Array<{ data: Float32Array; shape: number[] }>;
  }>;
  nextTokens(input: string | ArrayLike<number>, options?: { k?: number; temperature?: number; ablate?: ModelAblation[] }): Promise<TokenProbability[]>;
  /** model.headScores in the worker, with .repeated (docs/interpretability.md). */
  readonly headScores: {
    (input: string | ArrayLike<number>): Promise<HeadScores>;
    repeated(options: { length: number; seed?: number }): Promise<HeadScores & { ids: number[] }>;
  };
  /** model.logitLens in the worker: top-k ids, probabilities and tokens of every stage, [numLayers + 1, L, k]. */
  logitLens(input: string | ArrayLike<number>, options?: { k?: number; logits?: boolean }): Promise<{ ids: number[]; tokens: string[] | null; topIds: { data: Int32Array; shape: number[] }; topProbs: { data: Float32Array; shape: number[] }; topTokens: string[] | null; logits: { data: Float32Array; shape: number[] } | null }>;
  /** model.attribute in the worker: the parts of logit[target] − logit[baseline] at `position`. */
  attribute(input: string | ArrayLike<number>, options: { target: number | string; baseline?: number | string; position?: number }): Promise<{ target: number; baseline: number | null; position: number; embed: number; heads: { data: Float32Array; shape: number[] }; attnBias: { data: Float32Array; shape: number[] }; mlps: { data: Float32Array; shape: number[] }; constant: number; logitDiff: number }>;
  /** model.patch in the worker: (LD_patched − LD_corrupted) / (LD_clean − LD_corrupted) per head or per block and position. */
  patch(options: { clean: string | ArrayLike<number>; corrupted: string | ArrayLike<number>; target: number | string; baseline: number | string; over?: 'heads' | 'residual' }): Promise<{ data: Float32Array; shape: number[]; over: 'heads' | 'residual'; target: number; baseline: number; ldClean: number; ldCorrupted: number; ldPatched: { data: Float32Array; shape: number[] } }>;
  fillMask(input: string | ArrayLike<number>, options?: { k?: number }): Promise<Array<{ position: number; predictions: TokenProbability[] }>>;
  headRoles(input: string | ArrayLike<number>, options?: Record<string, unknown>): Promise<{ heads: Array<Omit<HeadRoleRow, 'role'>>; chance: Record<string, number> }>;
  encode(text: string): Promise<number[]>;
  tokens(ids: ArrayLike<number>): Promise<string[]>;
  generate(prompt: string | ArrayLike<number>, options?: GenerateOptions): AsyncIterableIterator<GeneratedToken>;
  dispose(): void;
}

/** One report of <attention-lab-trainer>: metrics and each layer's maps [H, L, L]. */
export interface TrainerReport {
  step: number;
  loss: number;
  accuracy: number;
  heldOut: number;
  tokens: number[];
  maps: Array<{ data: Float32Array; shape: [number, number, number] }>;
  stopped: string | null;
}

/**
 * <attention-lab-trainer task="reverse" size="64" lr="0.003">: trains a tiny
 * transformer in a Web Worker and shows every head's map as it forms.
 * Attributes: task (copy | reverse | sort | shift | induction), size (E),
 * lr, positional (sinusoidal | learned | rope | none; default learned for
 * induction, sinusoidal otherwise), lang, eager, autoplay.
 */
export declare class AttentionLabTrainer extends AttentionLabElement {
  readonly report: TrainerReport | null;
  readonly history: Array<{ step: number; loss: number; heldOut: number }>;
  readonly snapshots: Array<{ step: number; maps: TrainerReport['maps'] }>;
  /** The run before the last change of settings (drawn faintly on the same chart axes), or null. */
  readonly previous: { history: Array<{ step: number; loss: number; heldOut: number }>; options: Record<string, unknown> } | null;
  /** Held-out sequence accuracy after the last ablate(), or null. */
  readonly ablationAccuracy: number | null;
  play(): Promise<TrainerReport>;
  pause(): Promise<TrainerReport | null>;
  step(n?: number): Promise<TrainerReport>;
  reset(): Promise<void>;
  ablate(layer: number, head: number, off: boolean): Promise<TrainerReport>;
  weights(): Promise<Record<string, { data: Float32Array; shape: number[] }>>;
  loadWeights(weights: Record<string, { data: ArrayLike<number>; shape: number[] }>): Promise<TrainerReport>;
  saveSafetensors(): Promise<Uint8Array>;
  loadSafetensors(bytes: Uint8Array | ArrayBuffer): Promise<TrainerReport>;
}

export interface TraceRecord {
  step: string;
  shape: number[];
  formula: string;
  [extra: string]: unknown;
}

/** One next character of `AttentionLabNextToken.nextRun` (model.nextTokens). */
export interface NextTokenItem {
  id: number;
  token: string | null;
  prob: number;
}

/** `AttentionLabNextToken.generation`. */
export interface NextTokenGeneration {
  model: 'en' | 'zh';
  prompt: string;
  temperature: number;
  seed: number;
  maxNewTokens: number;
  /** The ids written after the prompt. */
  ids: number[];
  /** What they add to the text. */
  text: string;
  state: 'running' | 'done' | 'stopped' | 'error';
  /** The newest character's attention: one row per head of `layer`, [H, L]. */
  attention: { layer: number; position: number; data: Float32Array; shape: [number, number] } | null;
}

/**
 * `<attention-lab-next-token>`: the package's shipped model (`lab.pretrained`, loaded lazily once
 * per page) after a prompt. Attributes: `model` ('en' (default) | 'zh'), `text` (the prompt),
 * `k` (10), `temperature` (1; also a slider), `seed` (0; also a field), `max-new` (default: zh the
 * rest of a 五言绝句, 24 characters in all; en 120), `layer` (whose attention is drawn; default
 * the last), `lang`. The list is `model.nextTokens(prompt, { k, temperature })`; Generate streams
 * `model.generate(prompt, { maxNewTokens, temperature, seed })`, one character a frame (en ends
 * after its first . ! or ?), drawing the newest character's attention; Stop or Escape ends it.
 * Events: `al-generated` (detail: the generation).
 */
export declare class AttentionLabNextToken extends AttentionLabElement {
  /** The list shown (null before the first render). */
  readonly nextRun: { model: 'en' | 'zh'; text: string; temperature: number; k: number; list: NextTokenItem[] } | null;
  /** The last Generate (null before the first). */
  readonly generation: NextTokenGeneration | null;
  /** Generates after the prompt in the field; resolves when it ends (a running one is returned). */
  generate(): Promise<NextTokenGeneration | null>;
  /** Ends a running Generate. */
  stop(): void;
}

/** One report of `AttentionLabLmTrainer` (the worker's LmSession step). */
export interface LmTrainerReport {
  step: number;
  loss: number;
  heldOut?: number;
  stepMs?: number;
  maps?: Array<{ data: Float32Array; shape: number[] }>;
  /** The best head's induction score on repeated random characters: [step, score, layer, head]. */
  induction?: Array<[number, number, number, number]>;
  [extra: string]: unknown;
}

/** One probe of `AttentionLabLmTrainer`: samples, head roles and maps at a step. */
export interface LmTrainerSnapshot {
  step: number;
  heldOut: number;
  samples: unknown[];
  roles: unknown;
  maps: Array<{ data: Float32Array; shape: number[] }>;
  /** model.headScores.repeated's scores of every head ([layers, heads] each) on `length` random characters × 2. */
  induction?: { length: number; seed: number; induction: { data: Float32Array; shape: number[] }; previousToken: { data: Float32Array; shape: number[] } };
  [extra: string]: unknown;
}

/**
 * <attention-lab-lm-trainer model="zh" corpus="/data/corpora/zh/">: trains a character-level
 * GPT-2 from scratch in a Web Worker on the corpus of a shipped model and shows the losses,
 * samples, head roles, the best head's induction score on repeated random characters and every
 * head's map as they form. Attributes: model (zh | en | induction: the English prose with
 * repeated random spans), corpus (a folder URL holding train.txt and heldout.txt; default
 * data/corpora/<corpus>/ beside the package, which the npm package does not ship), lang, eager,
 * autoplay.
 */
export declare class AttentionLabLmTrainer extends AttentionLabElement {
  /** The session: recipe, sizes, example (null until play(), step(), probe() or loadShipped()). */
  readonly info: Record<string, unknown> | null;
  readonly report: LmTrainerReport | null;
  readonly history: Array<{ step: number; loss: number }>;
  readonly heldout: Array<[number, number]>;
  /** The induction curve: [step, best score, layer, head] at every held-out evaluation. */
  readonly induction: Array<[number, number, number, number]>;
  readonly snapshots: LmTrainerSnapshot[];
  /** The shipped model's figures (the end point), once loadShipped() has run. */
  readonly shipped: (Record<string, unknown> & { heldOut: number }) | null;
  readonly reportMs: number[];
  /** Starts training (setting the session up first, once); resolves with the next report. */
  play(): Promise<LmTrainerReport>;
  /** Pauses; resolves at once with the latest report. */
  pause(): Promise<LmTrainerReport | null>;
  step(n?: number): Promise<LmTrainerReport>;
  probe(): Promise<LmTrainerSnapshot>;
  loadShipped(): Promise<Record<string, unknown>>;
  /** A fresh model from scratch. */
  reset(): Promise<void>;
  /** Shows a recorded snapshot (null: back to live). */
  showSnapshot(index: number | null): void;
}

/** Tag name → class. */
export declare const ELEMENTS: Readonly<{
  'attention-lab-explorer': typeof AttentionLabExplorer;
  'attention-lab-heatmap': typeof AttentionLabHeatmap;
  'attention-lab-shape-flow': typeof AttentionLabShapeFlow;
  'attention-lab-positional-encoding': typeof AttentionLabPositionalEncoding;
  'attention-lab-model-view': typeof AttentionLabModelView;
  'attention-lab-trainer': typeof AttentionLabTrainer;
  'attention-lab-next-token': typeof AttentionLabNextToken;
  'attention-lab-lm-trainer': typeof AttentionLabLmTrainer;
}>;

/**
 * Defines the elements not defined yet. Returns false (and does nothing)
 * where there is no custom-element registry (Node, SSR).
 */
export declare function defineAll(registry?: CustomElementRegistry): boolean;

/** The shared library instance for a backend (default 'cpu'). */
export declare function getLab(backend?: 'cpu' | 'auto' | 'wasm' | 'wasm-scalar' | 'webgpu'): Promise<AttentionLab>;

export type Translator = ((key: string, params?: Record<string, unknown>) => string) & { lang: 'en' | 'zh' };
export declare function translator(lang: string, ...catalogues: Array<Record<string, Record<string, string>>>): Translator;

/** Splits text into tokens: words on whitespace, CJK characters one each. */
export declare function tokenize(text: string, options?: { maxTokens?: number }): string[];
/** The seeded N(0, 1) embedding [E] of a token. */
export declare function embedToken(token: string, seed: number, E: number): Float32Array;

export interface Palette {
  readonly name: string;
  readonly diverging: boolean;
  rgbAt(v: number, lo: number, hi: number): [number, number, number];
  cssAt(v: number, lo: number, hi: number): string;
  hexAt(v: number, lo: number, hi: number): string;
}
/** Viridis (sequential, colour-blind safe), for weights. */
export declare const viridis: Palette;
/** ColorBrewer RdBu (diverging, colour-blind safe), for signed values. */
export declare const diverging: Palette;

export interface HeatmapOptions {
  palette?: 'viridis' | 'diverging';
  title?: string;
  name?: string;
  t?: Translator;
  rowKind?: 'query' | 'position' | 'row' | 'token';
  colKind?: 'key' | 'dimension' | 'column' | 'position';
  maxSize?: number;
  maxHeight?: number;
  cellMax?: number;
  compact?: boolean;
  tools?: boolean;
  legend?: boolean;
  domain?: 'auto' | 'unit' | [number, number];
  onCell?: (cell: { i: number; j: number; locked: boolean } | null, map: Heatmap) => void;
}

/** The canvas heatmap widget behind every map (usable on its own). */
export declare class Heatmap {
  constructor(options?: HeatmapOptions);
  readonly el: HTMLElement;
  setData(d: {
    data: Float32Array;
    rows: number;
    cols: number;
    offset?: number;
    rowLabels?: string[];
    colLabels?: string[];
    domain?: [number, number] | 'auto' | 'unit';
    title?: string;
    tensor?: Tensor;
    dimNames?: string[];
  }): this;
  valueAt(i: number, j: number): number | undefined;
  highlight(cell: { i: number; j: number } | null): void;
  lock(cell: { i: number; j: number } | null): void;
  export(format: 'png' | 'svg' | 'csv' | 'json'): Promise<void>;
  toPNGBlob(): Promise<Blob>;
  toSVG(): string;
  setMessages(t: Translator): void;
  destroy(): void;
}

/** Links heatmaps so hovering one highlights the same cell in the others; returns an unlink function. */
export declare function linkHeatmaps(maps: Heatmap[]): () => void;

/** The dimension-flow animation widget. */
export declare class ShapeFlow {
  constructor(options?: {
    t?: Translator;
    values?: (step: string, which: 'q' | 'k' | 'v') => Promise<Tensor | null> | Tensor | null;
    rowLabels?: (b: number) => string[] | undefined;
    stepMs?: number;
    morphMs?: number;
    showValues?: boolean;
  });
  readonly el: HTMLElement;
  readonly index: number;
  readonly playing: boolean;
  setTrace(trace: TraceRecord[], options?: { unbatched?: boolean }): void;
  goTo(index: number, options?: { animate?: boolean }): Promise<void>;
  next(): Promise<void>;
  prev(): Promise<void>;
  play(): void;
  pause(): void;
  select(index: number, b?: number, h?: number, which?: 'q' | 'k' | 'v'): Promise<void>;
  setMessages(t: Translator): void;
  destroy(): void;
}

declare global {
  interface HTMLElementTagNameMap {
    'attention-lab-explorer': AttentionLabExplorer;
    'attention-lab-heatmap': AttentionLabHeatmap;
    'attention-lab-shape-flow': AttentionLabShapeFlow;
    'attention-lab-positional-encoding': AttentionLabPositionalEncoding;
    'attention-lab-next-token': AttentionLabNextToken;
  }
}

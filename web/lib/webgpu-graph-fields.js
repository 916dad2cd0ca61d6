// The rules that loadModel's GPU copy (model/gpu.js) and the webgpu model
// path (webgpu-model.js) share, one source each:
//   - the block-graph fields (TransformerConfig, src/train/train.h; the
//     families' c.core) that the GPU path does not run: one list and one
//     rule, asked by loadModel before any tensor is read (model/gpu.js
//     checkGpuRuns) and by the backend's modelCreate itself, each with its
//     own message;
//   - the tensors the GPU keeps in 16 bits when a file gives them so
//     (keptHalfOnGpu).
//
// Each entry: the field, a label for loadModel's message, and whether a
// config uses it (a value the GPU path computes anyway is not a use), e.g.
//   { field: 'headDim', label: 'headDim ≠ hidden/heads',
//     used: (k, s) => Boolean(k.headDim) && k.headDim !== s.embedDim / s.numHeads }
//
// The GPU path runs every field of the block graph of issue 32 (headDim,
// qkNorm, attnScale, attnSoftcap, finalSoftcap, slidingWindow, layerKinds,
// ropeLocalTheta, rotaryDim, parallelResidual, sandwichNorm, embedScale and
// the GeGLU activations) and ModernBERT's (normBias, firstNorm1, mlmBias,
// gateBias and the bidirectional window), checked against wasm and the
// float64 references by tests/browser/models-webgpu*.browser.mjs. Listed
// here: the encoder-decoders' fields (issue 34 item 2: marian, bart, t5),
// which it does not run yet. A field added to the block graph before its
// GPU path goes here.

/**
 * @type {Array<{ field: string, label: string, used: (k: Record<string, any>, spec: any) => boolean }>}
 */
export const GPU_UNSUPPORTED_FIELDS = [
  { field: 'crossAttention', label: "crossAttention (an encoder-decoder's decoder reading the encoder)", used: (k) => Boolean(k.crossAttention) },
  { field: 'sinusoidHalves', label: "sinusoidHalves (Marian's sin | cos positions)", used: (k) => Boolean(k.sinusoidHalves) },
  { field: 'relativeBuckets', label: "relativeBuckets (T5's relative position bias)", used: (k) => k.relativeBuckets > 0 },
  { field: 'headScale', label: 'headScale', used: (k) => k.headScale !== undefined && k.headScale !== 1 },
  { field: 'activation', label: 'activation relu / silu', used: (k) => k.activation === 'relu' || k.activation === 'silu' },
];

/**
 * The entries of GPU_UNSUPPORTED_FIELDS that a model uses, in the list's order.
 * @param {{ embedDim: number, numHeads: number, core?: Record<string, any> }} spec
 */
export function gpuUnsupportedFields(spec) {
  const s = { ...spec, core: spec.core ?? {} };
  return GPU_UNSUPPORTED_FIELDS.filter(({ used }) => used(s.core, s));
}

// The tensors read through include/half_weights.wgsl: every weight of
// linear.wgsl (the projections, the MLM transform, the head) and the word
// table of embedding.wgsl (also the tied head's weight). From an F16 or
// BF16 file they stay 16-bit on the GPU; other tensors (norms, biases, the
// position and token-type tables) are float32.
const HALF_ON_GPU = /^(embed\.weight|head\.weight|mlm\.dense\.weight|blocks\.\d+\.(attn\.w[qkvo]|ffn\.w[1g2]))$/;

/** True when the GPU keeps tensor `name` (a block-graph name) in 16 bits when its file holds 16-bit values. */
export function keptHalfOnGpu(name) {
  return HALF_ON_GPU.test(name);
}

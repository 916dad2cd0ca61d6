// The block-graph fields (TransformerConfig, src/train/train.h; the families'
// c.core) that the webgpu model path (webgpu-model.js) does not run: one list
// and one rule, asked by loadModel before any tensor is read
// (model/gpu.js checkGpuRuns) and by the backend's modelCreate itself
// (webgpu-model.js), each with its own message.
//
// Each entry: the field, a label for loadModel's message, and whether a
// config uses it (a value the GPU path computes anyway, such as an attnScale
// of exactly 1/√D or a rotary width of D, is not a use).

/** The head dim D the GPU path runs: E/H (headDim unless it equals E/H is refused). */
function headDimOf(spec) {
  return spec.core.headDim || spec.embedDim / spec.numHeads;
}

/**
 * @type {Array<{ field: string, label: string, used: (k: Record<string, any>, spec: any) => boolean }>}
 */
export const GPU_UNSUPPORTED_FIELDS = [
  { field: 'headDim', label: 'headDim ≠ hidden/heads', used: (k, s) => Boolean(k.headDim) && k.headDim !== s.embedDim / s.numHeads },
  { field: 'qkNorm', label: 'qkNorm (q/k norms)', used: (k) => Boolean(k.qkNorm) },
  { field: 'attnScale', label: 'attnScale (a score scale other than 1/√D)', used: (k, s) => Boolean(k.attnScale) && Math.fround(k.attnScale) !== Math.fround(1 / Math.sqrt(headDimOf(s))) },
  { field: 'attnSoftcap', label: 'attnSoftcap', used: (k) => k.attnSoftcap > 0 },
  { field: 'finalSoftcap', label: 'finalSoftcap', used: (k) => k.finalSoftcap > 0 },
  { field: 'slidingWindow', label: 'slidingWindow (local attention)', used: (k) => k.slidingWindow > 0 },
  { field: 'layerKinds', label: 'layerKinds (local layers)', used: (k) => typeof k.layerKinds === 'string' && k.layerKinds.includes('l') },
  { field: 'ropeLocalTheta', label: 'ropeLocalTheta', used: (k) => Boolean(k.ropeLocalTheta) && k.ropeLocalTheta !== k.ropeTheta },
  { field: 'rotaryDim', label: 'rotaryDim (partial rotary)', used: (k, s) => Boolean(k.rotaryDim) && k.rotaryDim !== headDimOf(s) },
  { field: 'parallelResidual', label: 'parallelResidual', used: (k) => Boolean(k.parallelResidual) },
  { field: 'sandwichNorm', label: 'sandwichNorm (post-attention and post-MLP norms)', used: (k) => Boolean(k.sandwichNorm) },
  { field: 'embedScale', label: 'embedScale', used: (k) => k.embedScale !== undefined && k.embedScale !== 1 },
  { field: 'activation', label: 'activation geglu / geglu_tanh', used: (k) => k.activation === 'geglu' || k.activation === 'geglu_tanh' },
  // ModernBERT's (issue 34): LayerNorms without bias, block 0 without norm1, the MLM dense without bias, the GLU gate's bias
  { field: 'normBias', label: 'normBias false (LayerNorms without bias)', used: (k) => k.normBias === false },
  { field: 'firstNorm1', label: 'firstNorm1 false (block 0 without norm1)', used: (k) => k.firstNorm1 === false },
  { field: 'mlmBias', label: 'mlmBias false (MLM dense without bias)', used: (k) => k.mlmBias === false },
  { field: 'gateBias', label: 'gateBias (the gate\'s bias)', used: (k) => Boolean(k.gateBias) },
];

/**
 * The entries of GPU_UNSUPPORTED_FIELDS that a model uses, in the list's order.
 * @param {{ embedDim: number, numHeads: number, core?: Record<string, any> }} spec
 */
export function gpuUnsupportedFields(spec) {
  const s = { ...spec, core: spec.core ?? {} };
  return GPU_UNSUPPORTED_FIELDS.filter(({ used }) => used(s.core, s));
}

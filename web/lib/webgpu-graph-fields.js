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
  { field: 'activation', label: 'activation geglu / geglu_tanh / relu / silu', used: (k) => ['geglu', 'geglu_tanh', 'relu', 'silu'].includes(k.activation) },
  { field: 'crossAttention', label: "crossAttention (an encoder-decoder's decoder reading the encoder)", used: (k) => Boolean(k.crossAttention) },
  { field: 'sinusoidHalves', label: "sinusoidHalves (Marian's sin | cos positions)", used: (k) => Boolean(k.sinusoidHalves) },
  { field: 'relativeBuckets', label: "relativeBuckets (T5's relative position bias)", used: (k) => k.relativeBuckets > 0 },
  { field: 'headScale', label: 'headScale', used: (k) => k.headScale !== undefined && k.headScale !== 1 },
];

/**
 * The entries of GPU_UNSUPPORTED_FIELDS that a model uses, in the list's order.
 * @param {{ embedDim: number, numHeads: number, core?: Record<string, any> }} spec
 */
export function gpuUnsupportedFields(spec) {
  const s = { ...spec, core: spec.core ?? {} };
  return GPU_UNSUPPORTED_FIELDS.filter(({ used }) => used(s.core, s));
}

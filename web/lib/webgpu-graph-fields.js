// The block-graph fields (TransformerConfig, src/train/train.h; the families'
// c.core) that the webgpu model path (webgpu-model.js) does not run: one list
// and one rule, asked by loadModel before any tensor is read
// (model/gpu.js checkGpuRuns) and by the backend's modelCreate itself
// (webgpu-model.js), each with its own message.
//
// Each entry: the field, a label for loadModel's message, and whether a
// config uses it (a value the GPU path computes anyway is not a use), e.g.
//   { field: 'headDim', label: 'headDim ≠ hidden/heads',
//     used: (k, s) => Boolean(k.headDim) && k.headDim !== s.embedDim / s.numHeads }
//
// Empty today: the GPU path runs every field of the block graph (issue 32:
// headDim, qkNorm, attnScale, attnSoftcap, finalSoftcap, slidingWindow,
// layerKinds, ropeLocalTheta, rotaryDim, parallelResidual, sandwichNorm,
// embedScale and the GeGLU activations, checked against wasm and the float64
// references by tests/browser/models-webgpu*.browser.mjs). A field added to
// the block graph before its GPU path goes here.

/**
 * @type {Array<{ field: string, label: string, used: (k: Record<string, any>, spec: any) => boolean }>}
 */
export const GPU_UNSUPPORTED_FIELDS = [];

/**
 * The entries of GPU_UNSUPPORTED_FIELDS that a model uses, in the list's order.
 * @param {{ embedDim: number, numHeads: number, core?: Record<string, any> }} spec
 */
export function gpuUnsupportedFields(spec) {
  const s = { ...spec, core: spec.core ?? {} };
  return GPU_UNSUPPORTED_FIELDS.filter(({ used }) => used(s.core, s));
}

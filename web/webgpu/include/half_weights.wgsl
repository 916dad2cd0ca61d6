// Weights kept in 16 bits on the GPU (a model loaded from an F16 or BF16
// file: web/lib/model/gpu.js, webgpu-model.js): element i of the binding
// w (array<u32>, two values a word, element 2k in the low half) widened to
// float32 exactly, by unpack2x16float (F16) or a 16-bit shift (BF16), where
// it is staged; float32 weights (HALF_WEIGHTS false) are read as their bits.
// The including kernel declares `override HALF_WEIGHTS: bool`, the binding
// w and the uniform field params.w_bf16 (1: BF16, 0: F16).
fn weight(i: u32) -> f32 {
  if (HALF_WEIGHTS) {
    let bits = (w[i >> 1u] >> ((i & 1u) << 4u)) & 0xffffu;
    if (params.w_bf16 != 0u) {
      return bitcast<f32>(bits << 16u);
    }
    return unpack2x16float(bits).x;
  }
  return bitcast<f32>(w[i]);
}

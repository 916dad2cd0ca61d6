// The tensor mask applied to one scaled score (keep: 0 → -1e9; block:
// s += m·(-1e9); additive: s += m), as src/kernels/attention_core.cpp MaskOne.
// The including kernel declares params.mask_kind and the constant MASK_FILL.
fn apply_tensor_mask(x: f32, m: f32) -> f32 {
  switch params.mask_kind {
    case 1u: { return select(x, MASK_FILL, m == 0.0); }
    case 2u: { return x + m * MASK_FILL; }
    case 3u: { return x + m; }
    default: { return x; }
  }
}

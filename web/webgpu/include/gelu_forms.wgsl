// The two GELUs of the block graph (src/kernels/activation.cpp), shared by
// gelu.wgsl (the MLP activation) and glu.wgsl (GeGLU's gate):
//   gelu_erf   0.5·x·(1 + erf(x/√2))                      (torch's default)
//   gelu_tanh  0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))  (gelu_new,
//              gelu_pytorch_tanh)
// WGSL has no erf: Abramowitz & Stegun 7.1.26 (|error| ≤ 1.5e-7, the form
// src/train/elementwise.cpp uses for the backward). tanh is written as
// 1 - 2/(e^{2u} + 1), which stays finite where a built-in may overflow.

const INV_SQRT2 = 0.70710678118654752;
const SQRT_2_OVER_PI = 0.79788456080286536;
const GELU_CUBIC = 0.044715;

fn erf_approx(v: f32) -> f32 {
  let z = abs(v);
  let t = 1.0 / (1.0 + 0.3275911 * z);
  let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  let e = 1.0 - poly * exp(-z * z);
  return select(-e, e, v >= 0.0);
}

fn tanh_stable(u: f32) -> f32 {
  let t = 1.0 - 2.0 / (exp(2.0 * abs(u)) + 1.0);
  return select(-t, t, u >= 0.0);
}

fn gelu_erf(v: f32) -> f32 {
  return 0.5 * v * (1.0 + erf_approx(v * INV_SQRT2));
}

fn gelu_tanh(v: f32) -> f32 {
  return 0.5 * v * (1.0 + tanh_stable(SQRT_2_OVER_PI * (v + GELU_CUBIC * v * v * v)));
}

// gelu — the MLP activation of GPT-2 and BERT, in place on x [n] (src/kernels/
// activation.cpp, the block graph's Activation::kGelu / kGeluTanh):
//   tanh_form 0  GELU     0.5·x·(1 + erf(x/√2))              (BERT, torch's default)
//   tanh_form 1  gelu_new 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))  (GPT-2)
// WGSL has no erf: Abramowitz & Stegun 7.1.26 (|error| ≤ 1.5e-7, the form
// src/train/elementwise.cpp uses for the backward). tanh is written as
// 1 - 2/(e^{2u} + 1), which stays finite where a built-in may overflow.
//
// Shape legend: L sequence, F MLP width; n = L·F (or L·E for BERT's MLM head).

struct Params {
  n: u32,
  tanh_form: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<uniform> params: Params;

// #include tiles

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

@compute @workgroup_size(WG_1D, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG_1D + li;
  if (i >= params.n) {
    return;
  }
  let v = x[i];
  if (params.tanh_form != 0u) {
    x[i] = 0.5 * v * (1.0 + tanh_stable(SQRT_2_OVER_PI * (v + GELU_CUBIC * v * v * v)));
  } else {
    x[i] = 0.5 * v * (1.0 + erf_approx(v * INV_SQRT2));
  }
}

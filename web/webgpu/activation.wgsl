// activation — the MLP activation of the non-gated MLPs, in place on x [n]
// (src/kernels/activation.cpp, src/train/elementwise.cpp; the block graph's
// Activation::kGelu / kGeluTanh / kRelu / kSilu):
//   act 0  GELU      0.5·x·(1 + erf(x/√2))              (BERT, torch's default)
//   act 1  gelu_new  0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))  (GPT-2)
//   act 2  ReLU      max(x, 0)                           (T5's original "relu")
//   act 3  SiLU      x/(1 + e^{-x})                      (Marian's "swish")
// The two GELU forms: include/gelu_forms.wgsl.
//
// Shape legend: L sequence, F MLP width; n = L·F (or L·E for BERT's MLM head).

struct Params {
  n: u32,
  act: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<uniform> params: Params;

// #include tiles

// #include gelu_forms

@compute @workgroup_size(WG_1D, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG_1D + li;
  if (i >= params.n) {
    return;
  }
  let v = x[i];
  switch params.act {
    case 1u: { x[i] = gelu_tanh(v); }
    case 2u: { x[i] = select(0.0, v, v > 0.0); }
    case 3u: { x[i] = v / (1.0 + exp(-v)); }
    default: { x[i] = gelu_erf(v); }
  }
}

// gelu — the MLP activation of GPT-2 and BERT, in place on x [n] (src/kernels/
// activation.cpp, the block graph's Activation::kGelu / kGeluTanh):
//   tanh_form 0  GELU     0.5·x·(1 + erf(x/√2))              (BERT, torch's default)
//   tanh_form 1  gelu_new 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))  (GPT-2)
// The two forms: include/gelu_forms.wgsl.
//
// Shape legend: L sequence, F MLP width; n = L·F (or L·E for BERT's MLM head).

struct Params {
  n: u32,
  tanh_form: u32,
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
  if (params.tanh_form != 0u) {
    x[i] = gelu_tanh(v);
  } else {
    x[i] = gelu_erf(v);
  }
}

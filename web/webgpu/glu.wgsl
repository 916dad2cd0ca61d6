// glu — the gated MLP activations, in place on the up projection:
// up[i] = act(gate[i])·up[i] (src/train/elementwise.cpp SwiGluForward /
// GeGluForward, the block graph's Activation::kSwiGlu / kGeGlu / kGeGluTanh):
//   act 0  SiLU(g) = g/(1 + e^{-g})   Llama's SwiGLU (a very negative gate
//                                     gives e^{-g} = inf and 0, as in the C++)
//   act 1  GELU(g), erf form          GeGLU
//   act 2  GELU(g), tanh form         GeGLU with gelu_pytorch_tanh (Gemma)
// The GELUs: include/gelu_forms.wgsl.
//
// Shape legend: L sequence, F MLP width; gate, up [L, F], n = L·F.

struct Params {
  n: u32,
  act: u32,
}

@group(0) @binding(0) var<storage, read> gate: array<f32>;
@group(0) @binding(1) var<storage, read_write> up: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

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
  let g = gate[i];
  var a = g / (1.0 + exp(-g));
  if (params.act == 1u) {
    a = gelu_erf(g);
  } else if (params.act == 2u) {
    a = gelu_tanh(g);
  }
  up[i] = a * up[i];
}

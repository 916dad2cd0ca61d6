// swiglu — Llama's MLP activation, in place on the up projection:
// up[i] = SiLU(gate[i])·up[i] = gate/(1 + e^{-gate})·up (src/kernels/
// activation.cpp, the block graph's Activation::kSwiGlu). A very negative
// gate gives e^{-gate} = inf and 0, as in the C++.
//
// Shape legend: L sequence, F MLP width; gate, up [L, F], n = L·F.

struct Params {
  n: u32,
}

@group(0) @binding(0) var<storage, read> gate: array<f32>;
@group(0) @binding(1) var<storage, read_write> up: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

// #include tiles

@compute @workgroup_size(WG_1D, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG_1D + li;
  if (i >= params.n) {
    return;
  }
  let g = gate[i];
  up[i] = g / (1.0 + exp(-g)) * up[i];
}

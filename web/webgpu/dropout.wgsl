// dropout — inverted dropout in place on the layer's MHA output [B, L, E].
//
// Shape legend: B batch, L sequence, E embed; n = B·L·E elements.
// Element i is dropped when dropout_uniform(seed, i) < p (the counter hash of
// DropoutUniform in src/dropout.cpp, include/dropout_hash.wgsl), otherwise
// scaled by keep_scale = 1/(1-p) (computed in float32 on the host, as the C++
// does), so the mask matches the wasm backend bit for bit.

struct Params {
  n: u32,
  seed: u32,
  p: f32,
  keep_scale: f32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<uniform> params: Params;

// #include tiles

// #include dropout_hash

@compute @workgroup_size(WG_1D, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG_1D + li;
  if (i >= params.n) {
    return;
  }
  let u = dropout_uniform(params.seed, i);
  x[i] = select(x[i] * params.keep_scale, 0.0, u < params.p);
}

// scale — y = x·s (n floats): T5's tied head reads its input scaled by
// d_model^-0.5 (the block graph's headScale: (xf·headScale)·Whᵀ, each
// element scaled in float32 before the product, as Transformer::RawLogits).
//
// Shape legend: L sequence, E embed; n = L·E.

struct Params {
  n: u32,
  s: f32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
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
  y[i] = x[i] * params.s;
}

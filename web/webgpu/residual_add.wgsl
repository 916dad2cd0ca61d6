// residual_add — x += r in place: the residual connections of a pre-norm
// block (h = x + attention, x' = h + MLP; src/train/transformer_graph.cpp).
//
// Shape legend: L sequence, E embed; r, x [L, E], n = L·E.

struct Params {
  n: u32,
}

@group(0) @binding(0) var<storage, read> r: array<f32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
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
  x[i] = x[i] + r[i];
}

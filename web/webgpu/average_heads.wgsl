// average_heads — the weights averaged over heads (averageWeights: true).
//
// Shape legend: B batch, H heads, Lq/Lk sequence.
//   P [B, H, Lq, Lk] → A [B, Lq, Lk],  A = Σ_h P[b, h] · (1/H), summed in head
//   order as the C++ core does.
// One invocation per element of A.

struct Params {
  heads: u32,      // H
  plane: u32,      // Lq · Lk
  n: u32,          // B · Lq · Lk
  inv_heads: f32,  // 1/H
}

@group(0) @binding(0) var<storage, read> p: array<f32>;
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

// #include tiles

@compute @workgroup_size(WG_1D, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let idx = (wid.x + wid.y * nwg.x) * WG_1D + li;
  if (idx >= params.n) {
    return;
  }
  let b = idx / params.plane;
  let r = idx % params.plane;
  var acc = 0.0;
  for (var h = 0u; h < params.heads; h++) {
    acc += p[(b * params.heads + h) * params.plane + r] * params.inv_heads;
  }
  a[idx] = acc;
}

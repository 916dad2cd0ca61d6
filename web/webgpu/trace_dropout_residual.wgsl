// trace_dropout_residual — the layer's dropout and residual steps of
// forward(…, { trace: 'values' }), out of place so both can be read back:
//   dropped = training ? inverted dropout of attn (as dropout.wgsl) : attn
//   residual = x + dropped
// Shape legend: B batch, L sequence, E embed; n = B·L·E elements.

struct Params {
  n: u32,
  seed: u32,
  p: f32,
  keep_scale: f32,
  training: u32,
}

@group(0) @binding(0) var<storage, read> attn: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> dropped: array<f32>;
@group(0) @binding(3) var<storage, read_write> residual: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;

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
  var y = attn[i];
  if (params.training != 0u) {
    y = select(y * params.keep_scale, 0.0, dropout_uniform(params.seed, i) < params.p);
  }
  dropped[i] = y;
  residual[i] = x[i] + y;
}

// add_layer_norm — y = LayerNorm(x + residual)·gamma + beta over the last dim.
//
// Shape legend: B batch, L sequence, E embed; rows = B·L, dim = E.
//   x, residual, y [rows, dim]; gamma, beta [dim] (each optional by flag:
//   residual 0, gamma 1, beta 0 when absent)
// Two passes over the row as in the C++ kernel: the mean, then the centred
// variance (no E[x²] - E[x]² cancellation); rstd = 1/sqrt(var/dim + eps).
// One workgroup of 256 invocations per row, reductions in workgroup memory.

struct Params {
  rows: u32,
  dim: u32,
  eps: f32,
  has_residual: u32,
  has_gamma: u32,
  has_beta: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> residual: array<f32>;
@group(0) @binding(2) var<storage, read> gamma: array<f32>;
@group(0) @binding(3) var<storage, read> beta: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<uniform> params: Params;

const WG = 256u;

var<workgroup> red: array<f32, 256>;

fn value(base: u32, j: u32) -> f32 {
  var t = x[base + j];
  if (params.has_residual != 0u) {
    t += residual[base + j];
  }
  return t;
}

fn reduce_sum(li: u32, v: f32) -> f32 {
  red[li] = v;
  for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
    workgroupBarrier();
    if (li < stride) {
      red[li] = red[li] + red[li + stride];
    }
  }
  workgroupBarrier();
  let total = red[0];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= params.rows) {
    return;
  }
  let base = row * params.dim;
  let n = f32(params.dim);
  var sum = 0.0;
  for (var j = li; j < params.dim; j += WG) {
    sum += value(base, j);
  }
  let mean = reduce_sum(li, sum) / n;
  var sq = 0.0;
  for (var j = li; j < params.dim; j += WG) {
    let d = value(base, j) - mean;
    sq += d * d;
  }
  let rstd = 1.0 / sqrt(reduce_sum(li, sq) / n + params.eps);
  for (var j = li; j < params.dim; j += WG) {
    var v = (value(base, j) - mean) * rstd;
    if (params.has_gamma != 0u) {
      v *= gamma[j];
    }
    if (params.has_beta != 0u) {
      v += beta[j];
    }
    y[base + j] = v;
  }
}

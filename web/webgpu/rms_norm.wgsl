// rms_norm — y = x·rstd·w over the last dim, rstd = 1/sqrt(mean(x²) + eps):
// Llama's RMSNorm (src/rms_norm.cpp, the block graph's NormKind::kRmsNorm).
//
// Shape legend: B batch, L sequence, E embed; rows = B·L, dim = E.
//   x, y [rows, dim]; w [dim] (read only when has_weight != 0)
// One workgroup of 256 invocations per row, the sum of squares reduced in
// workgroup memory (the C++ sums in double; float32 here: within a few ulp
// at the model sizes, E ≤ 8192).

struct Params {
  rows: u32,
  dim: u32,
  eps: f32,
  has_weight: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

const WG = 256u;

var<workgroup> red: array<f32, 256>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= params.rows) {
    return;
  }
  let base = row * params.dim;
  var sq = 0.0;
  for (var j = li; j < params.dim; j += WG) {
    let v = x[base + j];
    sq += v * v;
  }
  red[li] = sq;
  for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
    workgroupBarrier();
    if (li < stride) {
      red[li] = red[li] + red[li + stride];
    }
  }
  workgroupBarrier();
  let rstd = 1.0 / sqrt(red[0] / f32(params.dim) + params.eps);
  for (var j = li; j < params.dim; j += WG) {
    var v = x[base + j] * rstd;
    if (params.has_weight != 0u) {
      v *= w[j];
    }
    y[base + j] = v;
  }
}

// linear — Y = X·W + b: the Q, K, V and output projections of multi-head
// attention (one dispatch per projection).
//
// Shape legend: B batch, L (Lq/Lk) sequence, E embed, H heads, D head dim.
//   X [M, K]  M = B·L input rows, K = E, kdim or vdim; row stride x_stride
//   W [K, N]  keras layout [in, out], N = E; float32, or 16-bit values two
//             a word (HALF_WEIGHTS: a model's F16/BF16 weights,
//             include/half_weights.wgsl), widened as they are staged
//   b [N]     read only when has_bias != 0
//   Y [M, N]  row stride y_stride
// A workgroup of 8×8 invocations computes a 64×64 tile of Y; invocation
// (tx, ty) owns rows ty + 8a and columns tx + 8c (a, c < 8): 64 accumulators,
// so each step over K reads 16 words of workgroup memory for 64 FMAs. K is
// stepped by 16: the X and W tiles (4 KiB each) are staged through workgroup
// memory with straight-line loads. The inner bodies are written out (no small
// loops): loop overhead and loads, not arithmetic, bound software adapters.
// Tiles are numbered linearly over the (x, y) grid, so any M·N fits under the
// 65535-per-dimension dispatch limit.

struct Params {
  m: u32,         // M = B·L
  n: u32,         // N = E
  k: u32,         // K = E, kdim or vdim
  has_bias: u32,
  x_offset: u32,
  x_stride: u32,
  y_offset: u32,
  y_stride: u32,
  tiles_n: u32,   // ceil(N / 64)
  tiles: u32,     // ceil(M / 64) · tiles_n
  w_bf16: u32,    // HALF_WEIGHTS: 1 BF16, 0 F16
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;  // float32 bits, or 16-bit pairs
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;

// #include tiles

// #include register_tile

// Set by the host per pipeline: W holds 16-bit values (webgpu-ops.js linear).
override HALF_WEIGHTS: bool = false;

// #include half_weights

var<workgroup> x_tile: array<f32, 1024>;  // [TILE_K][64 rows]
var<workgroup> w_tile: array<f32, 1024>;  // [TILE_K][64 columns]

// X[m0 + idx / 16, k0 + idx % 16] into x_tile (0 outside X).
fn stage_x(m0: u32, k0: u32, idx: u32) {
  let r = idx / TILE_K;
  let kk = idx % TILE_K;
  let ok = m0 + r < params.m && k0 + kk < params.k;
  let src = params.x_offset + min(m0 + r, params.m - 1u) * params.x_stride + min(k0 + kk, params.k - 1u);
  x_tile[kk * TILE + r] = select(0.0, x[src], ok);
}

// W[k0 + e, n0 + c] into w_tile (0 outside W).
fn stage_w(n0: u32, k0: u32, e: u32, c: u32) {
  let ok = k0 + e < params.k && n0 + c < params.n;
  let src = min(k0 + e, params.k - 1u) * params.n + min(n0 + c, params.n - 1u);
  w_tile[e * TILE + c] = select(0.0, weight(src), ok);
}

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let tile = wid.x + wid.y * nwg.x;
  if (tile >= params.tiles) {
    return;
  }
  let m0 = (tile / params.tiles_n) * TILE;
  let n0 = (tile % params.tiles_n) * TILE;
  let tx = lid.x;
  let ty = lid.y;
  for (var k0 = 0u; k0 < params.k; k0 += TILE_K) {
    // 16 + 16 words per invocation; neighbouring invocations read neighbouring words.
    stage_x(m0, k0, li);
    stage_x(m0, k0, li + 64u);
    stage_x(m0, k0, li + 128u);
    stage_x(m0, k0, li + 192u);
    stage_x(m0, k0, li + 256u);
    stage_x(m0, k0, li + 320u);
    stage_x(m0, k0, li + 384u);
    stage_x(m0, k0, li + 448u);
    stage_x(m0, k0, li + 512u);
    stage_x(m0, k0, li + 576u);
    stage_x(m0, k0, li + 640u);
    stage_x(m0, k0, li + 704u);
    stage_x(m0, k0, li + 768u);
    stage_x(m0, k0, li + 832u);
    stage_x(m0, k0, li + 896u);
    stage_x(m0, k0, li + 960u);
    for (var e = 0u; e < TILE_K; e++) {
      stage_w(n0, k0, e, li);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TILE_K; kk++) {
      let wb = kk * TILE + tx;
      let w_lo = vec4f(w_tile[wb], w_tile[wb + 8u], w_tile[wb + 16u], w_tile[wb + 24u]);
      let w_hi = vec4f(w_tile[wb + 32u], w_tile[wb + 40u], w_tile[wb + 48u], w_tile[wb + 56u]);
      let xb = kk * TILE + ty;
      let x0 = x_tile[xb];
      let x1 = x_tile[xb + 8u];
      let x2 = x_tile[xb + 16u];
      let x3 = x_tile[xb + 24u];
      let x4 = x_tile[xb + 32u];
      let x5 = x_tile[xb + 40u];
      let x6 = x_tile[xb + 48u];
      let x7 = x_tile[xb + 56u];
      tile_fma(x0, x1, x2, x3, x4, x5, x6, x7, w_lo, w_hi);
    }
    workgroupBarrier();
  }
  for (var a = 0u; a < 8u; a++) {
    let row = m0 + ty + 8u * a;
    if (row >= params.m) {
      break;
    }
    for (var c = 0u; c < 8u; c++) {
      let col = n0 + tx + 8u * c;
      if (col < params.n) {
        var v = acc[2u * a + c / 4u][c % 4u];
        if (params.has_bias != 0u) {
          v += bias[col];
        }
        y[params.y_offset + row * params.y_stride + col] = v;
      }
    }
  }
}

// attention_scores_softmax — P = softmax(Q·Kᵀ·scale + mask) row by row,
// written to the weights [B, H, Lq, Lk] (the path that returns the weights).
//
// Shape legend: B batch, H heads, Lq/Lk sequence, D head dim.
//   Q [B, H, Lq, D], K [B, H, Lk, D]  read through strides (sb, sh, sl), so
//                                     [B, L, E] projections split into heads
//                                     by index arithmetic (sh = D, sl = E)
//   mask                              tensor mask broadcast to [B, H, Lq, Lk]
//                                     by strides (0 on broadcast dims)
//   lengths [B]                       padding: key j of batch b is masked when
//                                     j >= lengths[b]
//   P [B, H, Lq, Lk]                  contiguous
// Semantics (as src/kernels/attention_core.cpp): s = q·k·scale; then the
// tensor mask (keep: 0 → -1e9; block: s += m·(-1e9); additive: s += m); then
// causal (top-left: key j > i) and padding fill with -1e9, overriding. A row
// whose maximum is -inf is made uniform (1/Lk), never NaN.
//
// A workgroup of 8×8 invocations owns 64 query rows of one (b, h); in each
// 64-key tile invocation (tx, ty) computes rows ty + 8a and keys tx + 8c
// (a, c < 8), Q and K read straight from memory (16 loads per 64 FMAs).
// Pass 1 writes the masked scores and keeps per-row partial maxima; the row
// max is reduced in workgroup memory; pass 2 turns each invocation's own
// scores into exp(s - max) and partial sums, reduced the same way; pass 3
// scales them by 1/sum. Tiles past every row's visible keys only write -1e9.

struct Params {
  heads: u32,        // H
  lq: u32,           // Lq
  lk: u32,           // Lk
  d: u32,            // D
  scale: f32,
  neg_inf: f32,      // -inf (not expressible as a WGSL constant)
  causal: u32,
  has_lengths: u32,
  q_sb: u32,
  q_sh: u32,
  q_sl: u32,
  k_sb: u32,
  k_sh: u32,
  k_sl: u32,
  mask_kind: u32,    // 0 none, 1 keep, 2 block, 3 additive
  m_sb: u32,
  m_sh: u32,
  m_sq: u32,
  m_sk: u32,
  row_blocks: u32,   // ceil(Lq / 64)
  tiles: u32,        // B · H · row_blocks
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> mask: array<f32>;
@group(0) @binding(3) var<storage, read> lengths: array<u32>;
@group(0) @binding(4) var<storage, read_write> weights: array<f32>;
@group(0) @binding(5) var<uniform> params: Params;

// #include tiles

const BLOCK = TILE;
const MASK_FILL = -1e9;
const NEG_INF_BITS = 0xff800000u;

var<workgroup> red: array<f32, 512>;  // [64 rows][8] partial maxima, then sums

var<private> s: array<vec4f, 16>;     // s[2a]: keys c = 0..3 of row a; s[2a + 1]: keys 4..7
var<private> q_row: array<u32, 8>;    // offset of row a in Q (clamped to Lq - 1)

fn apply_tensor_mask(x: f32, m: f32) -> f32 {
  switch params.mask_kind {
    case 1u: { return select(x, MASK_FILL, m == 0.0); }
    case 2u: { return x + m * MASK_FILL; }
    case 3u: { return x + m; }
    default: { return x; }
  }
}

// #include attention_scores

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let tile = wid.x + wid.y * nwg.x;
  if (tile >= params.tiles) {
    return;
  }
  let rb = tile % params.row_blocks;
  let bh = tile / params.row_blocks;
  let b = bh / params.heads;
  let h = bh % params.heads;
  let i0 = rb * BLOCK;
  let tx = li % 8u;
  let ty = li / 8u;
  let q_base = b * params.q_sb + h * params.q_sh;
  let k_base = b * params.k_sb + h * params.k_sh;
  let m_base = b * params.m_sb + h * params.m_sh;
  let w_base = bh * params.lq * params.lk;
  for (var a = 0u; a < 8u; a++) {
    q_row[a] = q_base + min(i0 + ty + 8u * a, params.lq - 1u) * params.q_sl;
  }
  let kv_end = row_valid(b, min(i0 + BLOCK, params.lq) - 1u);
  let n_tiles = (params.lk + BLOCK - 1u) / BLOCK;

  // Pass 1: masked scores and partial row maxima.
  var m_part: array<f32, 8>;
  for (var a = 0u; a < 8u; a++) {
    m_part[a] = params.neg_inf;
  }
  for (var t = 0u; t < n_tiles; t++) {
    let j0 = t * BLOCK;
    if (j0 < kv_end) {
      scores(k_base, j0, tx);
    }
    for (var a = 0u; a < 8u; a++) {
      let i = i0 + ty + 8u * a;
      if (i >= params.lq) {
        break;
      }
      let valid = row_valid(b, i);
      let m_off = m_base + i * params.m_sq;
      for (var c = 0u; c < 8u; c++) {
        let j = j0 + tx + 8u * c;
        if (j < params.lk) {
          var x = MASK_FILL;
          if (j < valid) {
            x = s[2u * a + c / 4u][c % 4u] * params.scale;
            if (params.mask_kind != 0u) {
              x = apply_tensor_mask(x, mask[m_off + j * params.m_sk]);
            }
          }
          weights[w_base + i * params.lk + j] = x;
          m_part[a] = max(m_part[a], x);
        }
      }
    }
  }
  var m_row: array<f32, 8>;
  for (var a = 0u; a < 8u; a++) {
    red[(ty + 8u * a) * 8u + tx] = m_part[a];
  }
  workgroupBarrier();
  for (var a = 0u; a < 8u; a++) {
    let r = (ty + 8u * a) * 8u;
    m_row[a] = max(max(max(red[r], red[r + 1u]), max(red[r + 2u], red[r + 3u])),
                   max(max(red[r + 4u], red[r + 5u]), max(red[r + 6u], red[r + 7u])));
  }
  workgroupBarrier();

  // Pass 2: exp(s - max) and partial sums (rows whose max is -inf are uniform).
  var sum_part: array<f32, 8>;
  for (var t = 0u; t < n_tiles; t++) {
    for (var a = 0u; a < 8u; a++) {
      let i = i0 + ty + 8u * a;
      if (i >= params.lq) {
        break;
      }
      if (bitcast<u32>(m_row[a]) == NEG_INF_BITS) {
        continue;
      }
      for (var c = 0u; c < 8u; c++) {
        let j = t * BLOCK + tx + 8u * c;
        if (j < params.lk) {
          let idx = w_base + i * params.lk + j;
          let e = exp(weights[idx] - m_row[a]);
          weights[idx] = e;
          sum_part[a] += e;
        }
      }
    }
  }
  for (var a = 0u; a < 8u; a++) {
    red[(ty + 8u * a) * 8u + tx] = sum_part[a];
  }
  workgroupBarrier();

  // Pass 3: normalise.
  for (var a = 0u; a < 8u; a++) {
    let i = i0 + ty + 8u * a;
    if (i >= params.lq) {
      break;
    }
    let r = (ty + 8u * a) * 8u;
    let total = (red[r] + red[r + 1u] + red[r + 2u] + red[r + 3u]) +
                (red[r + 4u] + red[r + 5u] + red[r + 6u] + red[r + 7u]);
    let uniform_row = bitcast<u32>(m_row[a]) == NEG_INF_BITS;
    let inv = 1.0 / total;
    let u = 1.0 / f32(params.lk);
    for (var t = 0u; t < n_tiles; t++) {
      for (var c = 0u; c < 8u; c++) {
        let j = t * BLOCK + tx + 8u * c;
        if (j < params.lk) {
          let idx = w_base + i * params.lk + j;
          weights[idx] = select(weights[idx] * inv, u, uniform_row);
        }
      }
    }
  }
}

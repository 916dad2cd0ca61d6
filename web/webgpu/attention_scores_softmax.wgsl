// attention_scores_softmax — P = softmax(rules(Q·Kᵀ·scale)) row by row,
// written to the weights [B, H, Lq, Lk] (the path that returns the weights).
//
// Shape legend: B batch, H heads, Hkv key/value heads, Lq/Lk sequence, D head dim.
//   Q [B, H, Lq, D], K [B, Hkv, Lk, D] read through strides (sb, sh, sl), so
//                                     [B, L, E] projections split into heads
//                                     by index arithmetic (sh = D, sl = E);
//                                     query head h reads kv head h·Hkv/H
//                                     (GQA/MQA, no copies)
//   mask                              tensor mask broadcast to [B, H, Lq, Lk]
//                                     by strides (0 on broadcast dims)
//   lengths [B]                       padding: keys j >= lengths[b] are masked
//   slopes [H]                        ALiBi slopes (with params.alibi)
//   P [B, H, Lq, Lk]                  contiguous
// Semantics (as src/kernels/attention_core.cpp; include/attention_rules.wgsl):
// s = q·k·scale → softcap → tensor mask → ALiBi; keys outside the row's
// causal/window/padding range get `fill`. A row whose maximum is -inf is
// uniform (1/Lk) with a finite fill, all zeros with fill -inf; never NaN.
//
// A workgroup of 8×8 invocations owns 64 query rows of one (b, h); in each
// 64-key tile invocation (tx, ty) computes rows ty + 8a and keys tx + 8c
// (a, c < 8), Q and K read straight from memory (16 loads per 64 FMAs).
// Pass 1 writes the masked scores and keeps per-row partial maxima; the row
// max is reduced in workgroup memory; pass 2 turns each invocation's own
// scores into exp(s - max) and partial sums, reduced the same way; pass 3
// scales them by 1/sum. Tiles outside every row's visible keys only write
// the fill.

struct Params {
// #include attention_params
  neg_inf: f32,      // -inf (not expressible as a WGSL constant)
  row_blocks: u32,   // ceil(Lq / 64)
  tiles: u32,        // B · H · row_blocks
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> mask: array<f32>;
@group(0) @binding(3) var<storage, read> lengths: array<u32>;
@group(0) @binding(4) var<storage, read> slopes: array<f32>;
@group(0) @binding(5) var<storage, read_write> weights: array<f32>;
@group(0) @binding(6) var<uniform> params: Params;

// #include tiles

const BLOCK = TILE;
// Set by the host per pipeline: false when the call has no softcap and no
// ALiBi, so the common case compiles without their per-score code.
override SCORE_EXTRAS: bool = true;

var<workgroup> red: array<f32, 512>;  // [64 rows][8] partial maxima, then sums

var<private> s: array<vec4f, 16>;     // s[2a]: keys c = 0..3 of row a; s[2a + 1]: keys 4..7
var<private> q_row: array<u32, 8>;    // offset of row a in Q (clamped to Lq - 1)

// #include attention_rules

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
  let k_base = b * params.k_sb + (h * params.kv_heads / params.heads) * params.k_sh;
  let m_base = b * params.m_sb + h * params.m_sh;
  let w_base = bh * params.lq * params.lk;
  for (var a = 0u; a < 8u; a++) {
    q_row[a] = q_base + min(i0 + ty + 8u * a, params.lq - 1u) * params.q_sl;
  }
  // lo and hi are nondecreasing in i: the block sees keys [kv_lo, kv_end).
  let kv_lo = row_range(b, i0).x;
  let kv_end = row_range(b, min(i0 + BLOCK, params.lq) - 1u).y;
  let slope = alibi_slope(h);
  let n_tiles = (params.lk + BLOCK - 1u) / BLOCK;

  // Pass 1: masked scores and partial row maxima.
  var m_part: array<f32, 8>;
  for (var a = 0u; a < 8u; a++) {
    m_part[a] = params.neg_inf;
  }
  for (var t = 0u; t < n_tiles; t++) {
    let j0 = t * BLOCK;
    if (j0 < kv_end && j0 + BLOCK > kv_lo) {
      scores(k_base, j0, tx);
    }
    for (var a = 0u; a < 8u; a++) {
      let i = i0 + ty + 8u * a;
      if (i >= params.lq) {
        break;
      }
      let range = row_range(b, i);
      let pos = alibi_pos(b, i);
      let m_off = m_base + i * params.m_sq;
      for (var c = 0u; c < 8u; c++) {
        let j = j0 + tx + 8u * c;
        if (j < params.lk) {
          var x = params.fill;
          if (j >= range.x && j < range.y) {
            var m = 0.0;
            if (params.mask_kind != 0u) {
              m = mask[m_off + j * params.m_sk];
            }
            x = s[2u * a + c / 4u][c % 4u] * params.scale;
            if (SCORE_EXTRAS) {
              x = mask_and_bias(apply_softcap(x), m, j, slope, pos);
            } else if (params.mask_kind != 0u) {
              x = apply_tensor_mask(x, m);
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

  // Pass 2: exp(s - max) and partial sums (rows whose max is -inf are decided in pass 3).
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
    let u = select(1.0 / f32(params.lk), 0.0, fill_is_neg_inf());
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

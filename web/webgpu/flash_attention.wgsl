// flash_attention — O = softmax(Q·Kᵀ·scale + mask)·V without storing the
// [Lq, Lk] weights: an online softmax over key tiles (the path used when the
// weights are not requested). Memory is O(L·E): Q, K, V and O only.
//
// Shape legend: B batch, H heads, Hkv key/value heads, Lq/Lk sequence,
// D head dim, Dv value head dim.
//   Q [B, H, Lq, D], K [B, Hkv, Lk, D], V [B, Hkv, Lk, Dv], O [B, H, Lq, Dv],
//   all read or written through strides (sb, sh, sl): [B, L, E] projections
//   are split into heads, and the output merged, by index arithmetic (sh = D,
//   sl = E), never copied; query head h reads kv head h·Hkv/H (GQA/MQA).
//   mask     tensor mask broadcast to [B, H, Lq, Lk] by strides (m_s*)
//   lengths  [B] padding lengths
//   slopes   [H] ALiBi slopes (with params.alibi)
// Semantics as attention_scores_softmax.wgsl and the C++ core
// (include/attention_rules.wgsl): scale → softcap → tensor mask → ALiBi;
// keys outside the row's causal/window/padding range get `fill`; a row of
// all -inf is uniform with a finite fill, zeros with fill -inf.
//
// A workgroup of 8×8 invocations owns 64 query rows of one (b, h) and 64
// output columns (a Dv chunk); invocation (tx, ty) owns rows ty + 8a and, in
// each 64-key tile, keys tx + 8c (a, c < 8), and output columns tx + 8c.
// Per key tile:
//   S = Q·Kᵀ, 8×8 per invocation, Q and K read straight from memory (16
//   loads per 64 FMAs), scaled and masked;
//   row max and sum over the tile: partials exchanged in workgroup memory;
//   m' = max(m, max_j s_j), α = exp(m - m'), p_j = exp(s_j - m'),
//   l' = α·l + Σp (exp(-inf - -inf) is read as 1, so all -inf rows stay uniform);
//   O = α·O + P·V with P staged through workgroup memory, 32 keys at a time.
// Key tiles outside every row's visible keys (causal, window, padding) are
// skipped: there every score is exactly `fill`, so they add exp(fill - m) = 0
// unless a row's max is near a finite fill; then (after the visible tiles)
// that row adds n·exp(fill - m') to l and exp(fill - m')·ΣV to O in closed
// form. A sliding window costs O(Lq·window), not O(Lq·Lk).
// Workgroup memory: 12 KiB.

struct Params {
// #include attention_params
  dv: u32,           // Dv
  neg_inf: f32,      // -inf (not expressible as a WGSL constant)
  v_sb: u32,
  v_sh: u32,
  v_sl: u32,
  o_sb: u32,
  o_sh: u32,
  o_sl: u32,
  row_blocks: u32,   // ceil(Lq / 64)
  dv_chunks: u32,    // ceil(Dv / 64)
  tiles: u32,        // B · H · row_blocks · dv_chunks
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> mask: array<f32>;
@group(0) @binding(4) var<storage, read> lengths: array<u32>;
@group(0) @binding(5) var<storage, read> slopes: array<f32>;
@group(0) @binding(6) var<storage, read_write> o: array<f32>;
@group(0) @binding(7) var<uniform> params: Params;

// #include tiles

const BLOCK = TILE;  // query rows per workgroup, keys per tile, output columns per workgroup
const HALF = 32u;   // keys of P staged at a time
// Set by the host per pipeline: false when the call has no softcap and no
// ALiBi, so the common case compiles without their per-score code.
override SCORE_EXTRAS: bool = true;

var<workgroup> red_max: array<f32, 512>;   // [64 rows][8] partial maxima
var<workgroup> red_sum: array<f32, 512>;   // [64 rows][8] partial sums
var<workgroup> p_half: array<f32, 2048>;   // [64 rows][32 keys]

// Per invocation. s[2a] holds keys c = 0..3 of row a, s[2a + 1] keys 4..7;
// acc the same over output columns.
var<private> s: array<vec4f, 16>;
// #include register_tile
var<private> m_row: array<f32, 8>;
var<private> l_row: array<f32, 8>;
var<private> alpha_row: array<f32, 8>;
var<private> range_row: array<vec2u, 8>;  // keys [lo, hi) of row a
var<private> pos_row: array<f32, 8>;      // ALiBi position of row a
var<private> slope: f32;                  // ALiBi slope of the head (0: none)
var<private> q_row: array<u32, 8>;     // offset of row a in Q (clamped to Lq - 1)
var<private> mask_row: array<u32, 8>;  // offset of row a in the mask

// #include attention_rules

// #include attention_scores

// Scale, softcap, tensor mask, ALiBi and fill of four scores of row a (keys jv).
fn mask4(sv: vec4f, jv: vec4u, a: u32) -> vec4f {
  let range = range_row[a];
  let m_off = mask_row[a];
  var m = vec4f(0.0);
  if (params.mask_kind != 0u) {
    let jc = min(jv, vec4u(params.lk - 1u)) * params.m_sk + vec4u(m_off);
    m = vec4f(mask[jc.x], mask[jc.y], mask[jc.z], mask[jc.w]);
  }
  var x = sv * params.scale;
  if (SCORE_EXTRAS && (params.softcap > 0.0 || slope != 0.0)) {
    let pos = pos_row[a];
    x = vec4f(mask_and_bias(apply_softcap(x.x), m.x, jv.x, slope, pos),
              mask_and_bias(apply_softcap(x.y), m.y, jv.y, slope, pos),
              mask_and_bias(apply_softcap(x.z), m.z, jv.z, slope, pos),
              mask_and_bias(apply_softcap(x.w), m.w, jv.w, slope, pos));
  } else {
    // The common case, four lanes at once: the tensor mask only (as apply_tensor_mask).
    switch params.mask_kind {
      case 1u: { x = select(x, vec4f(params.fill), m == vec4f(0.0)); }
      case 2u: { x = select(x + m * params.fill, x, m == vec4f(0.0)); }
      case 3u: { x = x + m; }
      default: {}
    }
  }
  let inside = (jv >= vec4u(range.x)) & (jv < vec4u(range.y));
  return select(vec4f(params.fill), x, inside);
}

fn max4(v: vec4f) -> f32 {
  return max(max(v.x, v.y), max(v.z, v.w));
}

// exp(x - m) for keys < Lk (exp(-inf - -inf) read as 1), 0 for keys >= Lk.
fn exp4(x: vec4f, m: f32, jv: vec4u) -> vec4f {
  let p = select(exp(x - vec4f(m)), vec4f(1.0), x == vec4f(m));
  return select(vec4f(0.0), p, jv < vec4u(params.lk));
}

fn process_tile(j0: u32, k_base: u32, v_base: u32, dv0: u32, tx: u32, ty: u32) {
  scores(k_base, j0, tx);

  // Scale, mask and fill; the tile's partial row maxima (keys j >= Lk excluded).
  let j_lo = vec4u(j0 + tx) + vec4u(0u, 8u, 16u, 24u);
  let j_hi = j_lo + vec4u(32u);
  let neg = vec4f(params.neg_inf);
  let lk4 = vec4u(params.lk);
  for (var a = 0u; a < 8u; a++) {
    let x_lo = mask4(s[2u * a], j_lo, a);
    let x_hi = mask4(s[2u * a + 1u], j_hi, a);
    s[2u * a] = x_lo;
    s[2u * a + 1u] = x_hi;
    red_max[(ty + 8u * a) * 8u + tx] = max4(max(select(neg, x_lo, j_lo < lk4), select(neg, x_hi, j_hi < lk4)));
  }
  workgroupBarrier();

  // Online softmax update.
  for (var a = 0u; a < 8u; a++) {
    let r = (ty + 8u * a) * 8u;
    let tmax = max(max(max(red_max[r], red_max[r + 1u]), max(red_max[r + 2u], red_max[r + 3u])),
                   max(max(red_max[r + 4u], red_max[r + 5u]), max(red_max[r + 6u], red_max[r + 7u])));
    let m_old = m_row[a];
    let m_new = max(m_old, tmax);
    let p_lo = exp4(s[2u * a], m_new, j_lo);
    let p_hi = exp4(s[2u * a + 1u], m_new, j_hi);
    s[2u * a] = p_lo;
    s[2u * a + 1u] = p_hi;
    let ps = p_lo + p_hi;
    red_sum[r + tx] = (ps.x + ps.y) + (ps.z + ps.w);
    let alpha = select(exp(m_old - m_new), 1.0, m_old == m_new);
    alpha_row[a] = alpha;
    m_row[a] = m_new;
    acc[2u * a] *= alpha;
    acc[2u * a + 1u] *= alpha;
  }
  workgroupBarrier();
  for (var a = 0u; a < 8u; a++) {
    let r = (ty + 8u * a) * 8u;
    let tsum = (red_sum[r] + red_sum[r + 1u] + red_sum[r + 2u] + red_sum[r + 3u]) +
               (red_sum[r + 4u] + red_sum[r + 5u] + red_sum[r + 6u] + red_sum[r + 7u]);
    l_row[a] = l_row[a] * alpha_row[a] + tsum;
  }

  // O += P·V, 32 keys at a time (s[2a + half] holds this invocation's keys of the half).
  let col_last = params.dv - 1u;
  let c0 = min(dv0 + tx, col_last);
  let c1 = min(dv0 + tx + 8u, col_last);
  let c2 = min(dv0 + tx + 16u, col_last);
  let c3 = min(dv0 + tx + 24u, col_last);
  let c4 = min(dv0 + tx + 32u, col_last);
  let c5 = min(dv0 + tx + 40u, col_last);
  let c6 = min(dv0 + tx + 48u, col_last);
  let c7 = min(dv0 + tx + 56u, col_last);
  for (var half = 0u; half < 2u; half++) {
    let jh = j0 + HALF * half;
    if (jh >= params.lk) {
      break;
    }
    for (var a = 0u; a < 8u; a++) {
      let dst = (ty + 8u * a) * HALF + tx;
      let pv = s[2u * a + half];
      p_half[dst] = pv.x;
      p_half[dst + 8u] = pv.y;
      p_half[dst + 16u] = pv.z;
      p_half[dst + 24u] = pv.w;
    }
    workgroupBarrier();
    let nk = min(HALF, params.lk - jh);
    for (var jj = 0u; jj < nk; jj++) {
      let vr = v_base + (jh + jj) * params.v_sl;
      let v_lo = vec4f(v[vr + c0], v[vr + c1], v[vr + c2], v[vr + c3]);
      let v_hi = vec4f(v[vr + c4], v[vr + c5], v[vr + c6], v[vr + c7]);
      let pb = ty * HALF + jj;
      let p0 = p_half[pb];
      let p1 = p_half[pb + 256u];
      let p2 = p_half[pb + 512u];
      let p3 = p_half[pb + 768u];
      let p4 = p_half[pb + 1024u];
      let p5 = p_half[pb + 1280u];
      let p6 = p_half[pb + 1536u];
      let p7 = p_half[pb + 1792u];
      tile_fma(p0, p1, p2, p3, p4, p5, p6, p7, v_lo, v_hi);
    }
    workgroupBarrier();
  }
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let tile = wid.x + wid.y * nwg.x;
  if (tile >= params.tiles) {
    return;
  }
  let dvc = tile % params.dv_chunks;
  let t1 = tile / params.dv_chunks;
  let rb = t1 % params.row_blocks;
  let bh = t1 / params.row_blocks;
  let b = bh / params.heads;
  let h = bh % params.heads;
  let i0 = rb * BLOCK;
  let dv0 = dvc * BLOCK;
  let tx = li % 8u;
  let ty = li / 8u;
  let q_base = b * params.q_sb + h * params.q_sh;
  let hk = h * params.kv_heads / params.heads;
  let k_base = b * params.k_sb + hk * params.k_sh;
  let v_base = b * params.v_sb + hk * params.v_sh;
  slope = alibi_slope(h);
  let m_base = b * params.m_sb + h * params.m_sh;

  for (var a = 0u; a < 8u; a++) {
    let i = i0 + ty + 8u * a;
    let ic = min(i, params.lq - 1u);
    range_row[a] = row_range(b, i);
    pos_row[a] = alibi_pos(b, i);
    q_row[a] = q_base + ic * params.q_sl;
    mask_row[a] = m_base + ic * params.m_sq;
    m_row[a] = params.neg_inf;
    l_row[a] = 0.0;
    acc[2u * a] = vec4f(0.0);
    acc[2u * a + 1u] = vec4f(0.0);
  }

  // lo and hi are nondecreasing in i: the block sees keys [kv_lo, kv_end).
  let kv_lo = row_range(b, i0).x;
  let kv_end = row_range(b, min(i0 + BLOCK, params.lq) - 1u).y;
  let first_tile = select(0u, kv_lo / BLOCK, kv_lo < kv_end);
  let main_tiles = select(first_tile, (kv_end + BLOCK - 1u) / BLOCK, kv_lo < kv_end);
  for (var t = first_tile; t < main_tiles; t++) {
    process_tile(t * BLOCK, k_base, v_base, dv0, tx, ty);
  }

  // The skipped keys [0, main_start) and [main_end, Lk): every score is the
  // fill (closed form, no barrier; nothing to add when the fill is -inf).
  let main_start = min(first_tile * BLOCK, params.lk);
  let main_end = max(min(main_tiles * BLOCK, params.lk), main_start);
  let n_tail = main_start + params.lk - main_end;
  if (n_tail > 0u && !fill_is_neg_inf()) {
    var have_sum = false;
    var vs_lo = vec4f(0.0);
    var vs_hi = vec4f(0.0);
    for (var a = 0u; a < 8u; a++) {
      let m_new = max(m_row[a], params.fill);
      let pf = exp(params.fill - m_new);
      if (pf > 0.0) {
        if (!have_sum) {
          let col_last = params.dv - 1u;
          for (var j = 0u; j < params.lk; j++) {
            if (j == main_start) {
              j = main_end;
              if (j >= params.lk) {
                break;
              }
            }
            let vr = v_base + j * params.v_sl;
            vs_lo += vec4f(v[vr + min(dv0 + tx, col_last)], v[vr + min(dv0 + tx + 8u, col_last)],
                           v[vr + min(dv0 + tx + 16u, col_last)], v[vr + min(dv0 + tx + 24u, col_last)]);
            vs_hi += vec4f(v[vr + min(dv0 + tx + 32u, col_last)], v[vr + min(dv0 + tx + 40u, col_last)],
                           v[vr + min(dv0 + tx + 48u, col_last)], v[vr + min(dv0 + tx + 56u, col_last)]);
          }
          have_sum = true;
        }
        let alpha = select(exp(m_row[a] - m_new), 1.0, m_row[a] == m_new);
        acc[2u * a] = acc[2u * a] * alpha + pf * vs_lo;
        acc[2u * a + 1u] = acc[2u * a + 1u] * alpha + pf * vs_hi;
        l_row[a] = l_row[a] * alpha + pf * f32(n_tail);
        m_row[a] = m_new;
      }
    }
  }

  let o_base = b * params.o_sb + h * params.o_sh;
  for (var a = 0u; a < 8u; a++) {
    let i = i0 + ty + 8u * a;
    if (i >= params.lq) {
      break;
    }
    // A row that sees nothing with fill -inf: zero weights, a zero output row.
    let empty = fill_is_neg_inf() && bitcast<u32>(m_row[a]) == NEG_INF_BITS;
    let inv = select(1.0 / l_row[a], 0.0, empty);
    for (var c = 0u; c < 8u; c++) {
      let col = dv0 + tx + 8u * c;
      if (col < params.dv) {
        o[o_base + i * params.o_sl + col] = acc[2u * a + c / 4u][c % 4u] * inv;
      }
    }
  }
}

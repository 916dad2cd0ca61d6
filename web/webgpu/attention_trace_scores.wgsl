// attention_trace_scores — the scores of forward(…, { trace: 'values' }):
// scaled scores S = Q·Kᵀ·scale and the masked scores (S after the tensor mask,
// keys past a row's causal/padding limit filled with -1e9), both
// [B, H, Lq, Lk]. The same rules as attention_scores_softmax.wgsl (shared
// includes); one invocation per score (a diagnostic path, not a fast one).
//
// Shape legend: B batch, H heads, Lq/Lk sequence, D head dim.
//   Q [B, H, Lq, D], K [B, H, Lk, D]  read through strides (sb, sh, sl)
//   mask                              broadcast to [B, H, Lq, Lk] by strides
//   lengths [B]                       padding

struct Params {
  heads: u32,        // H
  lq: u32,           // Lq
  lk: u32,           // Lk
  d: u32,            // D
  scale: f32,
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
  n: u32,            // B · H · Lq · Lk
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> mask: array<f32>;
@group(0) @binding(3) var<storage, read> lengths: array<u32>;
@group(0) @binding(4) var<storage, read_write> scores_out: array<f32>;
@group(0) @binding(5) var<storage, read_write> masked_out: array<f32>;
@group(0) @binding(6) var<uniform> params: Params;

// #include tiles

const MASK_FILL = -1e9;

var<private> s: array<vec4f, 16>;   // used by the included scores() tile only
var<private> q_row: array<u32, 8>;

// #include tensor_mask

// #include attention_scores

@compute @workgroup_size(WG_1D, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let idx = (wid.x + wid.y * nwg.x) * WG_1D + li;
  if (idx >= params.n) {
    return;
  }
  let j = idx % params.lk;
  let i = (idx / params.lk) % params.lq;
  let bh = idx / (params.lk * params.lq);
  let b = bh / params.heads;
  let h = bh % params.heads;
  let q_off = b * params.q_sb + h * params.q_sh + i * params.q_sl;
  let k_off = b * params.k_sb + h * params.k_sh + j * params.k_sl;
  var acc = 0.0;
  for (var c = 0u; c < params.d; c++) {
    acc += q[q_off + c] * k[k_off + c];
  }
  let x = acc * params.scale;
  scores_out[idx] = x;
  var m = MASK_FILL;
  if (j < row_valid(b, i)) {
    m = x;
    if (params.mask_kind != 0u) {
      m = apply_tensor_mask(x, mask[b * params.m_sb + h * params.m_sh + i * params.m_sq + j * params.m_sk]);
    }
  }
  masked_out[idx] = m;
}

// attention_trace_scores — the scores of forward(…, { trace: 'values' }):
// scaled scores S = Q·Kᵀ·scale, the soft-capped scores c·tanh(S/c) (with
// softcap) and the masked scores (after the tensor mask and ALiBi, keys
// outside a row's causal/window/padding range filled), all [B, H, Lq, Lk].
// The same rules as attention_scores_softmax.wgsl (shared includes); one
// invocation per score (a diagnostic path, not a fast one).
//
// Shape legend: B batch, H heads, Hkv key/value heads, Lq/Lk sequence, D head dim.
//   Q [B, H, Lq, D], K [B, Hkv, Lk, D]  read through strides (sb, sh, sl);
//                                       query head h reads kv head h·Hkv/H
//   mask                                broadcast to [B, H, Lq, Lk] by strides
//   lengths [B]                         padding
//   slopes [H]                          ALiBi slopes (with params.alibi)

struct Params {
// #include attention_params
  has_capped: u32,   // 1: write capped_out
  n: u32,            // B · H · Lq · Lk
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> mask: array<f32>;
@group(0) @binding(3) var<storage, read> lengths: array<u32>;
@group(0) @binding(4) var<storage, read> slopes: array<f32>;
@group(0) @binding(5) var<storage, read_write> scores_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> capped_out: array<f32>;
@group(0) @binding(7) var<storage, read_write> masked_out: array<f32>;
@group(0) @binding(8) var<uniform> params: Params;

// #include tiles

// #include attention_rules

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
  let hk = h * params.kv_heads / params.heads;
  let q_off = b * params.q_sb + h * params.q_sh + i * params.q_sl;
  let k_off = b * params.k_sb + hk * params.k_sh + j * params.k_sl;
  var acc = 0.0;
  for (var c = 0u; c < params.d; c++) {
    acc += q[q_off + c] * k[k_off + c];
  }
  let x = acc * params.scale;
  scores_out[idx] = x;
  let capped = apply_softcap(x);
  if (params.has_capped != 0u) {
    capped_out[idx] = capped;
  }
  var m = params.fill;
  let range = row_range(b, i);
  if (j >= range.x && j < range.y) {
    var mv = 0.0;
    if (params.mask_kind != 0u) {
      mv = mask[b * params.m_sb + h * params.m_sh + i * params.m_sq + j * params.m_sk];
    }
    m = mask_and_bias(capped, mv, j, alibi_slope(h), alibi_pos(b, i));
  }
  masked_out[idx] = m;
}

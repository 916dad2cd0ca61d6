// Multi-head attention for training, forward and backward over the same
// activations (torch layout weights, heads split by strides, no copies):
//   forward   Q = query·Wqᵀ + bq   [B, Lq, H·D]   K = key·Wkᵀ + bk  [B, Lk, H·D]
//             V = value·Wvᵀ + bv   [B, Lk, H·D] (GQA: K, V [B, Lk, Hkv·D];
//             D = head_dim or E/H)
//             (qk_norm: Q, K ← RMSNorm over D of each head)
//             (rope: Q, K ← RoPE(Q), RoPE(K) per head, in place)
//             ctx = attention per head (view [B, H, L, D] of the [B, L, E]
//                   buffers)                      [B, Lq, E]
//             output = ctx·Woᵀ + bo               [B, Lq, E]
//   backward  dctx = dOut·Wo, dWo += dOutᵀ·ctx, dbo += Σ dOut
//             dQ, dK, dV = AttentionBackward(dctx)
//             (rope: dQ, dK ← inverse rotation of dQ, dK)
//             (qk_norm: dQ, dK ← the RMSNorm backward, dw += its weight grads)
//             dquery = dQ·Wq, dWq += dQᵀ·query, dbq += Σ dQ (same for K, V)
#include <cmath>
#include <cstring>

#include "train/ops.h"

namespace attnlab {
namespace train {

namespace {
int64_t KvHeads(const MhaShape& s) { return s.kv_heads > 0 ? s.kv_heads : s.heads; }
int64_t HeadDim(const MhaShape& s) { return s.head_dim > 0 ? s.head_dim : s.e / s.heads; }
int64_t QWidth(const MhaShape& s) { return s.heads * HeadDim(s); }
int64_t KvWidth(const MhaShape& s) { return KvHeads(s) * HeadDim(s); }

kernels::AttentionView HeadView(const MhaShape& s,
                                const kernels::AttentionView& mask_view,
                                const MhaActivations& act, float* ctx) {
  const int64_t e = QWidth(s), d = HeadDim(s), ekv = KvWidth(s);
  kernels::AttentionView v = mask_view;  // mask fields
  v.batch = s.batch;
  v.heads = s.heads;
  v.lq = s.lq;
  v.lk = s.lk;
  v.d = v.dv = d;
  v.q = act.q.data();
  v.q_sb = s.lq * e, v.q_sh = d, v.q_sl = e;
  v.kv_heads = KvHeads(s);
  v.k = act.k.data();
  v.k_sb = s.lk * ekv, v.k_sh = d, v.k_sl = ekv;
  v.v = act.v.data();
  v.v_sb = s.lk * ekv, v.v_sh = d, v.v_sl = ekv;
  v.out = ctx;
  v.o_sb = s.lq * e, v.o_sh = d, v.o_sl = e;
  v.scale = s.scale > 0.0f ? s.scale : 1.0f / std::sqrt(static_cast<float>(d));
  v.softcap = s.softcap;
  v.weights = nullptr;
  v.average_weights = false;
  return v;
}

// Rotates the `heads` heads of x [B, len, heads·D] by position (pos0 + row;
// inverse: the backward).
void RotateHeads(const MhaShape& s, float* x, int64_t len, int64_t heads, bool inverse) {
  const int64_t d = HeadDim(s);
  const int64_t half = (s.rope->rotary_dim > 0 ? s.rope->rotary_dim : d) / 2;
  internal::RotateSpec r;
  r.batch = 1;  // per-token tables are read at token l of each batch row
  r.len = len;
  r.heads = heads;
  r.sl = heads * d;
  r.sh = d;
  r.rotary_dim = s.rope->rotary_dim > 0 ? s.rope->rotary_dim : d;
  r.interleaved = s.rope->interleaved;
  r.cos = s.rope->cos + s.pos0 * half;
  r.sin = (inverse ? s.rope->neg_sin : s.rope->sin) + s.pos0 * half;
  for (int64_t b = 0; b < s.batch; ++b) {
    r.x = x + b * len * heads * d;
    internal::RotateRows(r);
  }
}

void ZeroDisabledHeads(const MhaShape& s, const uint8_t* head_enabled,
                       float* x) {
  if (head_enabled == nullptr) return;
  const int64_t d = HeadDim(s), qw = QWidth(s);
  for (int64_t h = 0; h < s.heads; ++h) {
    if (head_enabled[h]) continue;
    for (int64_t r = 0; r < s.batch * s.lq; ++r) {
      std::memset(x + r * qw + h * d, 0, static_cast<size_t>(d) * sizeof(float));
    }
  }
}
}  // namespace

bool MhaForward(const MhaShape& s, const MhaParams& p, const float* query,
                const float* key, const float* value,
                const kernels::AttentionView& mask_view,
                const uint8_t* head_enabled, float* output, float* weights,
                MhaActivations* act, Workspace* ws) {
  const int64_t e = s.e, qw = QWidth(s), ekv = KvWidth(s), d = HeadDim(s);
  const bool cached = s.k_cache != nullptr && !s.kv_ready;
  // The queried rows: the last q_last of the new ones (sq: their shape).
  MhaShape sq = s;
  if (cached && s.batch == 1 && s.q_last > 0 && s.q_last < s.lq) {
    sq.lq = s.q_last;
    sq.pos0 = s.pos0 + (s.lq - s.q_last);
  }
  const float* q_in = query + (s.lq - sq.lq) * s.e;
  // With a cache only the new rows' K and V are projected.
  const int64_t rq = s.batch * sq.lq, rk = s.kv_ready ? 0 : cached ? s.batch * s.lq : s.batch * s.lk;
  if (!act->q.Reserve(rq * qw) || !act->k.Reserve(rk * ekv) ||
      !act->v.Reserve(rk * ekv) || !act->ctx.Reserve(rq * qw)) {
    return false;
  }
  const bool qk_norm = s.q_norm != nullptr;
  if (qk_norm && (!act->q_pre.Reserve(rq * qw) || !act->k_pre.Reserve(rk * ekv))) return false;
  using W = WeightId;
  auto w = [&](W id) { return p.w[static_cast<int>(id)]; };
  // A projection through the packed weight when there is one.
  auto proj = [&](int64_t rows, int64_t in, int64_t out, const float* x, W wid, W bid, float* y) {
    const kernels::PackedB* pw = s.packed ? s.packed[static_cast<int>(wid)] : nullptr;
    if (pw != nullptr) {
      LinearForwardPacked(rows, in, out, x, *pw, w(bid), y);
      return true;
    }
    return LinearForward(rows, in, out, x, w(wid), w(bid), y, ws);
  };
  float* q_out = qk_norm ? act->q_pre.data() : act->q.data();
  float* k_out = qk_norm ? act->k_pre.data() : act->k.data();
  if (!proj(rq, e, qw, q_in, W::kWq, W::kBq, q_out) ||
      (rk > 0 && (!proj(rk, s.kdim, ekv, key, W::kWk, W::kBk, k_out) ||
                  !proj(rk, s.vdim, ekv, value, W::kWv, W::kBv, act->v.data())))) {
    return false;
  }
  if (qk_norm) {  // per head: rows of D
    RmsNormForward(rq * s.heads, d, q_out, s.q_norm, s.norm_eps, act->q.data());
    RmsNormForward(rk * KvHeads(s), d, k_out, s.k_norm, s.norm_eps, act->k.data());
  }
  if (s.rope != nullptr) {
    RotateHeads(sq, act->q.data(), sq.lq, s.heads, false);
    RotateHeads(s, act->k.data(), cached ? s.lq : s.lk, KvHeads(s), false);
  }
  kernels::AttentionView v = HeadView(sq, mask_view, *act, act->ctx.data());
  if (cached) {
    const size_t bytes = static_cast<size_t>(rk * ekv) * sizeof(float);
    std::memcpy(s.k_cache + s.pos0 * ekv, act->k.data(), bytes);
    std::memcpy(s.v_cache + s.pos0 * ekv, act->v.data(), bytes);
    v.k = s.k_cache;
    v.v = s.v_cache;
  }
  if (s.kv_ready) {  // the memory's K and V, projected once
    v.k = s.k_cache;
    v.v = s.v_cache;
  }
  if (s.score_bias != nullptr) {  // [H, Lq, Lk], the queried rows' part
    v.mask_kind = MaskKind::kAdditive;
    v.mask = s.score_bias + (s.lq - sq.lq) * s.lk;
    v.m_sb = 0;
    v.m_sh = s.lq * s.lk;
    v.m_sq = s.lk;
    v.m_sk = 1;
  }
  v.weights = weights;
  if (!ws->tile.Reserve(kernels::AttentionScratchFloats(v))) return false;
  kernels::AttentionCore(v, ws->tile.data());
  ZeroDisabledHeads(sq, head_enabled, act->ctx.data());
  if (s.z_edit != nullptr) ApplyZEdit(*s.z_edit, sq, act->ctx.data());
  return proj(rq, qw, e, act->ctx.data(), W::kWo, W::kBo, output);
}

bool MhaProjectKv(const MhaShape& s, const MhaParams& p, int64_t rows, const float* key,
                  const float* value, float* k_out, float* v_out, Workspace* ws) {
  const int64_t ekv = KvWidth(s);
  using W = WeightId;
  auto proj = [&](int64_t in, const float* x, W wid, W bid, float* y) {
    const kernels::PackedB* pw = s.packed ? s.packed[static_cast<int>(wid)] : nullptr;
    if (pw != nullptr) {
      LinearForwardPacked(rows, in, ekv, x, *pw, p.w[static_cast<int>(bid)], y);
      return true;
    }
    return LinearForward(rows, in, ekv, x, p.w[static_cast<int>(wid)], p.w[static_cast<int>(bid)], y, ws);
  };
  return proj(s.kdim, key, W::kWk, W::kBk, k_out) && proj(s.vdim, value, W::kWv, W::kBv, v_out);
}

bool MhaBackward(const MhaShape& s, const MhaParams& p, const float* query,
                 const float* key, const float* value,
                 const kernels::AttentionView& mask_view,
                 const uint8_t* head_enabled, const MhaActivations& act,
                 const float* d_output, float* d_query, float* d_key,
                 float* d_value, const MhaGrads& g, Workspace* ws) {
  const int64_t e = s.e, qw = QWidth(s), ekv = KvWidth(s), d = HeadDim(s);
  const int64_t rq = s.batch * s.lq, rk = s.batch * s.lk;
  if (!ws->g_ctx.Reserve(rq * qw) || !ws->g_q.Reserve(rq * qw) ||
      !ws->g_k.Reserve(rk * ekv) || !ws->g_v.Reserve(rk * ekv)) {
    return false;
  }
  const bool qk_norm = s.q_norm != nullptr;
  if (qk_norm && (!ws->g_qn.Reserve(rq * qw) || !ws->g_kn.Reserve(rk * ekv))) return false;
  using W = WeightId;
  auto w = [&](W id) { return p.w[static_cast<int>(id)]; };
  auto gw = [&](W id) { return g.w[static_cast<int>(id)]; };
  float* dctx = ws->g_ctx.data();
  if (!LinearBackward(rq, qw, e, act.ctx.data(), w(W::kWo), d_output, dctx,
                      false, gw(W::kWo), gw(W::kBo), ws)) {
    return false;
  }
  ZeroDisabledHeads(s, head_enabled, dctx);
  const kernels::AttentionView v = HeadView(s, mask_view, act, nullptr);
  if (!AttentionBackward(v, dctx, ws->g_q.data(), ws->g_k.data(), ws->g_v.data(), ws)) {
    return false;
  }
  if (s.rope != nullptr) {
    RotateHeads(s, ws->g_q.data(), s.lq, s.heads, true);
    RotateHeads(s, ws->g_k.data(), s.lk, KvHeads(s), true);
  }
  float* gq = ws->g_q.data();
  float* gk = ws->g_k.data();
  if (qk_norm) {  // through the per-head RMSNorms, to q and k before them
    RmsNormBackward(rq * s.heads, d, act.q_pre.data(), s.q_norm, s.norm_eps, gq, ws->g_qn.data(), s.dq_norm);
    RmsNormBackward(rk * KvHeads(s), d, act.k_pre.data(), s.k_norm, s.norm_eps, gk, ws->g_kn.data(), s.dk_norm);
    gq = ws->g_qn.data();
    gk = ws->g_kn.data();
  }
  if (!LinearBackward(rq, e, qw, query, w(W::kWq), gq, d_query,
                      false, gw(W::kWq), gw(W::kBq), ws)) {
    return false;
  }
  const bool k_acc = d_key == d_query;
  if (!LinearBackward(rk, s.kdim, ekv, key, w(W::kWk), gk, d_key,
                      k_acc, gw(W::kWk), gw(W::kBk), ws)) {
    return false;
  }
  const bool v_acc = d_value == d_query || d_value == d_key;
  return LinearBackward(rk, s.vdim, ekv, value, w(W::kWv), ws->g_v.data(),
                        d_value, v_acc, gw(W::kWv), gw(W::kBv), ws);
}

}  // namespace train
}  // namespace attnlab

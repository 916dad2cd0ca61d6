// Scaled dot-product attention backward, flash style: for each head, query
// rows are taken a tile at a time; the tile's weights P [T, Lk] are
// recomputed with the forward kernel itself (kernels::AttentionCore on a
// one-head, T-row view of the same problem, so masks, ALiBi, softcap and
// scale have one source), then
//   dP = dO·Vᵀ                      [T, Lk]
//   δ_i = Σ_j P_ij·dP_ij             (= dO_i·O_i)
//   dS = P ⊙ (dP − δ)·scale·cap'     (0 where the score is a mask constant)
//   dQ_tile = dS·K                   [T, D]
//   dK += dSᵀ·Q_tile                 [Lk, D]
//   dV += Pᵀ·dO_tile                 [Lk, Dv]
// Softcap: s = c·tanh(x/c) with x = q·k·scale, so cap' = 1 − (s/c)².
// Mask constants: scores the mask replaces by the fill (causal, padding,
// window, keep zeros; −∞ entries) carry no gradient. Where no row can be
// wholly masked and there is no softcap (no tensor mask, window, padding,
// nor a causal row before the first key), a replaced score has P = 0 exactly
// and the plain formula is already right. Otherwise the tile's capped and
// masked scores come from kernels::AttentionTraceScores (the core's own
// row rules): a masked score equal to the fill (or −∞) is a constant.
// GQA: query head h reads kv head h·Hkv/H; dK and dV of a kv head sum the
// contributions of its group's query heads. ALiBi adds a constant: its
// gradient passes through unchanged. Fully masked rows give zero dq/dk (and
// dv from their uniform or zero weights), never NaN.
// Scratch is O(T·Lk + Lk·(D + Dv)) floats: no [Lq, Lk] buffer per head.
//
// Shapes (view strides): q [B, H, Lq, D], k [B, Hkv, Lk, D],
// v [B, Hkv, Lk, Dv], out/dO [B, H, Lq, Dv]; dq/dk/dv use the strides of
// q/k/v.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/simd.h"
#include "train/ops.h"

namespace attnlab {
namespace train {

namespace {
constexpr int64_t kTileRows = 64;

inline int64_t Round16(int64_t n) { return (n + 15) / 16 * 16; }

// One row of the softmax backward: ds[j] = p[j]·(ds[j] − Σ_k p[k]·ds[k])·scale
// (ds holds dP on entry). Scalar set: δ summed in double.
void SoftmaxBackwardRowScalar(const float* p, float* ds, int64_t n, float scale) {
  double delta = 0.0;
  for (int64_t j = 0; j < n; ++j) delta += static_cast<double>(p[j]) * ds[j];
  const float dl = static_cast<float>(delta);
  for (int64_t j = 0; j < n; ++j) ds[j] = p[j] * (ds[j] - dl) * scale;
}

#if ATTNLAB_SIMD
// SIMD set: δ summed in kWidth float lanes, then across them.
void SoftmaxBackwardRowSimd(const float* p, float* ds, int64_t n, float scale) {
  using kernels::simd::Batch;
  constexpr int64_t w = kernels::simd::kWidth;
  Batch acc(0.0f);
  int64_t j = 0;
  for (; j + w <= n; j += w) {
    acc = xsimd::fma(Batch::load_unaligned(p + j), Batch::load_unaligned(ds + j), acc);
  }
  float delta = xsimd::hadd(acc);
  for (; j < n; ++j) delta += p[j] * ds[j];
  const Batch vd(delta), vs(scale);
  for (j = 0; j + w <= n; j += w) {
    const Batch r = Batch::load_unaligned(p + j) * (Batch::load_unaligned(ds + j) - vd) * vs;
    r.store_unaligned(ds + j);
  }
  for (; j < n; ++j) ds[j] = p[j] * (ds[j] - delta) * scale;
}
#endif

void SoftmaxBackwardRow(const float* p, float* ds, int64_t n, float scale) {
#if ATTNLAB_SIMD
  if (!kernels::UsingScalarKernels()) {
    SoftmaxBackwardRowSimd(p, ds, n, scale);
    return;
  }
#endif
  SoftmaxBackwardRowScalar(p, ds, n, scale);
}

}  // namespace

bool AttentionBackward(const kernels::AttentionView& v, const float* dout,
                       float* dq, float* dk, float* dv, Workspace* ws) {
  const int64_t lq = v.lq, lk = v.lk, d = v.d, dvw = v.dv;
  const int64_t kv_heads = v.kv_heads > 0 ? v.kv_heads : v.heads;
  const int64_t tile = std::min<int64_t>(lq, kTileRows);
  const bool finite_fill = std::isfinite(v.fill);
  const float cap = v.softcap;

  // The one-head, T-row view handed to the forward kernel: its offsets are
  // top-left ones, set per batch and tile below.
  kernels::AttentionView sub = v;
  sub.batch = 1;
  sub.heads = 1;
  sub.kv_heads = 0;
  sub.lq = tile;
  sub.o_sb = sub.o_sh = 0;
  sub.o_sl = dvw;
  sub.m_sb = sub.m_sh = 0;
  sub.causal_align = sub.window_align = Align::kTopLeft;
  sub.average_weights = false;
  static float weights_placeholder = 0.0f;  // size the dense path that writes P
  sub.weights = &weights_placeholder;
  const int64_t core_floats = Round16(kernels::AttentionScratchFloats(sub));

  // Tile scratch: P, dS, a transposed copy, O, masked and capped scores, two
  // packed tiles, core scratch.
  const int64_t p_floats = Round16(tile * lk);
  const int64_t o_floats = Round16(tile * dvw);
  const int64_t pack_q = Round16(kernels::PackedFloats(tile, d));
  const int64_t pack_do = Round16(kernels::PackedFloats(tile, dvw));
  if (!ws->tile.Reserve(5 * p_floats + o_floats + pack_q + pack_do + core_floats)) {
    return false;
  }
  if (!ws->pack.Reserve(kernels::PackedFloats(lk, d)) ||
      !ws->pack2.Reserve(kernels::PackedFloats(dvw, lk))) {
    return false;
  }
  float* P = ws->tile.data();
  float* dS = P + p_floats;
  float* T = dS + p_floats;
  float* M = T + p_floats;
  float* C = M + p_floats;
  float* O = C + p_floats;
  float* packed_q_tile = O + o_floats;
  float* packed_do_tile = packed_q_tile + pack_q;
  float* core_scratch = packed_do_tile + pack_do;

  // dK and dV of every kv head accumulate over the group's query heads.
  for (int64_t b = 0; b < v.batch; ++b) {
    for (int64_t hk = 0; hk < kv_heads; ++hk) {
      float* gk = dk + b * v.k_sb + hk * v.k_sh;
      float* gv = dv + b * v.v_sb + hk * v.v_sh;
      for (int64_t j = 0; j < lk; ++j) {
        std::memset(gk + j * v.k_sl, 0, static_cast<size_t>(d) * sizeof(float));
        std::memset(gv + j * v.v_sl, 0, static_cast<size_t>(dvw) * sizeof(float));
      }
    }
  }

  for (int64_t b = 0; b < v.batch; ++b) {
    // Top-left offsets of this batch (kernels.h: offset = len_b − Lq for
    // bottom-right alignment).
    const int64_t length =
        v.lengths != nullptr ? std::clamp<int64_t>(v.lengths[b], 0, lk) : lk;
    const int64_t causal_off =
        v.causal_align == Align::kBottomRight ? length - lq : v.causal_offset;
    const int64_t window_off =
        v.window_align == Align::kBottomRight ? length - lq : v.window_offset;
    // No row can be wholly masked and no softcap: the plain formula holds.
    const bool plain = cap == 0.0f && v.mask == nullptr && !v.window &&
                       v.lengths == nullptr && (!v.causal || causal_off >= 0);
    for (int64_t h = 0; h < v.heads; ++h) {
      const int64_t hk = h * kv_heads / v.heads;
      const float* q = v.q + b * v.q_sb + h * v.q_sh;
      const float* k = v.k + b * v.k_sb + hk * v.k_sh;
      const float* val = v.v + b * v.v_sb + hk * v.v_sh;
      const float* go = dout + b * v.o_sb + h * v.o_sh;
      float* gq = dq + b * v.q_sb + h * v.q_sh;
      float* gk = dk + b * v.k_sb + hk * v.k_sh;
      float* gv = dv + b * v.v_sb + hk * v.v_sh;
      const float* mask =
          v.mask != nullptr ? v.mask + b * v.m_sb + h * v.m_sh : nullptr;
      float slope = 0.0f;
      if (v.alibi) {
        slope = v.alibi_slopes != nullptr ? v.alibi_slopes[h]
                                          : kernels::AlibiSlope(h, v.heads);
      }
      sub.alibi_slopes = v.alibi ? &slope : nullptr;

      // K as B [Lk, D] for dQ = dS·K; Vᵀ as B [Dv, Lk] for dP = dO·Vᵀ.
      const kernels::PackedB pk = kernels::PackB(lk, d, k, v.k_sl, 1, ws->pack.data());
      const kernels::PackedB pvt = kernels::PackB(dvw, lk, val, 1, v.v_sl, ws->pack2.data());

      for (int64_t i0 = 0; i0 < lq; i0 += tile) {
        const int64_t t = std::min(tile, lq - i0);
        // Recompute the tile's weights with the forward kernel.
        sub.lq = t;
        sub.q = q + i0 * v.q_sl;
        sub.k = k;
        sub.v = val;
        sub.out = O;
        sub.weights = P;
        sub.causal_offset = causal_off + i0;
        sub.window_offset = window_off + i0;
        sub.lengths = v.lengths != nullptr ? v.lengths + b : nullptr;
        sub.mask = mask != nullptr ? mask + i0 * v.m_sq : nullptr;
        kernels::AttentionCore(sub, core_scratch);
        if (!plain) kernels::AttentionTraceScores(sub, nullptr, cap > 0.0f ? C : nullptr, M);

        // dS = dO·Vᵀ, then P ⊙ (dS − δ)·scale·cap' with mask constants zeroed.
        kernels::Gemm(t, lk, dvw, go + i0 * v.o_sl, v.o_sl, pvt, nullptr, dS, lk);
        for (int64_t r = 0; r < t; ++r) {
          float* ds = dS + r * lk;
          SoftmaxBackwardRow(P + r * lk, ds, lk, v.scale);
          if (plain) continue;
          const float* m = M + r * lk;
          const float inv_cap = cap > 0.0f ? 1.0f / cap : 0.0f;
          for (int64_t j = 0; j < lk; ++j) {
            const bool constant = m[j] == -std::numeric_limits<float>::infinity() ||
                                  (finite_fill && m[j] == v.fill);
            if (constant) {
              ds[j] = 0.0f;
            } else if (cap > 0.0f) {
              const float th = C[r * lk + j] * inv_cap;
              ds[j] *= 1.0f - th * th;
            }
          }
        }
        // dQ_tile = dS·K.
        kernels::Gemm(t, d, lk, dS, lk, pk, nullptr, gq + i0 * v.q_sl, v.q_sl);
        // dK += dSᵀ·Q_tile.
        for (int64_t r = 0; r < t; ++r) {
          for (int64_t j = 0; j < lk; ++j) T[j * t + r] = dS[r * lk + j];
        }
        const kernels::PackedB pq = kernels::PackB(t, d, q + i0 * v.q_sl, v.q_sl, 1, packed_q_tile);
        GemmAccActive(lk, d, t, T, t, pq, gk, v.k_sl);
        // dV += Pᵀ·dO_tile.
        for (int64_t r = 0; r < t; ++r) {
          for (int64_t j = 0; j < lk; ++j) T[j * t + r] = P[r * lk + j];
        }
        const kernels::PackedB pdo = kernels::PackB(t, dvw, go + i0 * v.o_sl, v.o_sl, 1, packed_do_tile);
        GemmAccActive(lk, dvw, t, T, t, pdo, gv, v.v_sl);
      }
    }
  }
  return true;
}

}  // namespace train
}  // namespace attnlab

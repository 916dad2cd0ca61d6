// Scaled dot-product attention backward, flash style: for each head, query
// rows are taken a tile at a time; the tile's weights P [T, Lk] are
// recomputed with the forward kernel itself (kernels::AttentionCore on a
// one-head, T-row view of the same problem, so masks and scale have one
// source), then
//   dP = dO·Vᵀ                      [T, Lk]
//   δ_i = Σ_j P_ij·dP_ij             (= dO_i·O_i)
//   dS = P ⊙ (dP − δ)·scale          (0 where the score is a mask fill)
//   dQ_tile = dS·K                   [T, D]
//   dK += dSᵀ·Q_tile                 [Lk, D]
//   dV += Pᵀ·dO_tile                 [Lk, Dv]
// Scratch is O(T·Lk + Lk·(D + Dv)) floats: no [Lq, Lk] buffer per head.
//
// Shapes (view strides): q [B, H, Lq, D], k [B, H, Lk, D], v [B, H, Lk, Dv],
// out/dO [B, H, Lq, Dv]; dq/dk/dv use the strides of q/k/v.
#include <algorithm>
#include <cstring>

#include "train/ops.h"

namespace attnlab {
namespace train {

namespace {
constexpr int64_t kTileRows = 64;

inline int64_t Round16(int64_t n) { return (n + 15) / 16 * 16; }

void GemmAccActive(int64_t m, int64_t n, int64_t k, const float* a,
                   int64_t lda, const kernels::PackedB& b, float* c,
                   int64_t ldc) {
#if ATTNLAB_SIMD
  if (!kernels::UsingScalarKernels()) {
    kernels::simd::GemmAcc(m, n, k, a, lda, b, c, ldc);
    return;
  }
#endif
  kernels::scalar::GemmAcc(m, n, k, a, lda, b, c, ldc);
}
}  // namespace

bool AttentionBackward(const kernels::AttentionView& v, const float* dout,
                       float* dq, float* dk, float* dv, Workspace* ws) {
  const int64_t lq = v.lq, lk = v.lk, d = v.d, dvw = v.dv;
  const int64_t tile = std::min<int64_t>(lq, kTileRows);

  // The one-head, T-row view handed to the forward kernel.
  kernels::AttentionView sub = v;
  sub.batch = 1;
  sub.heads = 1;
  sub.lq = tile;
  sub.o_sb = sub.o_sh = 0;
  sub.o_sl = dvw;
  sub.m_sb = sub.m_sh = 0;
  sub.average_weights = false;
  static float weights_placeholder = 0.0f;  // size the dense path that writes P
  sub.weights = &weights_placeholder;
  const int64_t core_floats = Round16(kernels::AttentionScratchFloats(sub));

  // Tile scratch: P, dS, a transposed copy, O, two packed tiles, core scratch.
  const int64_t p_floats = Round16(tile * lk);
  const int64_t o_floats = Round16(tile * dvw);
  const int64_t pack_q = Round16(kernels::PackedFloats(tile, d));
  const int64_t pack_do = Round16(kernels::PackedFloats(tile, dvw));
  if (!ws->tile.Reserve(3 * p_floats + o_floats + pack_q + pack_do + core_floats)) {
    return false;
  }
  if (!ws->pack.Reserve(kernels::PackedFloats(lk, d)) ||
      !ws->pack2.Reserve(kernels::PackedFloats(dvw, lk))) {
    return false;
  }
  float* P = ws->tile.data();
  float* dS = P + p_floats;
  float* T = dS + p_floats;
  float* O = T + p_floats;
  float* packed_q_tile = O + o_floats;
  float* packed_do_tile = packed_q_tile + pack_q;
  float* core_scratch = packed_do_tile + pack_do;

  for (int64_t b = 0; b < v.batch; ++b) {
    const int64_t length =
        v.lengths != nullptr ? std::min<int64_t>(v.lengths[b], lk) : lk;
    for (int64_t h = 0; h < v.heads; ++h) {
      const float* q = v.q + b * v.q_sb + h * v.q_sh;
      const float* k = v.k + b * v.k_sb + h * v.k_sh;
      const float* val = v.v + b * v.v_sb + h * v.v_sh;
      const float* go = dout + b * v.o_sb + h * v.o_sh;
      float* gq = dq + b * v.q_sb + h * v.q_sh;
      float* gk = dk + b * v.k_sb + h * v.k_sh;
      float* gv = dv + b * v.v_sb + h * v.v_sh;
      const float* mask =
          v.mask != nullptr ? v.mask + b * v.m_sb + h * v.m_sh : nullptr;

      for (int64_t j = 0; j < lk; ++j) {
        std::memset(gk + j * v.k_sl, 0, static_cast<size_t>(d) * sizeof(float));
        std::memset(gv + j * v.v_sl, 0, static_cast<size_t>(dvw) * sizeof(float));
      }
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
        sub.causal_offset = v.causal_offset + i0;
        sub.lengths = v.lengths != nullptr ? v.lengths + b : nullptr;
        sub.mask = mask != nullptr ? mask + i0 * v.m_sq : nullptr;
        kernels::AttentionCore(sub, core_scratch);

        // dS = dO·Vᵀ, then P ⊙ (dS − δ)·scale with fills zeroed.
        kernels::Gemm(t, lk, dvw, go + i0 * v.o_sl, v.o_sl, pvt, nullptr, dS, lk);
        for (int64_t r = 0; r < t; ++r) {
          const int64_t i = i0 + r;
          float* ds = dS + r * lk;
          const float* p = P + r * lk;
          double delta = 0.0;
          for (int64_t j = 0; j < lk; ++j) delta += static_cast<double>(p[j]) * ds[j];
          const float dl = static_cast<float>(delta);
          int64_t valid = length;
          if (v.causal) {
            valid = std::max<int64_t>(0, std::min<int64_t>(valid, i + 1 + v.causal_offset));
          }
          for (int64_t j = 0; j < valid; ++j) ds[j] = p[j] * (ds[j] - dl) * v.scale;
          for (int64_t j = valid; j < lk; ++j) ds[j] = 0.0f;
          if (mask != nullptr && v.mask_kind == MaskKind::kKeep) {
            const float* mr = mask + i * v.m_sq;
            for (int64_t j = 0; j < valid; ++j) {
              if (mr[j * v.m_sk] == 0.0f) ds[j] = 0.0f;
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

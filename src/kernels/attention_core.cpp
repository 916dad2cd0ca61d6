// The fused attention core, per head (b, h):
//   pack Kᵀ_h [D, Lk] and V_h [Lk, Dv] into GEMM panels (read through strides:
//   heads are split by index arithmetic, never copied to [B, H, L, D]);
//   then for each block of query rows:
//     S = Q_blk·Kᵀ_h            (only the columns some row of the block can see)
//     P = softmax(S·scale + mask) row by row, in place
//     O_blk = P·V_h             (only up to the last column with nonzero weight)
// Memory is O(block·Lk + (D + Dv)·Lk): the [Lq, Lk] matrix is never stored
// unless the caller asks for the weights.
//
// Causal, padding and window masks leave each row a range [lo, hi) of
// visible keys; the others are "implicitly filled" with `fill` (-1e9 or
// -inf). Those columns are not computed: after the softmax their weight is
// exp(fill - max) / sum, which is exactly 0 unless every key of the row is
// masked with a finite fill (then the row is uniform and the skipped columns
// are added back). Key tiles outside every row's range are skipped, so a
// sliding window costs O(Lq·window), not O(Lq·Lk).
// GQA: query head h reads kv head h·Hkv/H; K and V are packed once per kv
// head and batch, and shared by the group's query heads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/simd.h"
#include "thread_pool.h"

namespace attnlab {
namespace kernels {
namespace {

constexpr int64_t kAlignFloats = 16;  // 64 bytes
int64_t RoundUp(int64_t n) {
  return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

// Query rows per block: keeps the S block near 128 KiB. Under a causal mask
// or a window a block computes the key columns up to its last row's frontier,
// so its first rows spend work on masked columns: 16-row blocks waste a
// quarter of what 64-row ones do (native, 8 heads, D = 64, causal: L = 128
// 0.78 vs 0.96 ms, L = 384 6.6 vs 7.2 ms).
int64_t BlockRows(const AttentionView& v) {
  int64_t rows = 32768 / std::max<int64_t>(v.lk, 1);
  rows = rows / 4 * 4;
  return std::clamp<int64_t>(rows, 4, (v.causal || v.window) ? 16 : 64);
}

// Mask data of one query row, for scores of keys j_first + j.
struct RowMask {
  MaskKind kind = MaskKind::kNone;
  const float* data = nullptr;  // at (b, h, i, j_first)
  int64_t stride_k = 0;
  float fill = kMaskFill;
  float softcap = 0.0f;  // > 0: c·tanh(x/c) after scaling
  float slope = 0.0f;    // ALiBi: x -= slope·|pos - j|
  float pos = 0.0f;      // p_i - j_first
};

// Score pipeline of one element x (already scaled), key j (relative).
inline float MaskOne(float x, const RowMask& m, int64_t j) {
  switch (m.kind) {
    case MaskKind::kKeep:
      x = m.data[j * m.stride_k] == 0.0f ? m.fill : x;
      break;
    case MaskKind::kBlock: {
      const float mv = m.data[j * m.stride_k];
      x = mv == 0.0f ? x : x + mv * m.fill;
      break;
    }
    case MaskKind::kAdditive:
      x += m.data[j * m.stride_k];
      break;
    default:
      break;
  }
  if (m.slope != 0.0f) x -= m.slope * std::fabs(m.pos - static_cast<float>(j));
  return x;
}

inline float CapOne(float x, const RowMask& m) {
  return m.softcap > 0.0f ? m.softcap * std::tanh(x / m.softcap) : x;
}

// Shared tail of the row softmax: the n visible scores s[0, n) and `implicit`
// filled columns. Returns false when the max is finite. Otherwise the row is
// decided here: NaN stays NaN; no finite score gives zeros with an infinite
// fill, uniform weights 1/(n + implicit) with a finite one.
inline bool DecideAllNegInf(float* s, int64_t n, int64_t implicit,
                            float max_value, float fill, float* tail) {
  if (max_value != -std::numeric_limits<float>::infinity()) return false;
  // The max ignores NaN: an all-NaN row lands here and must stay NaN.
  for (int64_t j = 0; j < n; ++j) {
    if (std::isnan(s[j])) {
      std::fill(s, s + n, std::numeric_limits<float>::quiet_NaN());
      *tail = implicit > 0 ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
      return true;
    }
  }
  const float u = std::isinf(fill) ? 0.0f : 1.0f / static_cast<float>(n + implicit);
  for (int64_t j = 0; j < n; ++j) s[j] = u;
  *tail = u;
  return true;
}

// exp(fill - max) for the implicit (masked) columns: 0 unless the row's max is
// itself about the fill (every key masked), without a libm call per row.
inline float ExpOfFill(float fill, float max_value) {
  const float x = fill - max_value;
  return x < -104.0f ? 0.0f : std::exp(x);
}

// ---------------------------------------------------------------------------
// Row softmax, scalar: s[0, n) holds raw scores of visible keys; on return it
// holds the probabilities, and the probability of each of the `implicit`
// filled columns is returned.
// s[j] = mask(cap(s[j]·scale)) for j < n; returns the max (-inf if none).
float ScaleMaskMaxScalar(float* s, int64_t n, float scale, const RowMask& m) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) {
    const float x = MaskOne(CapOne(s[j] * scale, m), m, j);
    s[j] = x;
    mx = std::max(mx, x);
  }
  return mx;
}

float SoftmaxRowScalar(float* s, int64_t n, int64_t implicit, float scale,
                       const RowMask& m) {
  float mx = ScaleMaskMaxScalar(s, n, scale, m);
  if (implicit > 0) mx = std::max(mx, m.fill);
  float tail = 0.0f;
  if (DecideAllNegInf(s, n, implicit, mx, m.fill, &tail)) return tail;
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    const float e = std::exp(s[j] - mx);
    s[j] = e;
    sum += e;
  }
  const float tail_e = implicit > 0 ? ExpOfFill(m.fill, mx) : 0.0f;
  sum += tail_e * static_cast<float>(implicit);
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
  return tail_e * inv;
}

#if ATTNLAB_SIMD
using simd::Batch;
using simd::kWidth;

inline float ReduceMax(const Batch& b) {
  alignas(64) float t[kWidth];
  b.store_aligned(t);
  float m = t[0];
  for (int i = 1; i < kWidth; ++i) m = std::max(m, t[i]);
  return m;
}

// exp(x) for the softmax, in plain arithmetic and integer bit operations.
// xsimd's exp converts float→int with _mm_cvtps_epi32, which Emscripten 3.1.6
// lowers to a per-lane scalar loop; this version lowers to f32x4/i32x4 ops
// only. Cephes expf scheme: n = round(x·log2 e) by the 1.5·2^23 magic-number
// add, r = x - n·ln2 in two parts, e^r by a degree-7 polynomial, 2^n built in
// the exponent bits. Max relative error ~2 ulp on [-87.3, 88.7]; inputs below
// -87.3 (masked scores) give exactly 0, as std::exp underflows to.
inline Batch ExpBatch(const Batch& x_in) {
  using IBatch = xsimd::batch<int32_t, simd::Arch>;
  const Batch lo(-87.33654f), hi(88.72283f);
  const Batch x = xsimd::min(xsimd::max(x_in, lo), hi);
  const Batch magic(12582912.0f);  // 1.5 · 2^23
  const Batch k = xsimd::fma(x, Batch(1.44269504088896341f), magic);
  const Batch n = k - magic;
  Batch r = xsimd::fma(n, Batch(-0.693359375f), x);
  r = xsimd::fma(n, Batch(2.12194440e-4f), r);
  Batch p(1.9875691500e-4f);
  p = xsimd::fma(p, r, Batch(1.3981999507e-3f));
  p = xsimd::fma(p, r, Batch(8.3334519073e-3f));
  p = xsimd::fma(p, r, Batch(4.1665795894e-2f));
  p = xsimd::fma(p, r, Batch(1.6666665459e-1f));
  p = xsimd::fma(p, r, Batch(5.0000001201e-1f));
  p = xsimd::fma(p, r * r, r + Batch(1.0f));
  const IBatch bits = (xsimd::bitwise_cast<IBatch>(k) - IBatch(0x4B400000 - 127)) << 23;
  const Batch scale = xsimd::bitwise_cast<Batch>(bits);
  const Batch result = p * scale;
  // Below the clamp: 0 (the masked-score case); NaN stays NaN.
  return xsimd::select(x_in < lo, Batch(0.0f), xsimd::select(x_in != x_in, x_in, result));
}

// tanh(y) = 1 - 2/(e^{2y} + 1) on ExpBatch (saturates to ±1, NaN stays NaN).
inline Batch TanhBatch(const Batch& y) {
  const Batch e = ExpBatch(y + y);
  return Batch(1.0f) - Batch(2.0f) / (e + Batch(1.0f));
}

inline Batch MaskBatch(Batch x, const RowMask& m, int64_t j) {
  if (m.kind != MaskKind::kNone) {
    const Batch mv = m.stride_k == 0 ? Batch(m.data[0])
                                     : Batch::load_unaligned(m.data + j);
    switch (m.kind) {
      case MaskKind::kKeep:
        x = xsimd::select(mv == Batch(0.0f), Batch(m.fill), x);
        break;
      case MaskKind::kBlock:
        x = xsimd::select(mv == Batch(0.0f), x, xsimd::fma(mv, Batch(m.fill), x));
        break;
      default:
        x = x + mv;
        break;
    }
  }
  if (m.slope != 0.0f) {
    alignas(64) float iota[kWidth];
    for (int u = 0; u < kWidth; ++u) iota[u] = static_cast<float>(j + u);
    x = x - Batch(m.slope) * xsimd::abs(Batch(m.pos) - Batch::load_aligned(iota));
  }
  return x;
}

float ScaleMaskMaxSimd(float* s, int64_t n, float scale, const RowMask& m) {
  const Batch vscale(scale);
  Batch vmax(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  const bool cap = m.softcap > 0.0f;
  const Batch vcap(m.softcap), vinv_cap(cap ? 1.0f / m.softcap : 0.0f);
  for (; j + kWidth <= n; j += kWidth) {
    Batch x = Batch::load_unaligned(s + j) * vscale;
    if (cap) x = vcap * TanhBatch(x * vinv_cap);
    x = MaskBatch(x, m, j);
    x.store_unaligned(s + j);
    vmax = xsimd::max(vmax, x);
  }
  float mx = ReduceMax(vmax);
  for (; j < n; ++j) {
    const float x = MaskOne(CapOne(s[j] * scale, m), m, j);
    s[j] = x;
    mx = std::max(mx, x);
  }
  return mx;
}

float SoftmaxRowSimd(float* s, int64_t n, int64_t implicit, float scale,
                     const RowMask& m) {
  float mx = ScaleMaskMaxSimd(s, n, scale, m);
  int64_t j = 0;
  if (implicit > 0) mx = std::max(mx, m.fill);
  float tail = 0.0f;
  if (DecideAllNegInf(s, n, implicit, mx, m.fill, &tail)) return tail;

  const Batch bmax(mx);
  Batch vsum(0.0f);
  j = 0;
  for (; j + kWidth <= n; j += kWidth) {
    const Batch e = ExpBatch(Batch::load_unaligned(s + j) - bmax);
    e.store_unaligned(s + j);
    vsum += e;
  }
  if (j < n) {
    // The last partial vector: unused lanes hold -inf, whose exp is 0.
    alignas(64) float t[kWidth];
    for (int64_t u = 0; u < kWidth; ++u) {
      t[u] = j + u < n ? s[j + u] : -std::numeric_limits<float>::infinity();
    }
    const Batch e = ExpBatch(Batch::load_aligned(t) - bmax);
    e.store_aligned(t);
    vsum += e;
    for (int64_t u = 0; j + u < n; ++u) s[j + u] = t[u];
  }
  float sum = xsimd::hadd(vsum);
  const float tail_e = implicit > 0 ? ExpOfFill(m.fill, mx) : 0.0f;
  sum += tail_e * static_cast<float>(implicit);
  const float inv = 1.0f / sum;
  const Batch vinv(inv);
  j = 0;
  for (; j + kWidth <= n; j += kWidth) {
    (Batch::load_unaligned(s + j) * vinv).store_unaligned(s + j);
  }
  for (; j < n; ++j) s[j] *= inv;
  return tail_e * inv;
}
#endif


// ---------------------------------------------------------------------------
// Online (flash-style) softmax over one key tile of one row. s[0, cols) holds
// raw scores of keys j0..j0+cols; only s[a, e) are visible, the others are
// implicitly masked and skipped (the mask m starts at key j0 + a). Updates
// the running max *m and sum *l, turns s into exp(x - m_new) (0 for skipped
// keys) and returns the factor exp(m_old - m_new) by which the row's
// accumulated output must be rescaled.
template <float (*ScaleMaskMax)(float*, int64_t, float, const RowMask&),
          bool kSimd>
float OnlineTileT(float* s, int64_t a, int64_t e, int64_t cols, float scale,
                  const RowMask& m, float* run_max, float* run_sum) {
  float* sv = s + a;
  const int64_t n = e - a;
  const float mx = n > 0 ? ScaleMaskMax(sv, n, scale, m)
                         : -std::numeric_limits<float>::infinity();
  const float m_new = std::max(*run_max, mx);
  const float alpha = *run_max == -std::numeric_limits<float>::infinity()
                          ? 0.0f : std::exp(*run_max - m_new);
  float sum = 0.0f;
  std::fill(s, s + a, 0.0f);
  std::fill(s + e, s + cols, 0.0f);
  if (m_new == -std::numeric_limits<float>::infinity()) {
    std::fill(sv, sv + n, 0.0f);
  } else {
    int64_t j = 0;
#if ATTNLAB_SIMD
    if constexpr (kSimd) {
      const Batch bmax(m_new);
      Batch vsum(0.0f);
      for (; j + kWidth <= n; j += kWidth) {
        const Batch ev = ExpBatch(Batch::load_unaligned(sv + j) - bmax);
        ev.store_unaligned(sv + j);
        vsum += ev;
      }
      sum = xsimd::hadd(vsum);
    }
#endif
    for (; j < n; ++j) {
      const float ev = std::exp(sv[j] - m_new);
      sv[j] = ev;
      sum += ev;
    }
  }
  *run_sum = *run_sum * alpha + sum;
  *run_max = m_new;
  return alpha;
}

float OnlineTileScalar(float* s, int64_t a, int64_t e, int64_t cols,
                       float scale, const RowMask& m, float* mx, float* l) {
  return OnlineTileT<ScaleMaskMaxScalar, false>(s, a, e, cols, scale, m, mx, l);
}
#if ATTNLAB_SIMD
float OnlineTileSimd(float* s, int64_t a, int64_t e, int64_t cols,
                     float scale, const RowMask& m, float* mx, float* l) {
  return OnlineTileT<ScaleMaskMaxSimd, true>(s, a, e, cols, scale, m, mx, l);
}
#endif

// Row-wise helpers for the few-queries (decode) path:
//   RowScores:  s[j] = q·k_j for j < n (k_j = k + j·k_sl, d floats each);
//   RowContext: out[0, dv) = Σ_{j<n} p[j]·v_j (v_j = v + j·v_sl).
void RowScoresScalar(const float* q, const float* k, int64_t k_sl, int64_t d,
                     int64_t n, float* s) {
  for (int64_t j = 0; j < n; ++j) {
    const float* kj = k + j * k_sl;
    float acc = 0.0f;
    for (int64_t i = 0; i < d; ++i) acc += q[i] * kj[i];
    s[j] = acc;
  }
}
void RowContextScalar(const float* p, int64_t n, const float* v, int64_t v_sl,
                      int64_t dv, float* out) {
  std::fill(out, out + dv, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const float* vj = v + j * v_sl;
    for (int64_t i = 0; i < dv; ++i) out[i] += p[j] * vj[i];
  }
}

#if ATTNLAB_SIMD
// kWidth keys at a time: their kWidth dot products are reduced together by
// one transpose-add (haddp) instead of one horizontal sum each. A last,
// partial group repeats its final key in the unused lanes.
void RowScoresSimd(const float* q, const float* k, int64_t k_sl, int64_t d,
                   int64_t n, float* s) {
  const int64_t dvec = d / kWidth * kWidth;
  for (int64_t j = 0; j < n; j += kWidth) {
    const int64_t lanes = std::min<int64_t>(kWidth, n - j);
    const float* kp[kWidth];
    for (int u = 0; u < kWidth; ++u) kp[u] = k + (j + std::min<int64_t>(u, lanes - 1)) * k_sl;
    Batch acc[kWidth];
    for (int u = 0; u < kWidth; ++u) acc[u] = Batch(0.0f);
    for (int64_t i = 0; i < dvec; i += kWidth) {
      const Batch qv = Batch::load_unaligned(q + i);
      for (int u = 0; u < kWidth; ++u) {
        acc[u] = xsimd::fma(qv, Batch::load_unaligned(kp[u] + i), acc[u]);
      }
    }
    alignas(64) float r[kWidth];
    if constexpr (kWidth <= 8) {
      xsimd::haddp(acc).store_aligned(r);
    } else {
      // xsimd 8.1's AVX-512 haddp does not return the sums in lane order.
      for (int u = 0; u < kWidth; ++u) r[u] = xsimd::hadd(acc[u]);
    }
    for (int64_t u = 0; u < lanes; ++u) {
      float x = r[u];
      for (int64_t i = dvec; i < d; ++i) x += q[i] * kp[u][i];
      s[j + u] = x;
    }
  }
}

// Columns in chunks of four vectors held in registers across all n rows, so
// the output is written once instead of read and written for every key.
void RowContextSimd(const float* p, int64_t n, const float* v, int64_t v_sl,
                    int64_t dv, float* out) {
  constexpr int64_t kChunk = 4 * kWidth;
  int64_t c = 0;
  for (; c + kChunk <= dv; c += kChunk) {
    Batch a0(0.0f), a1(0.0f), a2(0.0f), a3(0.0f);
    const float* vj = v + c;
    for (int64_t j = 0; j < n; ++j, vj += v_sl) {
      const Batch pj(p[j]);
      a0 = xsimd::fma(pj, Batch::load_unaligned(vj), a0);
      a1 = xsimd::fma(pj, Batch::load_unaligned(vj + kWidth), a1);
      a2 = xsimd::fma(pj, Batch::load_unaligned(vj + 2 * kWidth), a2);
      a3 = xsimd::fma(pj, Batch::load_unaligned(vj + 3 * kWidth), a3);
    }
    a0.store_unaligned(out + c);
    a1.store_unaligned(out + c + kWidth);
    a2.store_unaligned(out + c + 2 * kWidth);
    a3.store_unaligned(out + c + 3 * kWidth);
  }
  for (; c + kWidth <= dv; c += kWidth) {
    Batch a(0.0f);
    const float* vj = v + c;
    for (int64_t j = 0; j < n; ++j, vj += v_sl) {
      a = xsimd::fma(Batch(p[j]), Batch::load_unaligned(vj), a);
    }
    a.store_unaligned(out + c);
  }
  if (c < dv) RowContextScalar(p, n, v + c, v_sl, dv - c, out + c);
}
#endif

// ---------------------------------------------------------------------------
// The core, written once over a kernel set.
struct ScalarSet {
  static int64_t PackedFloats(int64_t k, int64_t n) {
    return scalar::PackedFloats(k, n);
  }
  static PackedB PackB(int64_t k, int64_t n, const float* src, int64_t sk,
                       int64_t sn, float* out) {
    return scalar::PackB(k, n, src, sk, sn, out);
  }
  static void Gemm(int64_t m, int64_t n, int64_t k, const float* a,
                   int64_t lda, const PackedB& b, float* c, int64_t ldc) {
    scalar::Gemm(m, n, k, a, lda, b, nullptr, c, ldc);
  }
  static int64_t ColumnAlign() { return 1; }
  static float SoftmaxRow(float* s, int64_t n, int64_t implicit, float scale,
                          const RowMask& m) {
    return SoftmaxRowScalar(s, n, implicit, scale, m);
  }
  static void GemmAcc(int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t lda, const PackedB& b, float* c, int64_t ldc) {
    scalar::GemmAcc(m, n, k, a, lda, b, c, ldc);
  }
  static float OnlineTile(float* s, int64_t a, int64_t e, int64_t cols,
                          float scale, const RowMask& m, float* mx, float* l) {
    return OnlineTileScalar(s, a, e, cols, scale, m, mx, l);
  }
  static void RowScores(const float* q, const float* k, int64_t k_sl,
                        int64_t d, int64_t n, float* s) {
    RowScoresScalar(q, k, k_sl, d, n, s);
  }
  static void RowContext(const float* p, int64_t n, const float* v,
                         int64_t v_sl, int64_t dv, float* out) {
    RowContextScalar(p, n, v, v_sl, dv, out);
  }
};

#if ATTNLAB_SIMD
struct SimdSet {
  static int64_t PackedFloats(int64_t k, int64_t n) {
    return simd::PackedFloats(k, n);
  }
  static PackedB PackB(int64_t k, int64_t n, const float* src, int64_t sk,
                       int64_t sn, float* out) {
    return simd::PackB(k, n, src, sk, sn, out);
  }
  static void Gemm(int64_t m, int64_t n, int64_t k, const float* a,
                   int64_t lda, const PackedB& b, float* c, int64_t ldc) {
    simd::Gemm(m, n, k, a, lda, b, nullptr, c, ldc);
  }
  static int64_t ColumnAlign() { return simd::GemmNr(0); }
  static float SoftmaxRow(float* s, int64_t n, int64_t implicit, float scale,
                          const RowMask& m) {
    return SoftmaxRowSimd(s, n, implicit, scale, m);
  }
  static void GemmAcc(int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t lda, const PackedB& b, float* c, int64_t ldc) {
    simd::GemmAcc(m, n, k, a, lda, b, c, ldc);
  }
  static float OnlineTile(float* s, int64_t a, int64_t e, int64_t cols,
                          float scale, const RowMask& m, float* mx, float* l) {
    return OnlineTileSimd(s, a, e, cols, scale, m, mx, l);
  }
  static void RowScores(const float* q, const float* k, int64_t k_sl,
                        int64_t d, int64_t n, float* s) {
    RowScoresSimd(q, k, k_sl, d, n, s);
  }
  static void RowContext(const float* p, int64_t n, const float* v,
                         int64_t v_sl, int64_t dv, float* out) {
    RowContextSimd(p, n, v, v_sl, dv, out);
  }
};
#endif

// Flash path: used when the weights are not requested and Lk is long. Query
// blocks of kFlashRows rows walk the keys in tiles of kFlashKeys with an
// online softmax, so neither [Lq, Lk] nor [rows, Lk] is ever materialised
// and K/V tiles are reused across the whole query block from cache.
constexpr int64_t kFlashMinLk = 512;
constexpr int64_t kFlashRows = 32;
constexpr int64_t kFlashKeys = 256;  // a multiple of every kernel set's NR

// Below this many query rows per head, the core skips packing K and V.
constexpr int64_t kRowwiseMaxLq = 8;

bool UseRowwise(const AttentionView& v) { return v.lq < kRowwiseMaxLq; }

bool UseFlash(const AttentionView& v) {
  return v.weights == nullptr && v.lk >= kFlashMinLk && !UseRowwise(v);
}

// Offsets (in floats, each 64-byte aligned) of the scratch areas of one call;
// the one description serves both the size query and the core.
struct ScratchLayout {
  int64_t packed_k = 0, packed_v = 0, s_block = 0, tails = 0, ranges = 0;
  int64_t f_tile = 0, f_acc = 0, f_max = 0, f_sum = 0;
  int64_t total = 0;
};

template <class K>
ScratchLayout LayoutFor(const AttentionView& v) {
  ScratchLayout l;
  auto take = [&l](int64_t floats) {
    const int64_t at = l.total;
    l.total += RoundUp(floats);
    return at;
  };
  const bool pack = !UseRowwise(v);
  const int64_t mb = BlockRows(v);
  l.packed_k = take(pack ? K::PackedFloats(v.d, v.lk) : 0);
  l.packed_v = take(pack ? K::PackedFloats(v.lk, v.dv) : 0);
  l.s_block = take(mb * v.lk);
  l.tails = take(mb);
  static_assert(sizeof(int64_t) == 2 * sizeof(float), "scratch layout");
  l.ranges = take(4 * mb);  // int64_t lo[mb], hi[mb]
  if (UseFlash(v)) {
    l.f_tile = take(kFlashRows * kFlashKeys);
    l.f_acc = take(kFlashRows * v.dv);
    l.f_max = take(kFlashRows);
    l.f_sum = take(kFlashRows);
  }
  return l;
}

// A packed matrix's columns [j0, ...) (SIMD panels: j0 % nr == 0; scalar:
// a single panel) and its rows [k0, ...).
inline PackedB ColumnsFrom(const PackedB& b, int64_t j0) {
  return PackedB{b.data + (j0 / b.nr) * b.panel_stride + j0 % b.nr, b.nr,
                 b.panel_stride};
}
inline PackedB RowsFrom(const PackedB& b, int64_t k0) {
  return PackedB{b.data + k0 * b.nr, b.nr, b.panel_stride};
}

// Threads: the work splits into tasks of (batch b, heads [h0, h1), query
// blocks [blk0, blk1) of each head). A query block is the unit the
// single-threaded loop uses (BlockRows rows, kFlashRows on the flash path,
// all rows on the rowwise path), so every block is computed exactly as with
// one thread, whichever thread runs it. Averaged weights sum over the heads
// of a row: such tasks hold all heads, in order. Each worker has its own
// scratch slice (K/V panels are packed again by each task of a head).
struct TaskRange {
  int64_t b = 0, h0 = 0, h1 = 0, blk0 = 0, blk1 = 0;
};

// Calls below this many multiply-adds stay on the calling thread.
constexpr int64_t kMinParallelWork = int64_t{1} << 17;

int AttentionThreads(const AttentionView& v) {
  return internal::ThreadsFor(v.batch * v.heads * v.lq * v.lk * (v.d + v.dv),
                              kMinParallelWork);
}

int64_t QueryBlocks(const AttentionView& v) {
  if (UseRowwise(v)) return 1;
  const int64_t rows = UseFlash(v) ? kFlashRows : BlockRows(v);
  return (v.lq + rows - 1) / rows;
}

struct Partition {
  int64_t heads_per_task = 1, chunks = 1, blocks = 1, units = 1, tasks = 1;
  TaskRange operator()(int64_t t, int64_t heads) const {
    TaskRange r;
    // The last query chunk of every (batch, head group) first: under a causal
    // mask those cost the most, and dynamic scheduling balances best when the
    // costly tasks start first and the cheap ones fill the end.
    const int64_t chunk = chunks - 1 - t / units, group = t % units;
    const int64_t groups = heads / heads_per_task;
    r.b = group / groups;
    r.h0 = group % groups * heads_per_task;
    r.h1 = r.h0 + heads_per_task;
    r.blk0 = blocks * chunk / chunks;
    r.blk1 = blocks * (chunk + 1) / chunks;
    return r;
  }
};

Partition PartitionFor(const AttentionView& v, int threads) {
  Partition p;
  p.blocks = QueryBlocks(v);
  p.heads_per_task = (threads == 1 || v.average_weights) ? v.heads : 1;
  const int64_t units = p.units = v.batch * (v.heads / p.heads_per_task);
  if (threads > 1) {
    // About 8 tasks a thread: the idle tail at the end is at most one task.
    p.chunks = std::clamp<int64_t>((8 * threads + units - 1) / units, 1, p.blocks);
  }
  p.tasks = units * p.chunks;
  return p;
}

// The keys [lo, hi) of query row i in batch b that no mask fills: the padding
// length, the causal frontier and the window (bottom-right alignment counts
// from the batch's visible length). Used by the kernels and by the trace.
struct RowRanges {
  const AttentionView& v;
  int64_t visible, causal_off, window_off;
  RowRanges(const AttentionView& view, int64_t b) : v(view) {
    const int64_t length =
        v.lengths != nullptr ? std::min<int64_t>(v.lengths[b], v.lk) : v.lk;
    visible = std::max<int64_t>(length, 0);
    causal_off = v.causal_align == Align::kBottomRight ? visible - v.lq : v.causal_offset;
    window_off = v.window_align == Align::kBottomRight ? visible - v.lq : v.window_offset;
  }
  void operator()(int64_t i, int64_t* lo_out, int64_t* hi_out) const {
    int64_t lo = 0, hi = visible;
    if (v.causal) hi = std::min(hi, i + causal_off + 1);
    if (v.window) {
      const int64_t p = i + window_off;
      if (v.window_left >= 0) lo = std::max(lo, p - v.window_left);
      if (v.window_right >= 0) hi = std::min(hi, p + v.window_right + 1);
    }
    lo = std::clamp<int64_t>(lo, 0, visible);
    hi = std::clamp<int64_t>(hi, lo, visible);
    *lo_out = lo;
    *hi_out = hi;
  }
};

// out[0, dv) += tail·Σ v_j over the keys j outside [lo, hi): the weight of
// implicitly masked keys in a row whose every key is masked (finite fill).
void AddTailContext(float tail, int64_t lo, int64_t hi, int64_t lk,
                    const float* v, int64_t v_sl, int64_t dv, float* out) {
  for (int64_t j = 0; j < lk; ++j) {
    if (j == lo) j = hi;
    if (j >= lk) break;
    const float* vj = v + j * v_sl;
    for (int64_t c = 0; c < dv; ++c) out[c] += tail * vj[c];
  }
}

template <class K>
void AttentionTask(const AttentionView& v, const TaskRange& task, float* scratch) {
  // [B, H, Lq, Lk] legend: b batch, h head, i query row, j key column.
  const int64_t mb = BlockRows(v);
  const ScratchLayout layout = LayoutFor<K>(v);
  float* packed_k = scratch + layout.packed_k;
  float* packed_v = scratch + layout.packed_v;
  float* s_block = scratch + layout.s_block;
  float* tails = scratch + layout.tails;
  int64_t* row_lo = reinterpret_cast<int64_t*>(scratch + layout.ranges);
  int64_t* row_hi = row_lo + mb;
  const bool flash = UseFlash(v);
  const bool rowwise = UseRowwise(v);
  float* f_tile = scratch + layout.f_tile;
  float* f_acc = scratch + layout.f_acc;
  float* f_max = scratch + layout.f_max;
  float* f_sum = scratch + layout.f_sum;
  const int64_t kv_heads = v.kv_heads > 0 ? v.kv_heads : v.heads;
  const int64_t col_align = K::ColumnAlign();

  const float inv_heads = 1.0f / static_cast<float>(v.heads);

  {
    const int64_t b = task.b;
    const RowRanges range_of(v, b);
    const int64_t visible = range_of.visible;
    int64_t packed_kv_head = -1;
    PackedB kt_full, vp;
    for (int64_t h = task.h0; h < task.h1; ++h) {
      const int64_t hk = h * kv_heads / v.heads;
      const float* q = v.q + b * v.q_sb + h * v.q_sh;
      const float* k = v.k + b * v.k_sb + hk * v.k_sh;
      const float* val = v.v + b * v.v_sb + hk * v.v_sh;
      float* out = v.out + b * v.o_sb + h * v.o_sh;
      const float* mask =
          v.mask != nullptr ? v.mask + b * v.m_sb + h * v.m_sh : nullptr;
      const float slope =
          !v.alibi ? 0.0f
                   : (v.alibi_slopes != nullptr ? v.alibi_slopes[h]
                                                : AlibiSlope(h, v.heads));
      // The mask of row i for scores of keys j_first + j.
      auto row_mask = [&](int64_t i, int64_t j_first) {
        RowMask rm;
        rm.fill = v.fill;
        rm.softcap = v.softcap;
        if (mask != nullptr) {
          rm.kind = v.mask_kind;
          rm.data = mask + i * v.m_sq + j_first * v.m_sk;
          rm.stride_k = v.m_sk;
        }
        if (slope != 0.0f) {
          rm.slope = slope;
          rm.pos = static_cast<float>(i + range_of.causal_off - j_first);
        }
        return rm;
      };

      // Weights row i: probabilities p[0, hi - lo) of keys [lo, hi), then
      // `tail` for the implicitly masked keys.
      auto write_weights = [&](int64_t i, const float* p, int64_t lo,
                               int64_t hi, float tail) {
        if (v.weights == nullptr) return;
        if (v.average_weights) {
          float* w = v.weights + (b * v.lq + i) * v.lk;
          for (int64_t j = lo; j < hi; ++j) w[j] += p[j - lo] * inv_heads;
          const float t = tail * inv_heads;
          if (t != 0.0f) {
            for (int64_t j = 0; j < lo; ++j) w[j] += t;
            for (int64_t j = hi; j < v.lk; ++j) w[j] += t;
          }
        } else {
          float* w = v.weights + ((b * v.heads + h) * v.lq + i) * v.lk;
          std::fill(w, w + lo, tail);
          std::memcpy(w + lo, p, static_cast<size_t>(hi - lo) * sizeof(float));
          std::fill(w + hi, w + v.lk, tail);
        }
      };

      // Few queries (decode steps): dot products and axpys straight from the
      // strided K and V rows; packing K and V would cost more than the work.
      if (rowwise) {
        float* srow = s_block;
        for (int64_t i = 0; i < v.lq; ++i) {
          int64_t lo = 0, hi = 0;
          range_of(i, &lo, &hi);
          const int64_t n = hi - lo;
          const float* qi = q + i * v.q_sl;
          K::RowScores(qi, k + lo * v.k_sl, v.k_sl, v.d, n, srow);
          const float tail =
              K::SoftmaxRow(srow, n, v.lk - n, v.scale, row_mask(i, lo));
          write_weights(i, srow, lo, hi, tail);
          float* orow = out + i * v.o_sl;
          K::RowContext(srow, n, val + lo * v.v_sl, v.v_sl, v.dv, orow);
          if (tail != 0.0f) {
            AddTailContext(tail, lo, hi, v.lk, val, v.v_sl, v.dv, orow);
          }
        }
        continue;
      }

      // Only keys < length can be seen: pack just those, once per kv head.
      if (hk != packed_kv_head) {
        kt_full = K::PackB(v.d, visible, k, 1, v.k_sl, packed_k);
        vp = K::PackB(v.lk, v.dv, val, v.v_sl, 1, packed_v);
        packed_kv_head = hk;
      }

      // Dense: the score rows of `rows` queries at once (rows <= mb), over
      // the key columns [jb, je) that some row of the block can see.
      auto dense_block = [&](int64_t i0, int64_t rows) {
        int64_t jb = v.lk, je = 0;
        for (int64_t r = 0; r < rows; ++r) {
          range_of(i0 + r, &row_lo[r], &row_hi[r]);
          if (row_hi[r] > row_lo[r]) {
            jb = std::min(jb, row_lo[r]);
            je = std::max(je, row_hi[r]);
          }
        }
        if (je <= jb) {
          jb = 0;
          je = 0;
        }
        jb -= jb % col_align;
        const int64_t ncols = je - jb;
        if (ncols > 0) {
          K::Gemm(rows, ncols, v.d, q + i0 * v.q_sl, v.q_sl,
                  ColumnsFrom(kt_full, jb), s_block, v.lk);
        }
        for (int64_t r = 0; r < rows; ++r) {
          float* srow = s_block + r * v.lk;
          const int64_t lo = row_lo[r], hi = row_hi[r], n = hi - lo;
          float* p = srow + (n > 0 ? lo - jb : 0);
          tails[r] = K::SoftmaxRow(p, n, v.lk - n, v.scale, row_mask(i0 + r, lo));
          write_weights(i0 + r, p, lo, hi, tails[r]);
          if (ncols > 0) {
            std::fill(srow, p, 0.0f);
            std::fill(p + n, srow + ncols, 0.0f);
          }
        }
        float* orow = out + i0 * v.o_sl;
        if (ncols == 0) {
          for (int64_t r = 0; r < rows; ++r) {
            std::fill(orow + r * v.o_sl, orow + r * v.o_sl + v.dv, 0.0f);
          }
        } else {
          K::Gemm(rows, v.dv, ncols, s_block, v.lk, RowsFrom(vp, jb), orow,
                  v.o_sl);
        }
        for (int64_t r = 0; r < rows; ++r) {
          if (tails[r] != 0.0f) {
            AddTailContext(tails[r], row_lo[r], row_hi[r], v.lk, val, v.v_sl,
                           v.dv, orow + r * v.o_sl);
          }
        }
      };

      // Flash: online softmax over key tiles. Returns false (writing nothing)
      // when a row's max stays within reach of a finite fill, i.e. when the
      // skipped, implicitly masked keys could carry weight, or when a row
      // sees nothing; the dense path then handles the block exactly.
      auto flash_block = [&](int64_t i0, int64_t rows) {
        int64_t jb = v.lk, je = 0;
        for (int64_t r = 0; r < rows; ++r) {
          f_max[r] = -std::numeric_limits<float>::infinity();
          f_sum[r] = 0.0f;
          int64_t lo = 0, hi = 0;
          range_of(i0 + r, &lo, &hi);
          if (hi <= lo) return false;
          jb = std::min(jb, lo);
          je = std::max(je, hi);
        }
        jb -= jb % col_align;
        std::fill(f_acc, f_acc + rows * v.dv, 0.0f);
        for (int64_t j0 = jb; j0 < je; j0 += kFlashKeys) {
          const int64_t cols = std::min(kFlashKeys, je - j0);
          K::Gemm(rows, cols, v.d, q + i0 * v.q_sl, v.q_sl,
                  ColumnsFrom(kt_full, j0), f_tile, kFlashKeys);
          for (int64_t r = 0; r < rows; ++r) {
            int64_t lo = 0, hi = 0;
            range_of(i0 + r, &lo, &hi);
            const int64_t a = std::clamp<int64_t>(lo - j0, 0, cols);
            const int64_t e = std::clamp<int64_t>(hi - j0, a, cols);
            float* srow = f_tile + r * kFlashKeys;
            const float alpha = K::OnlineTile(srow, a, e, cols, v.scale,
                                              row_mask(i0 + r, j0 + a),
                                              &f_max[r], &f_sum[r]);
            if (alpha != 1.0f) {
              float* acc = f_acc + r * v.dv;
              for (int64_t c = 0; c < v.dv; ++c) acc[c] *= alpha;
            }
          }
          K::GemmAcc(rows, v.dv, cols, f_tile, kFlashKeys, RowsFrom(vp, j0),
                     f_acc, v.dv);
        }
        for (int64_t r = 0; r < rows; ++r) {
          int64_t lo = 0, hi = 0;
          range_of(i0 + r, &lo, &hi);
          const bool skipped_keys = hi - lo < v.lk;
          if (!(f_sum[r] > 0.0f)) return false;  // NaN, or nothing visible
          if (skipped_keys && !std::isinf(v.fill) &&
              !(f_max[r] > v.fill + 128.0f)) {
            return false;
          }
        }
        for (int64_t r = 0; r < rows; ++r) {
          const float inv = 1.0f / f_sum[r];
          const float* acc = f_acc + r * v.dv;
          float* orow = out + (i0 + r) * v.o_sl;
          for (int64_t c = 0; c < v.dv; ++c) orow[c] = acc[c] * inv;
        }
        return true;
      };

      if (flash) {
        const int64_t i_end = std::min(v.lq, task.blk1 * kFlashRows);
        for (int64_t i0 = task.blk0 * kFlashRows; i0 < i_end; i0 += kFlashRows) {
          const int64_t rows = std::min(kFlashRows, v.lq - i0);
          if (flash_block(i0, rows)) continue;
          for (int64_t s0 = i0; s0 < i0 + rows; s0 += mb) {
            dense_block(s0, std::min(mb, i0 + rows - s0));
          }
        }
      } else {
        const int64_t i_end = std::min(v.lq, task.blk1 * mb);
        for (int64_t i0 = task.blk0 * mb; i0 < i_end; i0 += mb) {
          dense_block(i0, std::min(mb, v.lq - i0));
        }
      }
    }
  }
}

template <class K>
void AttentionCoreT(const AttentionView& v, float* scratch) {
  if (v.weights != nullptr && v.average_weights) {
    std::fill(v.weights, v.weights + v.batch * v.lq * v.lk, 0.0f);
  }
  const int threads = AttentionThreads(v);
  const Partition part = PartitionFor(v, threads);
  const int64_t slice = LayoutFor<K>(v).total;
  auto run = [&](int64_t t, int worker) {
    AttentionTask<K>(v, part(t, v.heads), scratch + worker * slice);
  };
  if (threads == 1) {
    for (int64_t t = 0; t < part.tasks; ++t) run(t, 0);
  } else {
    internal::ParallelFor(part.tasks, run);
  }
}

}  // namespace

float AlibiSlope(int64_t h, int64_t heads) {
  // The largest power of two n <= H gives 2^(-8(h+1)/n) for h < n; the
  // remaining heads take every other slope of 2n: 2^(-4(2(h-n)+1)/n).
  int64_t n = 1;
  while (n * 2 <= heads) n *= 2;
  const double e = h < n ? -8.0 * static_cast<double>(h + 1) / static_cast<double>(n)
                         : -4.0 * static_cast<double>(2 * (h - n) + 1) / static_cast<double>(n);
  return static_cast<float>(std::exp2(e));
}

namespace scalar {
void AttentionCore(const AttentionView& view, float* scratch) {
  AttentionCoreT<ScalarSet>(view, scratch);
}
}  // namespace scalar

#if ATTNLAB_SIMD
namespace simd {
void AttentionCore(const AttentionView& view, float* scratch) {
  AttentionCoreT<SimdSet>(view, scratch);
}
}  // namespace simd
#endif

void AttentionTraceScores(const AttentionView& v, float* scores, float* capped,
                          float* masked) {
  // The core's row rules (AttentionCoreT): the same offsets, ranges, kv head,
  // softcap, tensor mask, ALiBi and fill, one element at a time.
  const int64_t kv_heads = v.kv_heads > 0 ? v.kv_heads : v.heads;
  std::vector<float> raw(static_cast<size_t>(v.lk));
  for (int64_t b = 0; b < v.batch; ++b) {
    const RowRanges range_of(v, b);
    for (int64_t h = 0; h < v.heads; ++h) {
      const int64_t hk = h * kv_heads / v.heads;
      const float* k = v.k + b * v.k_sb + hk * v.k_sh;
      const float slope = !v.alibi ? 0.0f
                                   : (v.alibi_slopes != nullptr ? v.alibi_slopes[h] : AlibiSlope(h, v.heads));
      for (int64_t i = 0; i < v.lq; ++i) {
        const float* qi = v.q + b * v.q_sb + h * v.q_sh + i * v.q_sl;
        const int64_t row = ((b * v.heads + h) * v.lq + i) * v.lk;
        int64_t lo = 0, hi = 0;
        range_of(i, &lo, &hi);
        RowMask rm;
        rm.fill = v.fill;
        rm.softcap = v.softcap;
        if (v.mask != nullptr) {
          rm.kind = v.mask_kind;
          rm.data = v.mask + b * v.m_sb + h * v.m_sh + i * v.m_sq;
          rm.stride_k = v.m_sk;
        }
        if (slope != 0.0f) {
          rm.slope = slope;
          rm.pos = static_cast<float>(i + range_of.causal_off);
        }
        RowScoresScalar(qi, k, v.k_sl, v.d, v.lk, raw.data());
        for (int64_t j = 0; j < v.lk; ++j) {
          const float x = raw[static_cast<size_t>(j)] * v.scale;
          const float c = CapOne(x, rm);
          if (scores != nullptr) scores[row + j] = x;
          if (capped != nullptr) capped[row + j] = c;
          if (masked != nullptr) masked[row + j] = (j >= lo && j < hi) ? MaskOne(c, rm, j) : v.fill;
        }
      }
    }
  }
}

void CopyTraceWeights(const AttentionView& v, const float* w, float* out) {
  if (!v.average_weights) {
    std::memcpy(out, w, static_cast<size_t>(v.batch * v.heads * v.lq * v.lk) * sizeof(float));
    return;
  }
  const int64_t plane = v.lq * v.lk;
  const float inv_heads = 1.0f / static_cast<float>(v.heads);
  std::fill(out, out + v.batch * plane, 0.0f);
  for (int64_t b = 0; b < v.batch; ++b) {
    for (int64_t h = 0; h < v.heads; ++h) {
      const float* p = w + (b * v.heads + h) * plane;
      float* o = out + b * plane;
      for (int64_t r = 0; r < plane; ++r) o[r] += p[r] * inv_heads;
    }
  }
}

int64_t AttentionScratchFloats(const AttentionView& view) {
#if ATTNLAB_SIMD
  if (!UsingScalarKernels()) return LayoutFor<SimdSet>(view).total * AttentionThreads(view);
#endif
  return LayoutFor<ScalarSet>(view).total * AttentionThreads(view);
}

}  // namespace kernels
}  // namespace attnlab

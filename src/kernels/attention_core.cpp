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
// Causal and padding masks make a row's keys j >= valid "implicitly filled"
// with -1e9. Those columns are not computed: after the softmax their weight is
// exp(-1e9 - max) / sum, which is exactly 0 unless every key of the row is
// masked (then the row is uniform and the skipped columns are written back).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

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

// Query rows per block: keeps the S block near 128 KiB.
int64_t BlockRows(int64_t lk) {
  int64_t rows = 32768 / std::max<int64_t>(lk, 1);
  rows = rows / 4 * 4;
  return std::clamp<int64_t>(rows, 4, 64);
}

// Mask data of one query row.
struct RowMask {
  MaskKind kind = MaskKind::kNone;
  const float* data = nullptr;  // at (b, h, i, 0)
  int64_t stride_k = 0;
};

// Applies scale and the tensor mask to x[j] for one element.
inline float MaskOne(float x, const RowMask& m, int64_t j) {
  switch (m.kind) {
    case MaskKind::kKeep:
      return m.data[j * m.stride_k] == 0.0f ? kMaskFill : x;
    case MaskKind::kBlock:
      return x + m.data[j * m.stride_k] * kMaskFill;
    case MaskKind::kAdditive:
      return x + m.data[j * m.stride_k];
    default:
      return x;
  }
}

// Shared tail of the row softmax: the implicit columns [valid, lk) hold fill.
// Returns false (and makes the row uniform) when every score is -inf.
inline bool UniformIfAllNegInf(float* s, int64_t valid, int64_t lk,
                               float max_value, float* tail) {
  if (max_value != -std::numeric_limits<float>::infinity()) return false;
  // The max ignores NaN: an all-NaN row lands here and must stay NaN.
  for (int64_t j = 0; j < valid; ++j) {
    if (std::isnan(s[j])) {
      std::fill(s, s + valid, std::numeric_limits<float>::quiet_NaN());
      *tail = valid < lk ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
      return true;
    }
  }
  const float u = 1.0f / static_cast<float>(lk);
  for (int64_t j = 0; j < valid; ++j) s[j] = u;
  *tail = u;
  return true;
}

// exp(fill - max) for the implicit (masked) columns: 0 unless the row's max is
// itself about the fill (every key masked), without a libm call per row.
inline float ExpOfFill(float max_value) {
  const float x = kMaskFill - max_value;
  return x < -104.0f ? 0.0f : std::exp(x);
}

// ---------------------------------------------------------------------------
// Row softmax, scalar: s[0, valid) holds raw scores; on return it holds the
// probabilities, and the probability of each implicit column is returned.
// s[j] = mask(s[j]·scale) for j < valid; returns the max (-inf if none).
float ScaleMaskMaxScalar(float* s, int64_t valid, float scale, const RowMask& m) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < valid; ++j) {
    const float x = MaskOne(s[j] * scale, m, j);
    s[j] = x;
    mx = std::max(mx, x);
  }
  return mx;
}

float SoftmaxRowScalar(float* s, int64_t valid, int64_t lk, float scale,
                       const RowMask& m) {
  float mx = ScaleMaskMaxScalar(s, valid, scale, m);
  if (valid < lk) mx = std::max(mx, kMaskFill);
  float tail = 0.0f;
  if (UniformIfAllNegInf(s, valid, lk, mx, &tail)) return tail;
  float sum = 0.0f;
  for (int64_t j = 0; j < valid; ++j) {
    const float e = std::exp(s[j] - mx);
    s[j] = e;
    sum += e;
  }
  const float tail_e = valid < lk ? ExpOfFill(mx) : 0.0f;
  sum += tail_e * static_cast<float>(lk - valid);
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < valid; ++j) s[j] *= inv;
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

inline Batch MaskBatch(const Batch& x, const RowMask& m, int64_t j) {
  if (m.kind == MaskKind::kNone) return x;
  const Batch mv = m.stride_k == 0 ? Batch(m.data[0])
                                   : Batch::load_unaligned(m.data + j);
  switch (m.kind) {
    case MaskKind::kKeep:
      return xsimd::select(mv == Batch(0.0f), Batch(kMaskFill), x);
    case MaskKind::kBlock:
      return xsimd::fma(mv, Batch(kMaskFill), x);
    default:
      return x + mv;
  }
}

float ScaleMaskMaxSimd(float* s, int64_t valid, float scale, const RowMask& m) {
  const Batch vscale(scale);
  Batch vmax(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + kWidth <= valid; j += kWidth) {
    const Batch x = MaskBatch(Batch::load_unaligned(s + j) * vscale, m, j);
    x.store_unaligned(s + j);
    vmax = xsimd::max(vmax, x);
  }
  float mx = ReduceMax(vmax);
  for (; j < valid; ++j) {
    const float x = MaskOne(s[j] * scale, m, j);
    s[j] = x;
    mx = std::max(mx, x);
  }
  return mx;
}

float SoftmaxRowSimd(float* s, int64_t valid, int64_t lk, float scale,
                     const RowMask& m) {
  float mx = ScaleMaskMaxSimd(s, valid, scale, m);
  int64_t j = 0;
  if (valid < lk) mx = std::max(mx, kMaskFill);
  float tail = 0.0f;
  if (UniformIfAllNegInf(s, valid, lk, mx, &tail)) return tail;

  const Batch bmax(mx);
  Batch vsum(0.0f);
  j = 0;
  for (; j + kWidth <= valid; j += kWidth) {
    const Batch e = ExpBatch(Batch::load_unaligned(s + j) - bmax);
    e.store_unaligned(s + j);
    vsum += e;
  }
  if (j < valid) {
    // The last partial vector: unused lanes hold -inf, whose exp is 0.
    alignas(64) float t[kWidth];
    for (int64_t u = 0; u < kWidth; ++u) {
      t[u] = j + u < valid ? s[j + u] : -std::numeric_limits<float>::infinity();
    }
    const Batch e = ExpBatch(Batch::load_aligned(t) - bmax);
    e.store_aligned(t);
    vsum += e;
    for (int64_t u = 0; j + u < valid; ++u) s[j + u] = t[u];
  }
  float sum = xsimd::hadd(vsum);
  const float tail_e = valid < lk ? ExpOfFill(mx) : 0.0f;
  sum += tail_e * static_cast<float>(lk - valid);
  const float inv = 1.0f / sum;
  const Batch vinv(inv);
  j = 0;
  for (; j + kWidth <= valid; j += kWidth) {
    (Batch::load_unaligned(s + j) * vinv).store_unaligned(s + j);
  }
  for (; j < valid; ++j) s[j] *= inv;
  return tail_e * inv;
}
#endif


// ---------------------------------------------------------------------------
// Online (flash-style) softmax over one key tile of one row. s[0, cols) holds
// raw scores of keys j0..j0+cols; keys >= valid (relative) are implicitly
// masked and skipped. Updates the running max *m and sum *l, turns s into
// exp(x - m_new) (0 for skipped keys) and returns the factor exp(m_old -
// m_new) by which the row's accumulated output must be rescaled.
float OnlineTileScalar(float* s, int64_t valid, int64_t cols, float scale,
                       const RowMask& m, float* run_max, float* run_sum) {
  const float mx = ScaleMaskMaxScalar(s, valid, scale, m);
  const float m_new = std::max(*run_max, mx);
  const float alpha = *run_max == -std::numeric_limits<float>::infinity()
                          ? 0.0f : std::exp(*run_max - m_new);
  float sum = 0.0f;
  if (m_new == -std::numeric_limits<float>::infinity()) {
    for (int64_t j = 0; j < cols; ++j) s[j] = 0.0f;
  } else {
    for (int64_t j = 0; j < valid; ++j) {
      const float e = std::exp(s[j] - m_new);
      s[j] = e;
      sum += e;
    }
    for (int64_t j = valid; j < cols; ++j) s[j] = 0.0f;
  }
  *run_sum = *run_sum * alpha + sum;
  *run_max = m_new;
  return alpha;
}

#if ATTNLAB_SIMD
float OnlineTileSimd(float* s, int64_t valid, int64_t cols, float scale,
                     const RowMask& m, float* run_max, float* run_sum) {
  const float mx = ScaleMaskMaxSimd(s, valid, scale, m);
  int64_t j = 0;
  const float m_new = std::max(*run_max, mx);
  const float alpha = *run_max == -std::numeric_limits<float>::infinity()
                          ? 0.0f : std::exp(*run_max - m_new);
  float sum = 0.0f;
  if (m_new == -std::numeric_limits<float>::infinity()) {
    for (j = 0; j < cols; ++j) s[j] = 0.0f;
  } else {
    const Batch bmax(m_new);
    Batch vsum(0.0f);
    j = 0;
    for (; j + kWidth <= valid; j += kWidth) {
      const Batch e = ExpBatch(Batch::load_unaligned(s + j) - bmax);
      e.store_unaligned(s + j);
      vsum += e;
    }
    sum = xsimd::hadd(vsum);
    for (; j < valid; ++j) {
      const float e = std::exp(s[j] - m_new);
      s[j] = e;
      sum += e;
    }
    for (j = valid; j < cols; ++j) s[j] = 0.0f;
  }
  *run_sum = *run_sum * alpha + sum;
  *run_max = m_new;
  return alpha;
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
  static float SoftmaxRow(float* s, int64_t valid, int64_t lk, float scale,
                          const RowMask& m) {
    return SoftmaxRowScalar(s, valid, lk, scale, m);
  }
  static void GemmAcc(int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t lda, const PackedB& b, float* c, int64_t ldc) {
    scalar::GemmAcc(m, n, k, a, lda, b, c, ldc);
  }
  static float OnlineTile(float* s, int64_t valid, int64_t cols, float scale,
                          const RowMask& m, float* mx, float* l) {
    return OnlineTileScalar(s, valid, cols, scale, m, mx, l);
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
  static float SoftmaxRow(float* s, int64_t valid, int64_t lk, float scale,
                          const RowMask& m) {
    return SoftmaxRowSimd(s, valid, lk, scale, m);
  }
  static void GemmAcc(int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t lda, const PackedB& b, float* c, int64_t ldc) {
    simd::GemmAcc(m, n, k, a, lda, b, c, ldc);
  }
  static float OnlineTile(float* s, int64_t valid, int64_t cols, float scale,
                          const RowMask& m, float* mx, float* l) {
    return OnlineTileSimd(s, valid, cols, scale, m, mx, l);
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
  int64_t packed_k = 0, packed_v = 0, s_block = 0, tails = 0, valids = 0;
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
  const int64_t mb = BlockRows(v.lk);
  l.packed_k = take(pack ? K::PackedFloats(v.d, v.lk) : 0);
  l.packed_v = take(pack ? K::PackedFloats(v.lk, v.dv) : 0);
  l.s_block = take(mb * v.lk);
  l.tails = take(mb);
  static_assert(sizeof(int64_t) == 2 * sizeof(float), "scratch layout");
  l.valids = take(2 * mb);  // int64_t[mb]
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
  const int64_t rows = UseFlash(v) ? kFlashRows : BlockRows(v.lk);
  return (v.lq + rows - 1) / rows;
}

struct Partition {
  int64_t heads_per_task = 1, chunks = 1, blocks = 1, tasks = 1;
  TaskRange operator()(int64_t t, int64_t heads) const {
    TaskRange r;
    const int64_t chunk = t % chunks, group = t / chunks;
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
  const int64_t units = v.batch * (v.heads / p.heads_per_task);
  if (threads > 1) {
    p.chunks = std::clamp<int64_t>((4 * threads + units - 1) / units, 1, p.blocks);
  }
  p.tasks = units * p.chunks;
  return p;
}

template <class K>
void AttentionTask(const AttentionView& v, const TaskRange& task, float* scratch) {
  // [B, H, Lq, Lk] legend: b batch, h head, i query row, j key column.
  const int64_t mb = BlockRows(v.lk);
  const ScratchLayout layout = LayoutFor<K>(v);
  float* packed_k = scratch + layout.packed_k;
  float* packed_v = scratch + layout.packed_v;
  float* s_block = scratch + layout.s_block;
  float* tails = scratch + layout.tails;
  int64_t* valids = reinterpret_cast<int64_t*>(scratch + layout.valids);
  const bool flash = UseFlash(v);
  const bool rowwise = UseRowwise(v);
  float* f_tile = scratch + layout.f_tile;
  float* f_acc = scratch + layout.f_acc;
  float* f_max = scratch + layout.f_max;
  float* f_sum = scratch + layout.f_sum;

  const float inv_heads = 1.0f / static_cast<float>(v.heads);

  {
    const int64_t b = task.b;
    const int64_t length =
        v.lengths != nullptr ? std::min<int64_t>(v.lengths[b], v.lk) : v.lk;
    for (int64_t h = task.h0; h < task.h1; ++h) {
      const float* q = v.q + b * v.q_sb + h * v.q_sh;
      const float* k = v.k + b * v.k_sb + h * v.k_sh;
      const float* val = v.v + b * v.v_sb + h * v.v_sh;
      float* out = v.out + b * v.o_sb + h * v.o_sh;
      const float* mask =
          v.mask != nullptr ? v.mask + b * v.m_sb + h * v.m_sh : nullptr;
      auto row_mask = [&](int64_t i, int64_t j0) {
        RowMask rm;
        if (mask != nullptr) {
          rm.kind = v.mask_kind;
          rm.data = mask + i * v.m_sq + j0 * v.m_sk;
          rm.stride_k = v.m_sk;
        }
        return rm;
      };
      auto valid_of = [&](int64_t i) {
        int64_t valid = std::max<int64_t>(length, 0);
        if (v.causal) valid = std::max<int64_t>(0, std::min<int64_t>(valid, i + 1 + v.causal_offset));
        return valid;
      };

      // Weights row i: probabilities p[0, valid), then `tail` for the
      // implicitly masked keys.
      auto write_weights = [&](int64_t i, const float* p, int64_t valid,
                               float tail) {
        if (v.weights == nullptr) return;
        if (v.average_weights) {
          float* w = v.weights + (b * v.lq + i) * v.lk;
          for (int64_t j = 0; j < valid; ++j) w[j] += p[j] * inv_heads;
          const float t = tail * inv_heads;
          if (t != 0.0f) {
            for (int64_t j = valid; j < v.lk; ++j) w[j] += t;
          }
        } else {
          float* w = v.weights + ((b * v.heads + h) * v.lq + i) * v.lk;
          std::memcpy(w, p, static_cast<size_t>(valid) * sizeof(float));
          std::fill(w + valid, w + v.lk, tail);
        }
      };

      // Few queries (decode steps): dot products and axpys straight from the
      // strided K and V rows; packing K and V would cost more than the work.
      if (rowwise) {
        float* srow = s_block;
        for (int64_t i = 0; i < v.lq; ++i) {
          const int64_t valid = valid_of(i);
          const float* qi = q + i * v.q_sl;
          K::RowScores(qi, k, v.k_sl, v.d, valid, srow);
          const float tail = K::SoftmaxRow(srow, valid, v.lk, v.scale, row_mask(i, 0));
          const int64_t nz = tail != 0.0f ? v.lk : valid;
          std::fill(srow + valid, srow + nz, tail);
          write_weights(i, srow, valid, tail);
          K::RowContext(srow, nz, val, v.v_sl, v.dv, out + i * v.o_sl);
        }
        continue;
      }

      // Only keys < length can be seen: pack just those.
      const int64_t visible = std::max<int64_t>(length, 0);
      const PackedB kt = K::PackB(v.d, visible, k, 1, v.k_sl, packed_k);
      const PackedB vp = K::PackB(v.lk, v.dv, val, v.v_sl, 1, packed_v);

      // Dense: the whole score rows of `rows` queries at once (rows <= mb).
      auto dense_block = [&](int64_t i0, int64_t rows) {
        int64_t ncols = 0;
        for (int64_t r = 0; r < rows; ++r) {
          valids[r] = valid_of(i0 + r);
          ncols = std::max(ncols, valids[r]);
        }
        if (ncols > 0) {
          K::Gemm(rows, ncols, v.d, q + i0 * v.q_sl, v.q_sl, kt, s_block,
                  v.lk);
        }
        int64_t nz = 0;
        for (int64_t r = 0; r < rows; ++r) {
          float* srow = s_block + r * v.lk;
          tails[r] = K::SoftmaxRow(srow, valids[r], v.lk, v.scale,
                                   row_mask(i0 + r, 0));
          nz = std::max(nz, tails[r] != 0.0f ? v.lk : valids[r]);
        }
        for (int64_t r = 0; r < rows; ++r) {
          float* srow = s_block + r * v.lk;
          std::fill(srow + valids[r], srow + nz, tails[r]);
          write_weights(i0 + r, srow, valids[r], tails[r]);
        }
        float* orow = out + i0 * v.o_sl;
        if (nz == 0) {
          for (int64_t r = 0; r < rows; ++r) {
            std::fill(orow + r * v.o_sl, orow + r * v.o_sl + v.dv, 0.0f);
          }
        } else {
          K::Gemm(rows, v.dv, nz, s_block, v.lk, vp, orow, v.o_sl);
        }
      };

      // Flash: online softmax over key tiles. Returns false (writing nothing)
      // when a row's max stays within reach of the -1e9 fill, i.e. when the
      // skipped, implicitly masked keys could carry weight; the dense path
      // then handles the block exactly.
      auto flash_block = [&](int64_t i0, int64_t rows) {
        int64_t ncols = 0;
        for (int64_t r = 0; r < rows; ++r) {
          f_max[r] = -std::numeric_limits<float>::infinity();
          f_sum[r] = 0.0f;
          ncols = std::max(ncols, valid_of(i0 + r));
        }
        std::fill(f_acc, f_acc + rows * v.dv, 0.0f);
        for (int64_t j0 = 0; j0 < ncols; j0 += kFlashKeys) {
          const int64_t cols = std::min(kFlashKeys, ncols - j0);
          K::Gemm(rows, cols, v.d, q + i0 * v.q_sl, v.q_sl, ColumnsFrom(kt, j0),
                  f_tile, kFlashKeys);
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t valid =
                std::clamp<int64_t>(valid_of(i0 + r) - j0, 0, cols);
            float* srow = f_tile + r * kFlashKeys;
            const float alpha = K::OnlineTile(srow, valid, cols, v.scale,
                                              row_mask(i0 + r, j0), &f_max[r],
                                              &f_sum[r]);
            if (alpha != 1.0f) {
              float* acc = f_acc + r * v.dv;
              for (int64_t c = 0; c < v.dv; ++c) acc[c] *= alpha;
            }
          }
          K::GemmAcc(rows, v.dv, cols, f_tile, kFlashKeys, RowsFrom(vp, j0),
                     f_acc, v.dv);
        }
        for (int64_t r = 0; r < rows; ++r) {
          const bool skipped_keys = valid_of(i0 + r) < v.lk;
          if (!(f_sum[r] > 0.0f)) return false;  // NaN, or nothing visible
          if (skipped_keys && !(f_max[r] > kMaskFill + 128.0f)) return false;
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

void AttentionTraceScores(const AttentionView& v, float* scores, float* masked) {
  for (int64_t b = 0; b < v.batch; ++b) {
    const int64_t length =
        v.lengths != nullptr ? std::min<int64_t>(v.lengths[b], v.lk) : v.lk;
    for (int64_t h = 0; h < v.heads; ++h) {
      const float* k = v.k + b * v.k_sb + h * v.k_sh;
      for (int64_t i = 0; i < v.lq; ++i) {
        const float* qi = v.q + b * v.q_sb + h * v.q_sh + i * v.q_sl;
        const int64_t row = ((b * v.heads + h) * v.lq + i) * v.lk;
        int64_t valid = std::max<int64_t>(length, 0);
        if (v.causal) valid = std::max<int64_t>(0, std::min<int64_t>(valid, i + 1 + v.causal_offset));
        RowMask rm;
        if (v.mask != nullptr) {
          rm.kind = v.mask_kind;
          rm.data = v.mask + b * v.m_sb + h * v.m_sh + i * v.m_sq;
          rm.stride_k = v.m_sk;
        }
        float* s = scores != nullptr ? scores + row : masked + row;
        RowScoresScalar(qi, k, v.k_sl, v.d, v.lk, s);
        if (masked != nullptr) {
          float* m = masked + row;
          if (m != s) std::memcpy(m, s, static_cast<size_t>(v.lk) * sizeof(float));
          ScaleMaskMaxScalar(m, valid, v.scale, rm);
          std::fill(m + valid, m + v.lk, kMaskFill);
        }
        if (scores != nullptr) {
          for (int64_t j = 0; j < v.lk; ++j) s[j] *= v.scale;
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

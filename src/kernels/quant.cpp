// Products with weights kept as GGML blocks (kernels.h QuantKind): Q8_0 and
// Q4_0 rows as a GGUF file holds them, y[M, N] = x[M, K]·Wᵀ + bias. The
// activations stay float; each weight is the float32 value d·q of ggml's
// dequantize_row_*, so a result equals a float GEMV over the dequantized W
// up to the summation order.
//
// GEMV (decoding, few rows): each block is read once. A block's products are
// summed lane-wise, Σ x·q, and then scaled once by its d (acc += d·Σ x·q):
// one multiply-add per weight plus one per block, as the F32 GEMV.
//   The quants are loaded as 32-bit lanes of 4 bytes (Q8_0) or 8 nibbles
//   (Q4_0) and read with one mask each, in place (byte j as its value
//   ·2^(8j), nibble t as ·2^(4t); the top one shifted down), then converted
//   (i32x4 → f32x4): no byte shuffles (xsimd 8.1 has no widening of int8)
//   and no shifts. So extraction j of a load holds the values {4l + j}
//   (Q8_0) of its lanes l, not consecutive ones, times a power of two;
//   instead of shuffling W, x is permuted once a call into the same order
//   and scaled by the inverse powers of two (PermuteX, into scratch), so
//   every weight meets its own x and the products are x·q exactly. The
//   offsets (Q8_0's signed bytes read as q + 128, Q4_0's nib − 8) come off
//   once a block: Σ x·(q + 128) − 128·Σ x, from lane sums of x kept in the
//   scratch too. Per weight that is about 1.2 SIMD operations in wasm (mask,
//   convert, mul, add), against 0.75 for the F32 GEMV and 1.4 for F16.
//   Rows of W go four at a time, far apart (gemv_util::Quartets), as gemv.cpp.
// GEMM (prefill, many rows): column chunks of W (rows of the torch layout)
// dequantized into scratch, packed for the kernel set (PackB) and run through
// its Gemm: the F32 GEMM's speed, plus one dequantization of W a call.
// K-quants (Q4_K, Q6_K; 256 values a super-block): the GEMV reads the
//   quants in place as Q4_0's (nibbles masked; Q6_K's 6-bit values put
//   together from ql and qh by shifts and masks), with x permuted into the
//   loads' order; each sub-block's scale multiplies its lanes' sums once,
//   and Q4_K's mins (dmin·m·Σ x) and Q6_K's offset (32·d·sc·Σ x) come off
//   once a super-block from the sub-block sums of x kept in the scratch.
//   The GEMM dequantizes chunks, as for the others.
// Scalar: the plain dot product with the dequantized weight, in k order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/gemv_util.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"
#include "thread_pool.h"

#if ATTNLAB_SIMD && defined(__SSE4_1__)
#include <smmintrin.h>
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif
#define ATTNLAB_QUANT_INT 1
#else
#define ATTNLAB_QUANT_INT 0
#endif

namespace attnlab {
namespace kernels {

namespace {
// A block's F16 scale d as float, exactly as HalfToFloat, in the fewest
// scalar operations (one 16-bit load, no branch or select: it runs once a
// block and row, beside 32 weights' SIMD work): magnitude under float32's
// exponent, the sign bit OR-ed in, then × 2^112. Finite scales only (the
// store refuses the others).
inline float Scale(const uint8_t* block) {
  uint16_t h;
  std::memcpy(&h, block, 2);  // little-endian, as the wasm and x86 targets
  const uint32_t bits = (static_cast<uint32_t>(h & 0x8000u) << 16) | (static_cast<uint32_t>(h & 0x7fffu) << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f * 0x1p112f;
}

// Value i (0 <= i < 32) of a block, as an integer (before the scale).
inline int32_t QuantValue(QuantKind kind, const uint8_t* block, int64_t i) {
  const uint8_t* q = block + 2;
  if (kind == QuantKind::kQ8_0) return static_cast<int8_t>(q[i]);
  return i < 16 ? (q[i] & 15) - 8 : (q[i - 16] >> 4) - 8;
}

// Q4_K's scale and min of sub-block j (0..7) from its 12 scale bytes
// (ggml-quants.c get_scale_min_k4).
inline void ScaleMinK4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// One Q4_K super-block (256 values), as dequantize_row_q4_K.
void DequantizeQ4K(const uint8_t* block, float* y) {
  const float d = Scale(block), dmin = Scale(block + 2);
  const uint8_t* scales = block + 4;
  const uint8_t* q = block + 16;
  for (int g = 0; g < 4; ++g, q += 32) {
    int sc = 0, m = 0;
    ScaleMinK4(2 * g, scales, &sc, &m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    ScaleMinK4(2 * g + 1, scales, &sc, &m);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}

// One Q6_K super-block (256 values), as dequantize_row_q6_K.
void DequantizeQ6K(const uint8_t* block, float* y) {
  const float d = Scale(block + 208);
  const uint8_t* ql = block;
  const uint8_t* qh = block + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(block + 192);
  for (int n = 0; n < 2; ++n, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = static_cast<int>((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = static_cast<int>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = static_cast<int>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = static_cast<int>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
  }
}

// One block of any kind (32 or 256 values).
void DequantizeBlock(QuantKind kind, const uint8_t* block, float* y) {
  if (kind == QuantKind::kQ4_K) return DequantizeQ4K(block, y);
  if (kind == QuantKind::kQ6_K) return DequantizeQ6K(block, y);
  const float d = Scale(block);
  for (int64_t i = 0; i < kQuantBlock; ++i) y[i] = static_cast<float>(QuantValue(kind, block, i)) * d;
}

// Columns of W a GemmQuant chunk: about 512 KB of floats, a multiple of 64.
int64_t GemmChunk(int64_t k, int64_t n) {
  const int64_t c = std::max<int64_t>(64, ((int64_t{1} << 17) / std::max<int64_t>(k, 1)) / 64 * 64);
  return std::min(c, n);
}
inline int64_t RoundUp16(int64_t v) { return (v + 15) / 16 * 16; }

// GemmQuant over a kernel set's PackB and Gemm (both sets share it, so the
// scalar set is the oracle of the SIMD one's packing and GEMM).
template <class Pack, class Mult>
void GemmQuantChunks(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                     const QuantMatrix& w, const float* bias, float* c, int64_t ldc,
                     float* scratch, const Pack& pack, const Mult& mult) {
  const int64_t nc = GemmChunk(k, n);
  float* rows = scratch;
  float* packed = scratch + RoundUp16(nc * k);
  for (int64_t j0 = 0; j0 < n; j0 += nc) {
    const int64_t cols = std::min(nc, n - j0);
    for (int64_t j = 0; j < cols; ++j) DequantizeRow(w.kind, w.data + (j0 + j) * w.ld, k, rows + j * k);
    // B(kk, j) = W[j0 + j, kk]
    const PackedB pb = pack(k, cols, rows, 1, k, packed);
    mult(m, cols, k, a, lda, pb, bias ? bias + j0 : nullptr, c + j0, ldc);
  }
}
}  // namespace

void DequantizeRow(QuantKind kind, const uint8_t* row, int64_t k, float* out) {
  const int64_t bb = QuantBlockBytes(kind), bv = QuantBlockValues(kind);
  for (int64_t b = 0; b < k / bv; ++b) DequantizeBlock(kind, row + b * bb, out + b * bv);
}

namespace scalar {
int64_t QuantGemvScratchFloats(int64_t, int64_t) { return 0; }

void GemvQuant(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
               const QuantMatrix& w, const float* bias, float* y, int64_t ldy, float*) {
  const int64_t bb = QuantBlockBytes(w.kind), bv = QuantBlockValues(w.kind);
  float values[kQuantSuper];
  for (int64_t i = 0; i < m; ++i) {
    const float* xr = x + i * ldx;
    for (int64_t j = 0; j < n; ++j) {
      const uint8_t* row = w.data + j * w.ld;
      float s = 0.0f;
      for (int64_t b = 0; b < k / bv; ++b) {
        DequantizeBlock(w.kind, row + b * bb, values);
        for (int64_t t = 0; t < bv; ++t) s += xr[b * bv + t] * values[t];
      }
      y[i * ldy + j] = s + (bias ? bias[j] : 0.0f);
    }
  }
}

int64_t QuantGemmScratchFloats(int64_t k, int64_t n) {
  const int64_t nc = GemmChunk(k, n);
  return RoundUp16(nc * k) + PackedFloats(k, nc);
}

void GemmQuant(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const QuantMatrix& w, const float* bias, float* c, int64_t ldc, float* scratch) {
  GemmQuantChunks(m, n, k, a, lda, w, bias, c, ldc, scratch, scalar::PackB,
                  [](int64_t mm, int64_t nn, int64_t kk, const float* aa, int64_t la, const PackedB& b,
                     const float* bi, float* cc, int64_t lc) { scalar::Gemm(mm, nn, kk, aa, la, b, bi, cc, lc); });
}
}  // namespace scalar

#if ATTNLAB_SIMD
namespace simd {
namespace {
using I32 = xsimd::batch<int32_t, Arch>;
using gemv_util::kMinParallelGemv;
using gemv_util::Quartets;

// The lane layouts below are written for 4 and 8 lanes (SSE4.1/wasm SIMD128,
// AVX2); other widths run the scalar loops.
constexpr bool kQuantSimd = kWidth == 4 || kWidth == 8;

// 2^(−4t): the x of nibble t (K-quants), read in place.
constexpr float kNibbleScale[7] = {1.0f, 0x1p-4f, 0x1p-8f, 0x1p-12f, 0x1p-16f, 0x1p-20f, 0x1p-24f};

// Floats of one permuted x row in scratch: the values, then (Q4_0) one
// vector of offset corrections a load (Q4Rows).
inline int64_t PermutedRow(int64_t k) { return k + k / kQuantBlock * kWidth; }

// The K-quants: x permuted into the order their loads read (below), and the
// plain sums of x over each sub-block after the row (xp + k): Q4_K's 32
// values (its mins: Σ x·(d1·q − m1) = d1·Σ x·q − m1·Σ x), Q6_K's 16 (its
// offset: Σ x·(q − 32) = Σ x·q − 32·Σ x).
//   Q4_K: each 64-value group g (32 bytes of nibbles) is read in loads of
//         4·kWidth bytes (h); nibble t of lane l of load h is byte
//         h·4W + 4l + t/2 of the group, low (t even: sub-block 2g, value
//         64g + h·4W + 4l + t/2) or high (t odd: sub-block 2g + 1, value
//         + 32). Read in place (nib·2^(4t), Nibble), so x carries 2^(−4t).
//   Q6_K: in each half of 128 values, loads h of ql[0..31], ql[32..63] and
//         qh[0..31]; byte j of lane l holds quarter k's value
//         32k + h·4W + 4l + j (k = 0..3: ql low, ql+32 low, ql high,
//         ql+32 high, with qh's bit pairs 0–1, 2–3, 4–5, 6–7), shifted out
//         to small integers (no scaling of x).
void PermuteXK(QuantKind kind, int64_t k, const float* x, float* xp) {
  constexpr int64_t W = kWidth;
  if (kind == QuantKind::kQ4_K) {
    for (int64_t g = 0; g < k / 64; ++g) {
      for (int64_t h = 0; h < 32 / (4 * W); ++h) {
        for (int64_t t = 0; t < 8; ++t) {
          for (int64_t l = 0; l < W; ++l) {
            const float v = x[64 * g + (t & 1) * 32 + h * 4 * W + 4 * l + t / 2];
            xp[64 * g + h * 8 * W + t * W + l] = t < 7 ? v * kNibbleScale[t] : v;
          }
        }
      }
    }
    for (int64_t s = 0; s < k / 32; ++s) {
      float sum = 0.0f;
      for (int64_t i = 0; i < 32; ++i) sum += x[32 * s + i];
      xp[k + s] = sum;
    }
    return;
  }
  for (int64_t n = 0; n < k / 128; ++n) {
    for (int64_t h = 0; h < 32 / (4 * W); ++h) {
      for (int64_t q = 0; q < 4; ++q) {
        for (int64_t j = 0; j < 4; ++j) {
          for (int64_t l = 0; l < W; ++l) {
            xp[128 * n + ((h * 4 + q) * 4 + j) * W + l] = x[128 * n + 32 * q + h * 4 * W + 4 * l + j];
          }
        }
      }
    }
  }
  for (int64_t s = 0; s < k / 16; ++s) {
    float sum = 0.0f;
    for (int64_t i = 0; i < 16; ++i) sum += x[16 * s + i];
    xp[k + s] = sum;
  }
}

// Nibble t (0..7) of each lane in place, nib·2^(4t) (exact in float: 4
// significant bits); the top one shifted down (its in-place value would be
// negative as int32).
template <int kT>
inline Batch Nibble(const I32& u) {
  if (kT == 7) return xsimd::to_float(xsimd::bitwise_cast<I32>(xsimd::bitwise_cast<xsimd::batch<uint32_t, Arch>>(u) >> 28));
  return xsimd::to_float(u & I32(static_cast<int32_t>(15u << (4 * kT))));
}

using U32 = xsimd::batch<uint32_t, Arch>;
inline Batch ToFloat(const U32& v) { return xsimd::to_float(xsimd::bitwise_cast<I32>(v)); }

// Q4_K rows: per super-block and row, the 8 (sc, m) decoded once; per
// 64-value group the products of its two sub-blocks summed apart (even
// nibbles: sub-block 2g, odd: 2g + 1) and scaled once each by d·sc; the
// mins once a super-block, dmin·m against the sub-block sums of x.
template <int R>
void Q4KRows(int64_t k, const float* xp, const uint8_t* const rows[R], float out[R]) {
  constexpr int64_t kBytes = 144;
  constexpr int64_t W = kWidth;
  Batch acc[R], macc[R];
  for (int r = 0; r < R; ++r) acc[r] = macc[r] = Batch(0.0f);
  alignas(64) float mins[8];
  for (int64_t sb = 0; sb < k / kQuantSuper; ++sb) {
    const float* xs = xp + sb * kQuantSuper;
    const float* sums = xp + k + sb * 8;
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = rows[r] + sb * kBytes;
      const float d = Scale(block), dmin = Scale(block + 2);
      const uint8_t* qs = block + 16;
      for (int g = 0; g < 4; ++g) {
        Batch se(0.0f), so(0.0f);
        for (int64_t h = 0; h < 32 / (4 * W); ++h) {
          const I32 u = I32::load_unaligned(reinterpret_cast<const int32_t*>(qs + 32 * g + h * 4 * W));
          const float* xb = xs + 64 * g + h * 8 * W;
          se = xsimd::fma(Batch::load_aligned(xb), Nibble<0>(u), se);
          so = xsimd::fma(Batch::load_aligned(xb + W), Nibble<1>(u), so);
          se = xsimd::fma(Batch::load_aligned(xb + 2 * W), Nibble<2>(u), se);
          so = xsimd::fma(Batch::load_aligned(xb + 3 * W), Nibble<3>(u), so);
          se = xsimd::fma(Batch::load_aligned(xb + 4 * W), Nibble<4>(u), se);
          so = xsimd::fma(Batch::load_aligned(xb + 5 * W), Nibble<5>(u), so);
          se = xsimd::fma(Batch::load_aligned(xb + 6 * W), Nibble<6>(u), se);
          so = xsimd::fma(Batch::load_aligned(xb + 7 * W), Nibble<7>(u), so);
        }
        int sc = 0, m = 0;
        ScaleMinK4(2 * g, block + 4, &sc, &m);
        acc[r] = xsimd::fma(se, Batch(d * static_cast<float>(sc)), acc[r]);
        mins[2 * g] = dmin * static_cast<float>(m);
        ScaleMinK4(2 * g + 1, block + 4, &sc, &m);
        acc[r] = xsimd::fma(so, Batch(d * static_cast<float>(sc)), acc[r]);
        mins[2 * g + 1] = dmin * static_cast<float>(m);
      }
      for (int64_t s = 0; s < 8; s += W) {
        macc[r] = xsimd::fma(Batch::load_aligned(mins + s), Batch::load_aligned(sums + s), macc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = xsimd::hadd(acc[r]) - xsimd::hadd(macc[r]);
}

// Q6_K rows: per super-block and row the 16 scales d·sc; per load h and
// quarter q the four byte positions' products summed, then scaled once by
// the lanes' sub-block scales; the offset 32 once a super-block, against
// the sub-block sums of x.
template <int R>
void Q6KRows(int64_t k, const float* xp, const uint8_t* const rows[R], float out[R]) {
  constexpr int64_t kBytes = 210;
  constexpr int64_t W = kWidth;
  Batch acc[R], oacc[R];
  for (int r = 0; r < R; ++r) acc[r] = oacc[r] = Batch(0.0f);
  alignas(64) float scl[16];
  alignas(64) float lanes[W];
  const U32 m4(0xFu), m2(3u), m30(0x30u), mc(0xCu);
  for (int64_t sb = 0; sb < k / kQuantSuper; ++sb) {
    const float* xs = xp + sb * kQuantSuper;
    const float* sums = xp + k + sb * 16;
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = rows[r] + sb * kBytes;
      const float d = Scale(block + 208);
      const auto* sc = reinterpret_cast<const int8_t*>(block + 192);
      for (int s = 0; s < 16; ++s) scl[s] = d * static_cast<float>(sc[s]);
      for (int64_t n = 0; n < 2; ++n) {
        const uint8_t* ql = block + 64 * n;
        const uint8_t* qh = block + 128 + 32 * n;
        for (int64_t h = 0; h < 32 / (4 * W); ++h) {
          const U32 a = U32::load_unaligned(reinterpret_cast<const uint32_t*>(ql + h * 4 * W));
          const U32 b = U32::load_unaligned(reinterpret_cast<const uint32_t*>(ql + 32 + h * 4 * W));
          const U32 hh = U32::load_unaligned(reinterpret_cast<const uint32_t*>(qh + h * 4 * W));
          const float* xb = xs + 128 * n + h * 16 * W;
          Batch s1(0.0f), s2(0.0f), s3(0.0f), s4(0.0f);
          for (int j = 0; j < 4; ++j) {
            const U32 aj = a >> (8 * j), bj = b >> (8 * j), hj = hh >> (8 * j);
            s1 = xsimd::fma(Batch::load_aligned(xb + (0 * 4 + j) * W), ToFloat((aj & m4) | ((hj & m2) << 4)), s1);
            s2 = xsimd::fma(Batch::load_aligned(xb + (1 * 4 + j) * W), ToFloat((bj & m4) | ((hj & mc) << 2)), s2);
            s3 = xsimd::fma(Batch::load_aligned(xb + (2 * 4 + j) * W), ToFloat(((aj >> 4) & m4) | (hj & m30)), s3);
            s4 = xsimd::fma(Batch::load_aligned(xb + (3 * 4 + j) * W), ToFloat(((bj >> 4) & m4) | ((hj >> 2) & m30)), s4);
          }
          // Lane l of quarter q: sub-block 8n + (h·4W + 4l)/16 + 2q.
          const Batch* sums4[4] = {&s1, &s2, &s3, &s4};
          for (int q = 0; q < 4; ++q) {
            for (int64_t l = 0; l < W; ++l) lanes[l] = scl[8 * n + (h * 4 * W + 4 * l) / 16 + 2 * q];
            acc[r] = xsimd::fma(*sums4[q], Batch::load_aligned(lanes), acc[r]);
          }
        }
      }
      for (int64_t s = 0; s < 16; s += W) {
        oacc[r] = xsimd::fma(Batch::load_aligned(scl + s), Batch::load_aligned(sums + s), oacc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = xsimd::hadd(acc[r]) - 32.0f * xsimd::hadd(oacc[r]);
}

template <int R>
inline void KQuantRows(QuantKind kind, int64_t k, const float* xp, const uint8_t* const rows[R],
                       float out[R]) {
  if (kind == QuantKind::kQ4_K) {
    Q4KRows<R>(k, xp, rows, out);
  } else {
    Q6KRows<R>(k, xp, rows, out);
  }
}

// Outputs j0..j1 of the m rows of permuted x (xp, PermutedRow(k) floats a
// row), K-quants.
void GemvKQuantBlock(int64_t m, int64_t j0, int64_t j1, int64_t k, const float* xp,
                     const QuantMatrix& w, const float* bias, float* y, int64_t ldy) {
  for (int64_t i = 0; i < m; ++i) {
    const float* xr = xp + i * PermutedRow(k);
    float* yr = y + i * ldy;
    const Quartets blocks(j0, j1);
    for (int64_t g = 0; g < blocks.blocks(); ++g) {
      int64_t js[4];
      const uint8_t* ws[4];
      blocks.Rows(g, w.data, w.ld, js, ws);
      float s[4];
      KQuantRows<4>(w.kind, k, xr, ws, s);
      for (int q = 0; q < 4; ++q) yr[js[q]] = s[q] + (bias ? bias[js[q]] : 0.0f);
    }
    for (int64_t j = blocks.rest(); j < j1; ++j) {
      const uint8_t* wr[1] = {w.data + j * w.ld};
      float s[1];
      KQuantRows<1>(w.kind, k, xr, wr, s);
      yr[j] = s[0] + (bias ? bias[j] : 0.0f);
    }
  }
}

#if ATTNLAB_QUANT_INT
// ---- Q8_0 and Q4_0: integer dot products (see the header comment) ----
//
// x as two int16 planes a block (IntX): x ≈ sx·(h + l/2^15), h = round(x/sx)
// with sx = max|x_b|/32767, l = round((x − sx·h)·2^15/sx) (|l| <= 2^14 + 1):
// about 31 significant bits a block, so the products equal x·w to about
// float32's rounding (one int16 plane alone, 15 bits, moved a tiny model's
// logits by up to 5e-4 relative: past the 1e-4 of issue 36). A row: each
// block's 32 h then its 32 l (int16), then the block scales sx (float) and
// the Q4_0 offsets 8·Σh, 8·Σl (int32 pairs): IntRow(k) floats a row, 64-byte
// aligned.
inline int64_t IntRow(int64_t k) { return RoundUp16(k + 3 * (k / kQuantBlock)); }

struct IntX {
  const int16_t* q;      // block b: h at q + 64b, l at q + 64b + 32
  const float* sx;       // one a block
  const int32_t* corr;   // 8·Σh, 8·Σl a block
};
inline IntX IntXRow(const float* base, int64_t k) {
  const auto* q = reinterpret_cast<const int16_t*>(base);
  const float* sx = base + k;
  return {q, sx, reinterpret_cast<const int32_t*>(sx + k / kQuantBlock)};
}

// One row of x split block by block as above (an all-zero block: sx 0, h and
// l 0). Plain code in double: k values a call against n·k weights.
void QuantizeX(int64_t k, const float* x, float* out) {
  auto* q = reinterpret_cast<int16_t*>(out);
  float* sx = out + k;
  auto* corr = reinterpret_cast<int32_t*>(sx + k / kQuantBlock);
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    const float* xb = x + b * kQuantBlock;
    float mx = 0.0f;
    for (int64_t i = 0; i < kQuantBlock; ++i) mx = std::max(mx, std::fabs(xb[i]));
    const float s = mx / 32767.0f;
    const double inv = s > 0.0f ? 1.0 / static_cast<double>(s) : 0.0;
    int32_t sh = 0, sl = 0;
    for (int64_t i = 0; i < kQuantBlock; ++i) {
      const double v = static_cast<double>(xb[i]) * inv;  // |v| <= 32767·(1 + 2^-23)
      const double h = std::min(32767.0, std::max(-32767.0, std::nearbyint(v)));
      const double l = std::min(32767.0, std::max(-32767.0, std::nearbyint((v - h) * 32768.0)));
      q[64 * b + i] = static_cast<int16_t>(h);
      q[64 * b + 32 + i] = static_cast<int16_t>(l);
      sh += static_cast<int32_t>(h);
      sl += static_cast<int32_t>(l);
    }
    sx[b] = s;
    corr[2 * b] = 8 * sh;
    corr[2 * b + 1] = 8 * sl;
  }
}

// Bytes 8..15 of v widened to int16, signed (Q8_0) or unsigned (Q4_0's
// nibbles): one wasm extend_high; two SSE operations natively.
inline __m128i WidenHighS(__m128i v) {
#if defined(__wasm_simd128__)
  return (__m128i)wasm_i16x8_extend_high_i8x16((v128_t)v);
#else
  return _mm_cvtepi8_epi16(_mm_unpackhi_epi64(v, v));
#endif
}
inline __m128i WidenHighU(__m128i v) {
#if defined(__wasm_simd128__)
  return (__m128i)wasm_u16x8_extend_high_u8x16((v128_t)v);
#else
  return _mm_unpackhi_epi8(v, _mm_setzero_si128());
#endif
}

// One block's Σ h·q_w and Σ l·q_w, each as four int32 lanes (each lane the
// sum of 8 products of at most 2^15·2^7: no overflow). Q4_0 gives Σ h·nib
// (the offset −8 comes off later, as 8·Σh). xq: the block's 32 h then 32 l.
template <QuantKind K>
inline void BlockDot(const uint8_t* block, const int16_t* xq, __m128i* hi, __m128i* lo) {
  __m128i w[4];
  if (K == QuantKind::kQ8_0) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 18));
    w[0] = _mm_cvtepi8_epi16(a);
    w[1] = WidenHighS(a);
    w[2] = _mm_cvtepi8_epi16(c);
    w[3] = WidenHighS(c);
  } else {
    // Byte i holds value i (low nibble) and value i + 16 (high nibble).
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
    const __m128i m4 = _mm_set1_epi8(15);
    const __m128i lo4 = _mm_and_si128(v, m4), hi4 = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
    w[0] = _mm_cvtepu8_epi16(lo4);
    w[1] = WidenHighU(lo4);
    w[2] = _mm_cvtepu8_epi16(hi4);
    w[3] = WidenHighU(hi4);
  }
  const auto* x = reinterpret_cast<const __m128i*>(xq);
  *hi = _mm_add_epi32(_mm_add_epi32(_mm_madd_epi16(_mm_load_si128(x), w[0]), _mm_madd_epi16(_mm_load_si128(x + 1), w[1])),
                      _mm_add_epi32(_mm_madd_epi16(_mm_load_si128(x + 2), w[2]), _mm_madd_epi16(_mm_load_si128(x + 3), w[3])));
  *lo = _mm_add_epi32(_mm_add_epi32(_mm_madd_epi16(_mm_load_si128(x + 4), w[0]), _mm_madd_epi16(_mm_load_si128(x + 5), w[1])),
                      _mm_add_epi32(_mm_madd_epi16(_mm_load_si128(x + 6), w[2]), _mm_madd_epi16(_mm_load_si128(x + 7), w[3])));
}

// Lane r = the sum of the lanes of v_r: four dots to one vector.
inline __m128i Sum4(__m128i a, __m128i b, __m128i c, __m128i d) {
  const __m128i ab = _mm_add_epi32(_mm_unpacklo_epi32(a, b), _mm_unpackhi_epi32(a, b));
  const __m128i cd = _mm_add_epi32(_mm_unpacklo_epi32(c, d), _mm_unpackhi_epi32(c, d));
  return _mm_add_epi32(_mm_unpacklo_epi64(ab, cd), _mm_unpackhi_epi64(ab, cd));
}

// Four rows of W against one x row: out[r] = Σ_blocks d_r·sx·(Σh·q_w +
// 2^-15·Σl·q_w). Per block the four rows' dots go to one vector a plane
// (Sum4), converted once and scaled by (d_0..d_3)·sx.
template <QuantKind K>
inline void IntRows4(int64_t k, const IntX& x, const uint8_t* const rows[4], float out[4]) {
  constexpr int64_t kBytes = K == QuantKind::kQ8_0 ? 34 : 18;
  const __m128 lo_scale = _mm_set1_ps(0x1p-15f);
  const uint8_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
  __m128 acc = _mm_setzero_ps();
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    const int16_t* xq = x.q + 64 * b;
    const int64_t o = b * kBytes;
    // (named, not arrays: an array of vectors stayed in memory in wasm)
    __m128i h0, l0, h1, l1, h2, l2, h3, l3;
    BlockDot<K>(r0 + o, xq, &h0, &l0);
    BlockDot<K>(r1 + o, xq, &h1, &l1);
    BlockDot<K>(r2 + o, xq, &h2, &l2);
    BlockDot<K>(r3 + o, xq, &h3, &l3);
    __m128i sh = Sum4(h0, h1, h2, h3), sl = Sum4(l0, l1, l2, l3);
    if (K == QuantKind::kQ4_0) {
      sh = _mm_sub_epi32(sh, _mm_set1_epi32(x.corr[2 * b]));
      sl = _mm_sub_epi32(sl, _mm_set1_epi32(x.corr[2 * b + 1]));
    }
    const __m128 dot = _mm_add_ps(_mm_cvtepi32_ps(sh), _mm_mul_ps(_mm_cvtepi32_ps(sl), lo_scale));
    const __m128 d = _mm_setr_ps(Scale(r0 + o), Scale(r1 + o), Scale(r2 + o), Scale(r3 + o));
    acc = _mm_add_ps(acc, _mm_mul_ps(dot, _mm_mul_ps(d, _mm_set1_ps(x.sx[b]))));
  }
  _mm_storeu_ps(out, acc);
}

template <QuantKind K>
inline float IntRow1(int64_t k, const IntX& x, const uint8_t* row) {
  constexpr int64_t kBytes = K == QuantKind::kQ8_0 ? 34 : 18;
  const __m128 lo_scale = _mm_set1_ps(0x1p-15f);
  __m128 acc = _mm_setzero_ps();
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    __m128i h, l;
    BlockDot<K>(row + b * kBytes, x.q + 64 * b, &h, &l);
    if (K == QuantKind::kQ4_0) {
      h = _mm_sub_epi32(h, _mm_cvtsi32_si128(x.corr[2 * b]));
      l = _mm_sub_epi32(l, _mm_cvtsi32_si128(x.corr[2 * b + 1]));
    }
    const __m128 dot = _mm_add_ps(_mm_cvtepi32_ps(h), _mm_mul_ps(_mm_cvtepi32_ps(l), lo_scale));
    acc = _mm_add_ps(acc, _mm_mul_ps(dot, _mm_set1_ps(Scale(row + b * kBytes) * x.sx[b])));
  }
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, acc);
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

// Outputs j0..j1 of the m quantized x rows (xs, IntRow(k) floats a row).
template <QuantKind K>
void GemvIntBlock(int64_t m, int64_t j0, int64_t j1, int64_t k, const float* xs,
                  const QuantMatrix& w, const float* bias, float* y, int64_t ldy) {
  for (int64_t i = 0; i < m; ++i) {
    const IntX xr = IntXRow(xs + i * IntRow(k), k);
    float* yr = y + i * ldy;
    const Quartets blocks(j0, j1);
    for (int64_t g = 0; g < blocks.blocks(); ++g) {
      int64_t js[4];
      const uint8_t* ws[4];
      blocks.Rows(g, w.data, w.ld, js, ws);
      float s[4];
      IntRows4<K>(k, xr, ws, s);
      for (int q = 0; q < 4; ++q) yr[js[q]] = s[q] + (bias ? bias[js[q]] : 0.0f);
    }
    for (int64_t j = blocks.rest(); j < j1; ++j) {
      yr[j] = IntRow1<K>(k, xr, w.data + j * w.ld) + (bias ? bias[j] : 0.0f);
    }
  }
}

void GemvIntRange(int64_t m, int64_t j0, int64_t j1, int64_t k, const float* xs,
                  const QuantMatrix& w, const float* bias, float* y, int64_t ldy) {
  if (w.kind == QuantKind::kQ8_0) {
    GemvIntBlock<QuantKind::kQ8_0>(m, j0, j1, k, xs, w, bias, y, ldy);
  } else {
    GemvIntBlock<QuantKind::kQ4_0>(m, j0, j1, k, xs, w, bias, y, ldy);
  }
}
constexpr bool kQuantInt = true;
#else
constexpr bool kQuantInt = false;
inline int64_t IntRow(int64_t) { return 0; }
#endif  // ATTNLAB_QUANT_INT

inline bool IsKQuant(QuantKind kind) { return kind == QuantKind::kQ4_K || kind == QuantKind::kQ6_K; }
}  // namespace

int64_t QuantGemvScratchFloats(int64_t m, int64_t k) {
  return kQuantSimd ? m * std::max(PermutedRow(k), IntRow(k)) : 0;
}

void GemvQuant(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
               const QuantMatrix& w, const float* bias, float* y, int64_t ldy, float* scratch) {
  const bool kquant = IsKQuant(w.kind);
  if (!kQuantSimd || (!kquant && !kQuantInt) || scratch == nullptr ||
      reinterpret_cast<uintptr_t>(scratch) % 64 != 0) {
    scalar::GemvQuant(m, n, k, x, ldx, w, bias, y, ldy, scratch);
    return;
  }
  const int threads = internal::ThreadsFor(m * n * k, kMinParallelGemv);
  if (kquant) {
    for (int64_t i = 0; i < m; ++i) PermuteXK(w.kind, k, x + i * ldx, scratch + i * PermutedRow(k));
    if (threads == 1) {
      GemvKQuantBlock(m, 0, n, k, scratch, w, bias, y, ldy);
      return;
    }
    gemv_util::GemvRanges(n, 64, threads, [&](int64_t j0, int64_t j1) {
      GemvKQuantBlock(m, j0, j1, k, scratch, w, bias, y, ldy);
    });
    return;
  }
#if ATTNLAB_QUANT_INT
  for (int64_t i = 0; i < m; ++i) QuantizeX(k, x + i * ldx, scratch + i * IntRow(k));
  if (threads == 1) {
    GemvIntRange(m, 0, n, k, scratch, w, bias, y, ldy);
    return;
  }
  gemv_util::GemvRanges(n, 64, threads, [&](int64_t j0, int64_t j1) {
    GemvIntRange(m, j0, j1, k, scratch, w, bias, y, ldy);
  });
#endif
}

int64_t QuantGemmScratchFloats(int64_t k, int64_t n) {
  const int64_t nc = GemmChunk(k, n);
  return RoundUp16(nc * k) + PackedFloats(k, nc);
}

void GemmQuant(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const QuantMatrix& w, const float* bias, float* c, int64_t ldc, float* scratch) {
  GemmQuantChunks(m, n, k, a, lda, w, bias, c, ldc, scratch, simd::PackB,
                  [](int64_t mm, int64_t nn, int64_t kk, const float* aa, int64_t la, const PackedB& b,
                     const float* bi, float* cc, int64_t lc) { simd::Gemm(mm, nn, kk, aa, la, b, bi, cc, lc); });
}
}  // namespace simd
#endif  // ATTNLAB_SIMD

}  // namespace kernels
}  // namespace attnlab

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
// GEMM (prefill, many rows): the SIMD set hands the blocks to its Gemm as a
// PackedB whose `quant` is set; gemm.cpp runs them as it runs 16-bit
// panels: slices of whole panel pairs dequantized (DequantPanels, below:
// four rows' Q8_0/Q4_0 bytes transposed as bytes, widened to int32 in
// SSE4.1/SIMD128, converted, × the rows' d: about 1.6 SIMD operations a
// weight) into a float scratch of the thread that multiplies them, A packed
// once, threads over column chunks. So every weight is dequantized once a
// call, on every thread, and the product is the F32 GEMM's (wasm, M 128,
// K 576/1536, bench module's benchGemv: 1.01–1.03× the F16 GEMM, which
// widens its panels the same way). The scalar set dequantizes column chunks
// into rows, then PackB.
//   Integer dots instead (x quantized to int16 a block, i32x4.dot_i16x8_s,
//   as llama.cpp's q8_0 × q8_0 with int8 x) were tried for the GEMV: one
//   int16 plane of x ran 0.68× (Q8_0) / 0.80× (Q4_0) the float GEMV but
//   moved the GGUF models' logits by 1.4e-4–4.7e-4 from their float64
//   references (issue 36's bound: 1e-4); two planes (x ≈ sx·(h + l/2^15),
//   about 31 bits) kept them but ran 1.11× / 1.24× the float GEMV in V8.
//   (A/B in one Node process, 1 thread, SmolLM2-shaped 30 layers; git
//   history: the commit "quant: Q8_0/Q4_0 GEMV over integer dots".)
// K-quants (Q4_K, Q6_K; 256 values a super-block): the GEMV reads the
//   quants in place as Q4_0's (nibbles masked; Q6_K's 6-bit values put
//   together from ql and qh by shifts and masks), with x permuted into the
//   loads' order; each sub-block's scale multiplies its lanes' sums once,
//   and Q4_K's mins (dmin·m·Σ x) and Q6_K's offset (32·d·sc·Σ x) come off
//   once a super-block from the sub-block sums of x kept in the scratch.
//   The GEMM dequantizes them (the plain code) into the panels, as above.
// Scalar: the plain dot product with the dequantized weight, in k order.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/gemv_util.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"
#include "thread_pool.h"

// The SIMD GEMM's dequantization into panels uses SSE4.1 intrinsics (wasm
// SIMD128 through Emscripten's headers; xsimd 8.1 has no int8 widening).
#if ATTNLAB_SIMD && defined(__SSE4_1__)
#include <smmintrin.h>
#define ATTNLAB_QUANT_SSE 1
#else
#define ATTNLAB_QUANT_SSE 0
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

// Where value v of a block meets its weight in the permuted x of one row
// (block by block, 32 floats each; Q4_0 on 8 lanes: pairs of blocks, 64).
//   Q8_0: a 32-bit load covers 4·kWidth values; extraction j (byte j of
//         each lane l) holds values 4l + j, placed at j·kWidth + l. The
//         bytes are flipped to q + 128 (XOR 0x80: unsigned) and read in
//         place as (q + 128)·2^(8j), x stored ×2^(−8j), and 128·Σ x taken
//         off once a block (corr), as the offset 8 of Q4_0 below.
//   Q4_0: a 16-byte block is 4 lanes of 8 nibbles; nibble t of lane l is
//         byte 4l + t/2's low (t even: value 4l + t/2) or high (value
//         4l + t/2 + 16) half. On 8 lanes lanes 4..7 hold the next block.
//         Nibbles are read in place (masked, not shifted: nib·2^(4t)), so
//         x is stored ×2^(−4t); and the offset 8 is taken off once a load,
//         Σ x·(nib − 8) = Σ x·nib − 8·Σ x, from the lane sums 8·Σ x stored
//         after the row (corr).
// 2^(−8j): the x of byte j (Q8_0), read in place.
constexpr float kByteScale[3] = {1.0f, 0x1p-8f, 0x1p-16f};
// 2^(−4t): the x of nibble t (Q4_0), read in place.
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

void PermuteX(QuantKind kind, int64_t k, const float* x, float* xp) {
  const int64_t blocks = k / kQuantBlock;
  if (kind == QuantKind::kQ4_K || kind == QuantKind::kQ6_K) {
    PermuteXK(kind, k, x, xp);
    return;
  }
  if (kind == QuantKind::kQ8_0) {
    const int64_t step = 4 * kWidth;
    float* corr = xp + k;
    std::fill(corr, corr + blocks * kWidth, 0.0f);
    for (int64_t c0 = 0; c0 < k; c0 += step) {
      for (int64_t l = 0; l < kWidth; ++l) {
        for (int64_t j = 0; j < 4; ++j) {
          const float v = x[c0 + 4 * l + j];
          // Byte j < 3 is read in place, as (q + 128)·2^(8j) (Int8Lane).
          xp[c0 + j * kWidth + l] = j < 3 ? v * kByteScale[j] : v;
          corr[(c0 / kQuantBlock) * kWidth + l] += 128.0f * v;
        }
      }
    }
    return;
  }
  const int64_t group = kWidth / 4;  // blocks a load
  const int64_t full = blocks / group * group;
  float* corr = xp + k;  // Q4Corrections
  for (int64_t b0 = 0; b0 < full; b0 += group) {
    const int64_t c0 = b0 * kQuantBlock;
    for (int64_t l = 0; l < kWidth; ++l) {
      const int64_t base = (l / 4) * kQuantBlock + 4 * (l % 4);
      float sum = 0.0f;
      for (int64_t t = 0; t < 8; ++t) {
        const float v = x[c0 + base + t / 2 + 16 * (t & 1)];
        sum += v;
        // Nibble t < 7 is read in place, as nib·2^(4t) (Q4Nibble): its x
        // carries 2^(−4t), so the product is x·nib exactly.
        xp[c0 + t * kWidth + l] = t < 7 ? v * kNibbleScale[t] : v;
      }
      corr[(b0 / group) * kWidth + l] = 8.0f * sum;
    }
  }
  // A last block without its pair stays in order (its scalar tail).
  std::memcpy(xp + full * kQuantBlock, x + full * kQuantBlock,
              static_cast<size_t>((blocks - full) * kQuantBlock) * sizeof(float));
}

// Byte j (0..3) of each 32-bit lane of v (the quants XOR 0x80, q + 128)
// in place, (q + 128)·2^(8j), exact in float; the top one shifted down.
template <int kJ>
inline Batch Int8Lane(const I32& v) {
  if (kJ == 3) return xsimd::to_float(xsimd::bitwise_cast<I32>(xsimd::bitwise_cast<xsimd::batch<uint32_t, Arch>>(v) >> 24));
  return xsimd::to_float(v & I32(static_cast<int32_t>(0xffu << (8 * kJ))));
}
// Nibble t (0..7) of each lane in place, nib·2^(4t) (exact in float: 4
// significant bits); the top one shifted down (its in-place value would be
// negative as int32).
template <int kT>
inline Batch Nibble(const I32& u) {
  if (kT == 7) return xsimd::to_float(xsimd::bitwise_cast<I32>(xsimd::bitwise_cast<xsimd::batch<uint32_t, Arch>>(u) >> 28));
  return xsimd::to_float(u & I32(static_cast<int32_t>(15u << (4 * kT))));
}

// R rows of W (rows[r], outputs ys[r]) against one permuted x row: the sums
// Σ_blocks d·Σ x·q, returned in out[r] (before the bias).
template <int R>
void Q8Rows(int64_t k, const float* xp, const uint8_t* const rows[R], float out[R]) {
  constexpr int64_t kBytes = 34;
  constexpr int kLoads = static_cast<int>(kQuantBlock / (4 * kWidth));  // 2 (4 lanes) or 1
  Batch acc[R];
  for (int r = 0; r < R; ++r) acc[r] = Batch(0.0f);
  const int64_t blocks = k / kQuantBlock;
  for (int64_t b = 0; b < blocks; ++b) {
    const float* xb = xp + b * kQuantBlock;
    const Batch c = Batch::load_aligned(xp + k + b * kWidth);
    // One row's block at a time (one sum live, beside the R accumulators
    // and the block's x: within the ~13 registers V8 gives a function).
    for (int r = 0; r < R; ++r) {
      Batch sum(0.0f);
      for (int h = 0; h < kLoads; ++h) {
        const float* xh = xb + h * 4 * kWidth;
        const I32 u = I32::load_unaligned(reinterpret_cast<const int32_t*>(rows[r] + b * kBytes + 2 + h * 4 * kWidth)) ^
                      I32(static_cast<int32_t>(0x80808080u));
        sum = xsimd::fma(Batch::load_aligned(xh), Int8Lane<0>(u), sum);
        sum = xsimd::fma(Batch::load_aligned(xh + kWidth), Int8Lane<1>(u), sum);
        sum = xsimd::fma(Batch::load_aligned(xh + 2 * kWidth), Int8Lane<2>(u), sum);
        sum = xsimd::fma(Batch::load_aligned(xh + 3 * kWidth), Int8Lane<3>(u), sum);
      }
      acc[r] = xsimd::fma(sum - c, Batch(Scale(rows[r] + b * kBytes)), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r] = xsimd::hadd(acc[r]);
}

// One Q4_0 load: blocks b .. b + kWidth/4 − 1 of a row as 32-bit lanes, and
// their scales lane by lane.
inline void Q4Load(const uint8_t* row, int64_t b, I32* u, Batch* d) {
  constexpr int64_t kBytes = 18;
  if (kWidth == 4) {
    *u = I32::load_unaligned(reinterpret_cast<const int32_t*>(row + b * kBytes + 2));
    *d = Batch(Scale(row + b * kBytes));
    return;
  }
  alignas(64) int32_t lanes[kWidth];
  alignas(64) float scales[kWidth];
  for (int g = 0; g < kWidth / 4; ++g) {
    std::memcpy(lanes + 4 * g, row + (b + g) * kBytes + 2, 16);
    const float s = Scale(row + (b + g) * kBytes);
    for (int l = 0; l < 4; ++l) scales[4 * g + l] = s;
  }
  *u = I32::load_aligned(lanes);
  *d = Batch::load_aligned(scales);
}

template <int R>
void Q4Rows(int64_t k, const float* xp, const uint8_t* const rows[R], float out[R]) {
  const float* corr = xp + k;
  constexpr int64_t kBytes = 18;
  constexpr int64_t kGroup = kWidth / 4;  // blocks a load
  Batch acc[R];
  for (int r = 0; r < R; ++r) acc[r] = Batch(0.0f);
  const int64_t blocks = k / kQuantBlock, full = blocks / kGroup * kGroup;
  for (int64_t b = 0; b < full; b += kGroup) {
    const float* xb = xp + b * kQuantBlock;
    for (int r = 0; r < R; ++r) {  // (x from L1 again for each row, as Q8Rows)
      I32 u;
      Batch d;
      Q4Load(rows[r], b, &u, &d);
      Batch sum = Batch::load_aligned(xb) * Nibble<0>(u);
      sum = xsimd::fma(Batch::load_aligned(xb + kWidth), Nibble<1>(u), sum);
      sum = xsimd::fma(Batch::load_aligned(xb + 2 * kWidth), Nibble<2>(u), sum);
      sum = xsimd::fma(Batch::load_aligned(xb + 3 * kWidth), Nibble<3>(u), sum);
      sum = xsimd::fma(Batch::load_aligned(xb + 4 * kWidth), Nibble<4>(u), sum);
      sum = xsimd::fma(Batch::load_aligned(xb + 5 * kWidth), Nibble<5>(u), sum);
      sum = xsimd::fma(Batch::load_aligned(xb + 6 * kWidth), Nibble<6>(u), sum);
      sum = xsimd::fma(Batch::load_aligned(xb + 7 * kWidth), Nibble<7>(u), sum);
      acc[r] = xsimd::fma(sum - Batch::load_aligned(corr + (b / kGroup) * kWidth), d, acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    float s = xsimd::hadd(acc[r]);
    for (int64_t b = full; b < blocks; ++b) {  // a block without its pair (8 lanes)
      const uint8_t* block = rows[r] + b * kBytes;
      float t = 0.0f;
      for (int64_t i = 0; i < kQuantBlock; ++i) {
        t += xp[b * kQuantBlock + i] * static_cast<float>(QuantValue(QuantKind::kQ4_0, block, i));
      }
      s += t * Scale(block);
    }
    out[r] = s;
  }
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
inline void QuantRows(QuantKind kind, int64_t k, const float* xp, const uint8_t* const rows[R],
                      float out[R]) {
  switch (kind) {
    case QuantKind::kQ8_0: Q8Rows<R>(k, xp, rows, out); break;
    case QuantKind::kQ4_K: Q4KRows<R>(k, xp, rows, out); break;
    case QuantKind::kQ6_K: Q6KRows<R>(k, xp, rows, out); break;
    default: Q4Rows<R>(k, xp, rows, out); break;
  }
}

// Outputs j0..j1 of the m rows of permuted x (xp, k floats a row).
void GemvQuantBlock(int64_t m, int64_t j0, int64_t j1, int64_t k, const float* xp,
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
      QuantRows<4>(w.kind, k, xr, ws, s);
      for (int q = 0; q < 4; ++q) yr[js[q]] = s[q] + (bias ? bias[js[q]] : 0.0f);
    }
    for (int64_t j = blocks.rest(); j < j1; ++j) {
      const uint8_t* wr[1] = {w.data + j * w.ld};
      float s[1];
      QuantRows<1>(w.kind, k, xr, wr, s);
      yr[j] = s[0] + (bias ? bias[j] : 0.0f);
    }
  }
}
}  // namespace

int64_t QuantGemvScratchFloats(int64_t m, int64_t k) { return kQuantSimd ? m * PermutedRow(k) : 0; }

void GemvQuant(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
               const QuantMatrix& w, const float* bias, float* y, int64_t ldy, float* scratch) {
  if (!kQuantSimd || scratch == nullptr || reinterpret_cast<uintptr_t>(scratch) % 64 != 0) {
    scalar::GemvQuant(m, n, k, x, ldx, w, bias, y, ldy, scratch);
    return;
  }
  for (int64_t i = 0; i < m; ++i) PermuteX(w.kind, k, x + i * ldx, scratch + i * PermutedRow(k));
  const int threads = internal::ThreadsFor(m * n * k, kMinParallelGemv);
  if (threads == 1) {
    GemvQuantBlock(m, 0, n, k, scratch, w, bias, y, ldy);
    return;
  }
  gemv_util::GemvRanges(n, 64, threads, [&](int64_t j0, int64_t j1) {
    GemvQuantBlock(m, j0, j1, k, scratch, w, bias, y, ldy);
  });
}

namespace {
// ---- GEMM: blocks dequantized straight into the kernel set's panels ----
constexpr int64_t kPanel = 2 * kWidth;  // the GEMM's nr (gemm.cpp kNr)

// One block of a row (32 values; a K-quant super-block: 256) dequantized
// into y, as DequantizeBlock; block null: zeros.
inline void DequantBlockOrZero(QuantKind kind, const uint8_t* block, float* y) {
  if (block == nullptr) {
    std::fill(y, y + QuantBlockValues(kind), 0.0f);
  } else {
    DequantizeBlock(kind, block, y);
  }
}
}  // namespace

#if ATTNLAB_QUANT_SSE
namespace {
// A Q8_0/Q4_0 block's 32 values as int8: values 0..15 in v[0], 16..31 in v[1].
inline void BlockInt8(QuantKind kind, const uint8_t* block, __m128i v[2]) {
  if (block == nullptr) {
    v[0] = v[1] = _mm_setzero_si128();
  } else if (kind == QuantKind::kQ8_0) {
    v[0] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
    v[1] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 18));
  } else {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
    const __m128i m4 = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    v[0] = _mm_sub_epi8(_mm_and_si128(q, m4), eight);
    v[1] = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m4), eight);
  }
}

// Int32 lanes (|v| < 2^22) to float by the bits of 2^23 + 2^22 + v, less
// 2^23 + 2^22: exact. (LLVM folds sext + sitofp of int8 lanes into a
// conversion it scalarizes in wasm: 4 extract_lane and replace_lane.)
inline __m128 SmallToFloat(__m128i v) {
  return _mm_sub_ps(_mm_castsi128_ps(_mm_add_epi32(v, _mm_set1_epi32(0x4B400000))), _mm_set1_ps(12582912.0f));
}

// Four bytes per value of 4 rows (t: [a_i b_i c_i d_i] for values i..i+3)
// to four panel rows: each widened to int32, converted, × (d_a..d_d).
inline void StoreColumns(__m128i t, __m128 d, float* dst) {
  _mm_storeu_ps(dst, _mm_mul_ps(SmallToFloat(_mm_cvtepi8_epi32(t)), d));
  _mm_storeu_ps(dst + kPanel, _mm_mul_ps(SmallToFloat(_mm_cvtepi8_epi32(_mm_srli_si128(t, 4))), d));
  _mm_storeu_ps(dst + 2 * kPanel, _mm_mul_ps(SmallToFloat(_mm_cvtepi8_epi32(_mm_srli_si128(t, 8))), d));
  _mm_storeu_ps(dst + 3 * kPanel, _mm_mul_ps(SmallToFloat(_mm_cvtepi8_epi32(_mm_srli_si128(t, 12))), d));
}

// Q8_0/Q4_0: four rows' blocks transposed as bytes (unpack 8 then 16: 16
// bytes hold 4 values of the 4 rows), then widened, converted and scaled
// by the four rows' d in one vector: about 1.6 SIMD operations a weight.
void Int8Panels4(QuantKind kind, int64_t k, const uint8_t* const rows[4], float* dst) {
  const int64_t bb = QuantBlockBytes(kind);
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    __m128i a[2], bq[2], c[2], d[2];
    BlockInt8(kind, rows[0] ? rows[0] + b * bb : nullptr, a);
    BlockInt8(kind, rows[1] ? rows[1] + b * bb : nullptr, bq);
    BlockInt8(kind, rows[2] ? rows[2] + b * bb : nullptr, c);
    BlockInt8(kind, rows[3] ? rows[3] + b * bb : nullptr, d);
    auto scale = [&](int r) { return rows[r] ? Scale(rows[r] + b * bb) : 0.0f; };
    const __m128 dv = _mm_setr_ps(scale(0), scale(1), scale(2), scale(3));
    float* out = dst + b * kQuantBlock * kPanel;
    for (int h = 0; h < 2; ++h) {
      const __m128i ab_lo = _mm_unpacklo_epi8(a[h], bq[h]), cd_lo = _mm_unpacklo_epi8(c[h], d[h]);
      const __m128i ab_hi = _mm_unpackhi_epi8(a[h], bq[h]), cd_hi = _mm_unpackhi_epi8(c[h], d[h]);
      float* o = out + 16 * h * kPanel;
      StoreColumns(_mm_unpacklo_epi16(ab_lo, cd_lo), dv, o);
      StoreColumns(_mm_unpackhi_epi16(ab_lo, cd_lo), dv, o + 4 * kPanel);
      StoreColumns(_mm_unpacklo_epi16(ab_hi, cd_hi), dv, o + 8 * kPanel);
      StoreColumns(_mm_unpackhi_epi16(ab_hi, cd_hi), dv, o + 12 * kPanel);
    }
  }
}
}  // namespace
#endif

// (simd.h) Four rows of W (four columns of a panel) at a time: Q8_0/Q4_0 by
// Int8Panels4; the K-quants block by block into a small buffer (the plain
// code), then 4×4 transposes into the panel rows (element by element
// without SSE4.1).
void DequantPanels(const QuantMatrix& w, int64_t k, int64_t j0, int64_t cols, float* out) {
  const int64_t bb = QuantBlockBytes(w.kind), bv = QuantBlockValues(w.kind);
  alignas(16) float tmp[4][kQuantSuper];
  const int64_t panels = (cols + kPanel - 1) / kPanel;
  for (int64_t p = 0; p < panels; ++p) {
    float* panel = out + p * k * kPanel;
    for (int64_t c4 = 0; c4 < kPanel; c4 += 4) {
      const uint8_t* rows[4];
      for (int r = 0; r < 4; ++r) {
        const int64_t c = p * kPanel + c4 + r;
        rows[r] = c < cols ? w.data + (j0 + c) * w.ld : nullptr;
      }
#if ATTNLAB_QUANT_SSE
      if (w.kind == QuantKind::kQ8_0 || w.kind == QuantKind::kQ4_0) {
        Int8Panels4(w.kind, k, rows, panel + c4);
        continue;
      }
#endif
      for (int64_t b = 0; b < k / bv; ++b) {
        for (int r = 0; r < 4; ++r) DequantBlockOrZero(w.kind, rows[r] ? rows[r] + b * bb : nullptr, tmp[r]);
        for (int64_t t = 0; t < bv; t += 4) {
          float* d = panel + (b * bv + t) * kPanel + c4;
#if ATTNLAB_QUANT_SSE
          __m128 r0 = _mm_load_ps(tmp[0] + t), r1 = _mm_load_ps(tmp[1] + t);
          __m128 r2 = _mm_load_ps(tmp[2] + t), r3 = _mm_load_ps(tmp[3] + t);
          _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
          _mm_storeu_ps(d, r0);
          _mm_storeu_ps(d + kPanel, r1);
          _mm_storeu_ps(d + 2 * kPanel, r2);
          _mm_storeu_ps(d + 3 * kPanel, r3);
#else
          for (int64_t i = 0; i < 4; ++i) {
            for (int r = 0; r < 4; ++r) d[i * kPanel + r] = tmp[r][t + i];
          }
#endif
        }
      }
    }
  }
}

// The GEMM itself (gemm.cpp GemmImpl) runs over the blocks as over 16-bit
// panels: slices of whole panel pairs dequantized into a float scratch of
// each thread (DequantPanels), A packed once, threads over column chunks.
int64_t QuantGemmScratchFloats(int64_t, int64_t) { return 16; }

void GemmQuant(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const QuantMatrix& w, const float* bias, float* c, int64_t ldc, float*) {
  PackedB b;
  b.quant = w;
  simd::Gemm(m, n, k, a, lda, b, bias, c, ldc);
}
}  // namespace simd
#endif  // ATTNLAB_SIMD

}  // namespace kernels
}  // namespace attnlab

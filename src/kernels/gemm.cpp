// GEMM: C[M, N] = A[M, K]·B[K, N] + bias, with B packed once into panels.
//
// SIMD: a register-tiled micro-kernel computes an MR×NR block of C with
// MR = 4 rows and NR = 2 vectors (8 columns on SSE4.1/SIMD128, 16 on AVX2,
// 32 on AVX-512): 8 accumulators + 2 B vectors + 1 broadcast fit the ~13
// v128 registers V8 gives a wasm function before spilling. Rows of A are
// processed in blocks of kMc so that the A block stays in L2 while every B
// panel streams through L1 (kMc, kKc below).
// Scalar: B is packed row-major (one panel of width N) and the loops are the
// plain i-k-j order.
// Threads (thread_pool.h): the SIMD product splits into row blocks × column
// chunks of whole panel pairs; products under kMinParallelWork run inline.
// 16-bit panels and GGML blocks (PackedB::half / quant) are widened to float
// panels a slice at a time, on the thread that multiplies them.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/simd.h"
#include "thread_pool.h"

namespace attnlab {
namespace kernels {

namespace {
#if ATTNLAB_SIMD
// A full panel of W in the torch layout (B(k, n) = src[n·sn + k], rows
// contiguous along k): four columns × four depths at a time, each a 4×4
// transpose (zip_lo / zip_hi of 4-float batches, as PackA); the other depths
// one at a time. A copy: the panel's values as the plain loop writes them.
void PackPanelTransposed(int64_t k, const float* src, int64_t sn, int64_t nr, float* dst) {
  using B4 = xsimd::batch<float, xsimd::sse4_1>;
  const int64_t k4 = k / 4 * 4;
  for (int64_t c0 = 0; c0 < nr; c0 += 4) {
    const float* s0 = src + c0 * sn;
    const float* s1 = s0 + sn;
    const float* s2 = s1 + sn;
    const float* s3 = s2 + sn;
    for (int64_t kk = 0; kk < k4; kk += 4) {
      const B4 x0 = B4::load_unaligned(s0 + kk), x1 = B4::load_unaligned(s1 + kk);
      const B4 x2 = B4::load_unaligned(s2 + kk), x3 = B4::load_unaligned(s3 + kk);
      const B4 t0 = xsimd::zip_lo(x0, x2), t1 = xsimd::zip_hi(x0, x2);
      const B4 t2 = xsimd::zip_lo(x1, x3), t3 = xsimd::zip_hi(x1, x3);
      float* d = dst + kk * nr + c0;
      xsimd::zip_lo(t0, t2).store_unaligned(d);
      xsimd::zip_hi(t0, t2).store_unaligned(d + nr);
      xsimd::zip_lo(t1, t3).store_unaligned(d + 2 * nr);
      xsimd::zip_hi(t1, t3).store_unaligned(d + 3 * nr);
    }
    for (int64_t kk = k4; kk < k; ++kk) {
      float* d = dst + kk * nr + c0;
      d[0] = s0[kk];
      d[1] = s1[kk];
      d[2] = s2[kk];
      d[3] = s3[kk];
    }
  }
}
#endif

PackedB PackPanels(int64_t k, int64_t n, const float* src, int64_t sk,
                   int64_t sn, int64_t nr, float* out) {
  const int64_t panels = (n + nr - 1) / nr;
  const int64_t panel_stride = k * nr;
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t n0 = p * nr;
    const int64_t cols = std::min(nr, n - n0);
    float* dst = out + p * panel_stride;
#if ATTNLAB_SIMD
    if (sk == 1 && nr % 4 == 0 && cols == nr && sn >= k) {
      PackPanelTransposed(k, src + n0 * sn, sn, nr, dst);
      continue;
    }
#endif
    for (int64_t kk = 0; kk < k; ++kk) {
      const float* s = src + kk * sk + n0 * sn;
      float* d = dst + kk * nr;
      if (sn == 1) {
        std::memcpy(d, s, static_cast<size_t>(cols) * sizeof(float));
      } else {
        for (int64_t c = 0; c < cols; ++c) d[c] = s[c * sn];
      }
      for (int64_t c = cols; c < nr; ++c) d[c] = 0.0f;
    }
  }
  return PackedB{out, nr, panel_stride};
}
}  // namespace

// ---------------------------------------------------------------------------
namespace scalar {

int64_t GemmNr(int64_t n) { return n > 0 ? n : 1; }
int64_t PackedFloats(int64_t k, int64_t n) { return k * n; }

PackedB PackB(int64_t k, int64_t n, const float* src, int64_t sk, int64_t sn,
              float* out) {
  return PackPanels(k, n, src, sk, sn, GemmNr(n), out);
}

void Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const PackedB& b, const float* bias, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = bias ? bias[j] : 0.0f;
  }
  GemmAcc(m, n, k, a, lda, b, c, ldc);
}

// Gemm's chain for every element (bias, then k in order), W read in place.
void GemmT(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* w, int64_t ldw, const float* bias, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* crow = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) crow[j] = bias ? bias[j] : 0.0f;
    for (int64_t kk = 0; kk < k; ++kk) {
      const float av = a[i * lda + kk];
      for (int64_t j = 0; j < n; ++j) crow[j] += av * w[j * ldw + kk];
    }
  }
}

void GemmAcc(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
             const PackedB& b, float* c, int64_t ldc) {
  if (b.half != nullptr) {
    for (int64_t i = 0; i < m; ++i) {
      float* crow = c + i * ldc;
      const float* arow = a + i * lda;
      for (int64_t kk = 0; kk < k; ++kk) {
        for (int64_t j = 0; j < n; ++j) crow[j] += arow[kk] * HalfToFloat(b.half[HalfOffset(b, kk, j)], b.kind);
      }
    }
    return;
  }
  for (int64_t i = 0; i < m; ++i) {
    float* crow = c + i * ldc;
    const float* arow = a + i * lda;
    for (int64_t p = 0; p * b.nr < n; ++p) {
      const int64_t j0 = p * b.nr;
      const int64_t cols = std::min(b.nr, n - j0);
      const float* panel = b.data + p * b.panel_stride;
      for (int64_t kk = 0; kk < k; ++kk) {
        const float av = arow[kk];
        const float* brow = panel + kk * b.nr;
        for (int64_t j = 0; j < cols; ++j) crow[j0 + j] += av * brow[j];
      }
    }
  }
}

}  // namespace scalar

// ---------------------------------------------------------------------------
#if ATTNLAB_SIMD
namespace simd {
namespace {

constexpr int kMr = 4;
constexpr int kNr = 2 * kWidth;
// Rows of A per block and depth per block: the packed A block (kMc·kKc
// floats, 384 KiB) stays in L2 (512 KiB a core here) and a B micro-panel
// (kKc·NR floats, 24 KiB on SIMD128) in L1. kMc = 128 takes a 128-token
// prefill in one row block, so each weight streams from memory once per
// product (a model's weights are far larger than the caches), and kKc = 768
// keeps GPT-2-small's K = 768 products in one depth block (C is not stored
// and reloaded between blocks). Against 64 × 512: a GPT-2-small prefill of
// 128 tokens 7–9% faster (bench/lm-bench.mjs shape, interleaved runs).
// The results do not depend on either: every element of C is the same chain.
constexpr int64_t kMc = 128;
constexpr int64_t kKc = 768;

// Packs rows [0, rows) × depth [0, kc) of A into micro-panels of kMr rows,
// k-major: out[(r / kMr) * kc * kMr + k * kMr + r % kMr]. Missing rows are 0.
// Four full rows are PackPanelTransposed's panel of four columns (4×4
// transposes: wasm shuffles), the rest one value at a time.
void PackA(int64_t rows, int64_t kc, const float* a, int64_t lda, float* out) {
  static_assert(kMr == 4, "PackA's fast path is PackPanelTransposed's 4-column panel");
  for (int64_t r0 = 0; r0 < rows; r0 += kMr) {
    float* dst = out + (r0 / kMr) * kc * kMr;
    const int64_t valid = std::min<int64_t>(kMr, rows - r0);
    if (valid == kMr) {  // the layout of a 4-column panel of the torch layout
      PackPanelTransposed(kc, a + r0 * lda, lda, kMr, dst);
      continue;
    }
    for (int r = 0; r < kMr; ++r) {
      if (r < valid) {
        const float* src = a + (r0 + r) * lda;
        for (int64_t k = 0; k < kc; ++k) dst[k * kMr + r] = src[k];
      } else {
        for (int64_t k = 0; k < kc; ++k) dst[k * kMr + r] = 0.0f;
      }
    }
  }
}

// A 64-byte aligned scratch of at least `floats`, one per thread (`slot`: a
// thread_local vector of its caller), kept for the next call.
float* ThreadScratch(std::vector<float>& slot, int64_t floats) {
  const size_t need = static_cast<size_t>(floats + 16);
  if (slot.size() < need) slot.resize(need);
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(slot.data()) + 63) & ~uintptr_t{63});
}

// A [M, K] packed whole, once for the tasks of a threaded product: row block
// i0 (kMc rows, the last fewer), depth block k0, as PackA lays it out, at
// PackedAOffset; PackedAFloats in all.
inline int64_t RoundRows(int64_t rows) { return (rows + kMr - 1) / kMr * kMr; }
inline int64_t PackedAOffset(int64_t i0, int64_t rows, int64_t k0, int64_t k) {
  return i0 * k + k0 * RoundRows(rows);
}
inline int64_t PackedAFloats(int64_t m, int64_t k) { return (m / kMc) * kMc * k + RoundRows(m % kMc) * k; }
void PackAllA(int64_t m, int64_t k, const float* a, int64_t lda, float* out) {
  for (int64_t i0 = 0; i0 < m; i0 += kMc) {
    const int64_t rows = std::min(kMc, m - i0);
    for (int64_t k0 = 0; k0 < k; k0 += kKc) {
      PackA(rows, std::min(kKc, k - k0), a + i0 * lda + k0, lda, out + PackedAOffset(i0, rows, k0, k));
    }
  }
}

// C[R, cols] (+)= Apanel[R, kc]·Bpanel[kc, NR]; cols <= NR.
// first: start from the bias (or 0); otherwise accumulate onto C.
// R <= kMr rows: the M tail runs with R = its row count, so no work is spent
// on the zero rows that pad the last micro-panel.
// Not inlined: V8 allocates registers per function, and the kernel's loop
// keeps its 8 accumulators in registers only in a function of its own.
// The k loop runs on the B pointer, not a counter: 10-20% faster products
// (GPT-2-small's shapes, M = 128), as TurboFan then keeps no counter and
// loop bound (it had reloaded the bound from the stack every step). Written
// unrolled by 2 it spills (1.5-1.9x slower).
template <int R>
__attribute__((noinline)) void MicroKernel(int kc, const float* ap, const float* bp,
                        const float* bias, bool first, float* c, int64_t ldc,
                        int cols) {
  Batch acc0[R];
  Batch acc1[R];
  const bool full = cols == kNr;
  if (first) {
    Batch b0(0.0f), b1(0.0f);
    if (bias != nullptr) {
      alignas(64) float tmp[kNr] = {};
      for (int j = 0; j < cols; ++j) tmp[j] = bias[j];
      b0 = Batch::load_aligned(tmp);
      b1 = Batch::load_aligned(tmp + kWidth);
    }
    for (int r = 0; r < R; ++r) {
      acc0[r] = b0;
      acc1[r] = b1;
    }
  } else if (full) {
    for (int r = 0; r < R; ++r) {
      acc0[r] = Batch::load_unaligned(c + r * ldc);
      acc1[r] = Batch::load_unaligned(c + r * ldc + kWidth);
    }
  } else {
    alignas(64) float tmp[kNr];
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < kNr; ++j) tmp[j] = (j < cols) ? c[r * ldc + j] : 0.0f;
      acc0[r] = Batch::load_aligned(tmp);
      acc1[r] = Batch::load_aligned(tmp + kWidth);
    }
  }

  // The loop runs on the B pointer (no separate counter to keep in step).
  for (const float* const bend = bp + static_cast<int64_t>(kc) * kNr; bp != bend;) {
    const Batch b0 = Batch::load_aligned(bp);
    const Batch b1 = Batch::load_aligned(bp + kWidth);
    for (int r = 0; r < R; ++r) {
      const Batch av(ap[r]);
      acc0[r] = xsimd::fma(av, b0, acc0[r]);
      acc1[r] = xsimd::fma(av, b1, acc1[r]);
    }
    ap += kMr;
    bp += kNr;
  }

  if (full) {
    for (int r = 0; r < R; ++r) {
      acc0[r].store_unaligned(c + r * ldc);
      acc1[r].store_unaligned(c + r * ldc + kWidth);
    }
  } else {
    alignas(64) float tmp[kNr];
    for (int r = 0; r < R; ++r) {
      acc0[r].store_aligned(tmp);
      acc1[r].store_aligned(tmp + kWidth);
      for (int j = 0; j < cols; ++j) c[r * ldc + j] = tmp[j];
    }
  }
}

// The 1- and 2-row tails over two adjacent panels at once: 2·R·2 independent
// accumulator chains instead of 2·R, so a short M (e.g. the tutorial's
// B·L = 10 rows) does not leave its last rows latency-bound.
template <int R>
__attribute__((noinline)) void MicroKernelWide(int kc, const float* ap,
                                               const float* bp,
                                               int64_t panel_stride,
                                               const float* bias, bool first,
                                               float* c, int64_t ldc, int cols) {
  constexpr int kCols = 2 * kNr;
  Batch acc[R][4];
  const bool full = cols == kCols;
  alignas(64) float tmp[kCols];
  if (first) {
    for (int j = 0; j < kCols; ++j) tmp[j] = (bias != nullptr && j < cols) ? bias[j] : 0.0f;
    for (int r = 0; r < R; ++r) {
      for (int v = 0; v < 4; ++v) acc[r][v] = Batch::load_aligned(tmp + v * kWidth);
    }
  } else {
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < kCols; ++j) tmp[j] = j < cols ? c[r * ldc + j] : 0.0f;
      for (int v = 0; v < 4; ++v) acc[r][v] = Batch::load_aligned(tmp + v * kWidth);
    }
  }
  const float* bq = bp + panel_stride;
  for (const float* const bend = bp + static_cast<int64_t>(kc) * kNr; bp != bend;) {
    const Batch b0 = Batch::load_aligned(bp);
    const Batch b1 = Batch::load_aligned(bp + kWidth);
    const Batch b2 = Batch::load_aligned(bq);
    const Batch b3 = Batch::load_aligned(bq + kWidth);
    for (int r = 0; r < R; ++r) {
      const Batch av(ap[r]);
      acc[r][0] = xsimd::fma(av, b0, acc[r][0]);
      acc[r][1] = xsimd::fma(av, b1, acc[r][1]);
      acc[r][2] = xsimd::fma(av, b2, acc[r][2]);
      acc[r][3] = xsimd::fma(av, b3, acc[r][3]);
    }
    ap += kMr;
    bp += kNr;
    bq += kNr;
  }
  for (int r = 0; r < R; ++r) {
    if (full) {
      for (int v = 0; v < 4; ++v) acc[r][v].store_unaligned(c + r * ldc + v * kWidth);
    } else {
      for (int v = 0; v < 4; ++v) acc[r][v].store_aligned(tmp + v * kWidth);
      for (int j = 0; j < cols; ++j) c[r * ldc + j] = tmp[j];
    }
  }
}

}  // namespace

int64_t GemmNr(int64_t) { return kNr; }
int64_t PackedFloats(int64_t k, int64_t n) {
  return ((n + kNr - 1) / kNr) * kNr * k;
}

PackedB PackB(int64_t k, int64_t n, const float* src, int64_t sk, int64_t sn,
              float* out) {
  return PackPanels(k, n, src, sk, sn, kNr, out);
}

namespace {
// Rows [i_begin, i_end) of C in blocks of kMc, columns [j_begin, j_end);
// j_begin is a multiple of 2·NR (a pair of panels, so the 1- and 2-row tails
// pair the same panels as in the unsplit product).
// The row-block loop is in here, around the micro-kernel loops, rather than
// in the callers: V8's TurboFan unrolls a wasm loop more the deeper it is
// nested (about min((depth + 1)·50 / size, 5) times), and with this loop
// outside the micro-kernel's k loop was unrolled 3 times instead of 4 and the
// single-threaded product ran ~2-4% slower (wasm-objdump: the same wasm
// loop; --print-wasm-code: 24 instead of 32 mulps per unrolled body).
//
// apacked: A already packed by PackAllA (rows from 0, i_begin a multiple of
// kMc), shared by the tasks of one product; null: each block packed here.
void GemmBlock(int64_t i_begin, int64_t i_end, int64_t j_begin, int64_t j_end,
               int64_t k, const float* a, int64_t lda, const PackedB& b,
               const float* bias, bool accumulate, float* c, int64_t ldc,
               const float* apacked = nullptr) {
  alignas(64) float local[kMc * kKc];
  const int64_t n = j_end;
  for (int64_t i0 = i_begin; i0 < i_end; i0 += kMc) {
    const int64_t rows = std::min(kMc, i_end - i0);
    for (int64_t k0 = 0; k0 < k; k0 += kKc) {
      const int kc = static_cast<int>(std::min(kKc, k - k0));
      const float* apack = apacked != nullptr ? apacked + PackedAOffset(i0, rows, k0, k) : local;
      if (apacked == nullptr) PackA(rows, kc, a + i0 * lda + k0, lda, local);
      const bool first = k0 == 0 && !accumulate;
      const int64_t full_rows = rows / kMr * kMr;
      const int64_t tail = rows - full_rows;
      for (int64_t j0 = j_begin; j0 < n; j0 += kNr) {
        const int cols = static_cast<int>(std::min<int64_t>(kNr, n - j0));
        const float* bp = b.data + (j0 / kNr) * b.panel_stride + k0 * kNr;
        const float* bj = bias ? bias + j0 : nullptr;
        for (int64_t r0 = 0; r0 < full_rows; r0 += kMr) {
          MicroKernel<4>(kc, apack + (r0 / kMr) * kc * kMr, bp, bj, first,
                         c + (i0 + r0) * ldc + j0, ldc, cols);
        }
        if (tail == 3) {
          MicroKernel<3>(kc, apack + (full_rows / kMr) * kc * kMr, bp, bj, first,
                         c + (i0 + full_rows) * ldc + j0, ldc, cols);
        }
      }
      if (tail == 1 || tail == 2) {
        const float* ap = apack + (full_rows / kMr) * kc * kMr;
        for (int64_t j0 = j_begin; j0 < n; j0 += 2 * kNr) {
          const float* bp = b.data + (j0 / kNr) * b.panel_stride + k0 * kNr;
          const float* bj = bias ? bias + j0 : nullptr;
          float* cr = c + (i0 + full_rows) * ldc + j0;
          if (n - j0 > kNr) {
            const int cols = static_cast<int>(std::min<int64_t>(2 * kNr, n - j0));
            if (tail == 2) {
              MicroKernelWide<2>(kc, ap, bp, b.panel_stride, bj, first, cr, ldc, cols);
            } else {
              MicroKernelWide<1>(kc, ap, bp, b.panel_stride, bj, first, cr, ldc, cols);
            }
          } else {
            const int cols = static_cast<int>(n - j0);
            if (tail == 2) {
              MicroKernel<2>(kc, ap, bp, bj, first, cr, ldc, cols);
            } else {
              MicroKernel<1>(kc, ap, bp, bj, first, cr, ldc, cols);
            }
          }
        }
      }
    }
  }
}

// 16-bit panels (PackedB::half) widened to float panels, columns [j0, j1)
// (whole panels) of every row k: out is a PackedB of its own over them.
template <HalfKind kKind>
void WidenPanels(const PackedB& b, int64_t k, int64_t j0, int64_t j1, float* out) {
  for (int64_t p = j0 / kNr; p * kNr < j1; ++p) {
    const uint16_t* src = b.half + p * b.panel_stride;
    float* dst = out + (p - j0 / kNr) * k * kNr;
    for (int64_t q = 0; q < k; ++q) {
      Batch lo, hi;
      WidenHalves<kKind>(src + q * kNr, &lo, &hi);
      lo.store_aligned(dst + q * kNr);
      hi.store_aligned(dst + q * kNr + kWidth);
    }
  }
}

// GemmBlock over 16-bit panels (or GGML blocks, PackedB::quant): the columns
// in slices of whole panel pairs, each slice's panels widened (dequantized,
// quant.cpp DequantPanels) into a float scratch (about 1 MiB, per thread),
// then GemmBlock on the slice. The slices start on panel pairs, so every
// element of C is the same chain as over float panels of the same values.
void GemmBlockHalf(int64_t i_begin, int64_t i_end, int64_t j_begin, int64_t j_end,
                   int64_t k, const float* a, int64_t lda, const PackedB& b,
                   const float* bias, bool accumulate, float* c, int64_t ldc,
                   const float* apacked = nullptr) {
  constexpr int64_t kScratchFloats = int64_t{1} << 18;
  const int64_t step = std::clamp<int64_t>(kScratchFloats / std::max<int64_t>(k, 1) / (2 * kNr), 1, 32) * 2 * kNr;
  static thread_local std::vector<float> scratch;
  float* buf = ThreadScratch(scratch, k * step);
  for (int64_t j0 = j_begin; j0 < j_end; j0 += step) {
    const int64_t j1 = std::min(j_end, j0 + step);
    if (b.quant.data != nullptr) {
      DequantPanels(b.quant, k, j0, j1 - j0, buf);
    } else if (b.kind == HalfKind::kBF16) {
      WidenPanels<HalfKind::kBF16>(b, k, j0, j1, buf);
    } else {
      WidenPanels<HalfKind::kF16>(b, k, j0, j1, buf);
    }
    const PackedB slice{buf, kNr, k * kNr};
    GemmBlock(i_begin, i_end, 0, j1 - j0, k, a, lda, slice, bias ? bias + j0 : nullptr,
              accumulate, c + j0, ldc, apacked);
  }
}

// Products below this many multiply-adds stay on the calling thread: waking
// a worker costs about as much as ~100k multiply-adds in wasm.
constexpr int64_t kMinParallelWork = int64_t{1} << 17;
constexpr int64_t kTasksPerThread = 8;

void GemmImpl(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
              const PackedB& b, const float* bias, bool accumulate, float* c,
              int64_t ldc) {
  if (k == 0) {
    if (accumulate) return;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = bias ? bias[j] : 0.0f;
    }
    return;
  }
  if (b.half != nullptr && b.nr != kNr) {  // 16-bit panels of another kernel set
    if (accumulate) {
      scalar::GemmAcc(m, n, k, a, lda, b, c, ldc);
    } else {
      scalar::Gemm(m, n, k, a, lda, b, bias, c, ldc);
    }
    return;
  }
  // Tasks: row blocks of kMc × column chunks of whole panel pairs. Every
  // element of C is the same chain of multiply-adds in any split, so the
  // result does not depend on the thread count.
  const int64_t row_blocks = (m + kMc - 1) / kMc;
  const int threads = internal::ThreadsFor(m * n * k, kMinParallelWork);
  // (Direct calls, not a function pointer: clang inlines GemmBlock into its
  // callers, which V8's loop unrolling depends on; see GemmBlock.)
  // (GGML blocks, PackedB::quant, take the same road: DequantPanels.)
  const bool half = b.half != nullptr || b.quant.data != nullptr;
  // A packed whole, once (PackAllA): for the tasks of a threaded product, and
  // for the column slices of GemmBlockHalf, which would each pack it again.
  static thread_local std::vector<float> shared_a;
  auto pack_all_a = [&]() {
    float* buf = ThreadScratch(shared_a, PackedAFloats(m, k));
    PackAllA(m, k, a, lda, buf);
    return buf;
  };
  if (threads == 1) {
    if (half) {
      GemmBlockHalf(0, m, 0, n, k, a, lda, b, bias, accumulate, c, ldc, pack_all_a());
    } else {
      GemmBlock(0, m, 0, n, k, a, lda, b, bias, accumulate, c, ldc);
    }
    return;
  }
  // About kTasksPerThread tasks a thread: with dynamic scheduling the last
  // task to finish leaves the other threads idle for at most one task's time.
  // 16-bit panels: column chunks only, each task over every row, so that each
  // weight is widened once (GemmBlockHalf runs GemmBlock's row blocks itself).
  const int64_t blocks = half ? 1 : row_blocks, rows_per = half ? m : kMc;
  const int64_t pairs = (n + 2 * kNr - 1) / (2 * kNr);
  const int64_t target = kTasksPerThread * threads;
  const int64_t chunks = std::clamp<int64_t>((target + blocks - 1) / blocks, 1, pairs);
  // (Each column chunk would pack the same rows of A again.) A started
  // batch may outlive this call, and the next call reuses shared_a: its
  // tasks pack their own.
  const bool detach = internal::TakeDetach();
  const float* apacked = detach ? nullptr : pack_all_a();
  // By value: a started batch (below) runs after this call has returned.
  auto task = [=](int64_t t, int) {
    const int64_t i0 = (t / chunks) * rows_per, q = t % chunks;
    const int64_t j_begin = pairs * q / chunks * 2 * kNr;
    const int64_t j_end = std::min(n, pairs * (q + 1) / chunks * 2 * kNr);
    if (half) {
      GemmBlockHalf(i0, std::min(m, i0 + rows_per), j_begin, j_end, k, a, lda, b, bias,
                    accumulate, c, ldc, apacked);
    } else {
      GemmBlock(i0, std::min(m, i0 + kMc), j_begin, j_end, k, a, lda, b, bias,
                accumulate, c, ldc, apacked);
    }
  };
  if (detach) {
    // Started only (internal::DetachNextBatch): the tasks must outlive this
    // call, until JoinTasks().
    static thread_local std::optional<decltype(task)> started;
    started.emplace(task);
    internal::StartParallelFor(blocks * chunks, *started);
    return;
  }
  internal::ParallelFor(blocks * chunks, task);
}

// Columns of W a GemmT task packs: whole panel pairs, about 256 KiB of
// floats, so that the slice stays in L2 while the rows of A run over it.
int64_t GemmTStep(int64_t k) {
  constexpr int64_t kSliceFloats = int64_t{1} << 16;
  return std::clamp<int64_t>(kSliceFloats / std::max<int64_t>(k, 1) / (2 * kNr), 1, 32) * 2 * kNr;
}

}  // namespace

void Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const PackedB& b, const float* bias, float* c, int64_t ldc) {
  GemmImpl(m, n, k, a, lda, b, bias, false, c, ldc);
}

// Tasks: column slices of whole panel pairs (GemmTStep), each over every row:
// a task packs its slice of W (PackPanels, as PackB) into a scratch of its
// thread and runs GemmBlock over A packed once (PackAllA). The slices start
// on panel pairs, so every element of C is Gemm's chain over PackB(W). No
// packed copy of the whole W (GPT-2's tied head: 154 MB) is written, and the
// packing runs on every thread instead of before the product.
void GemmT(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* w, int64_t ldw, const float* bias, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k == 0) return GemmImpl(m, n, 0, a, lda, PackedB{}, bias, false, c, ldc);  // C = bias
  static thread_local std::vector<float> shared_a;
  float* apacked = ThreadScratch(shared_a, PackedAFloats(m, k));
  PackAllA(m, k, a, lda, apacked);
  const int64_t step = GemmTStep(k);
  const int64_t slices = (n + step - 1) / step;
  auto task = [=](int64_t t, int) {
    static thread_local std::vector<float> scratch;
    float* buf = ThreadScratch(scratch, k * step);
    const int64_t j0 = t * step, cols = std::min(step, n - j0);
    const PackedB slice = PackPanels(k, cols, w + j0 * ldw, 1, ldw, kNr, buf);
    GemmBlock(0, m, 0, cols, k, a, lda, slice, bias ? bias + j0 : nullptr, false, c + j0, ldc,
              apacked);
  };
  if (internal::ThreadsFor(m * n * k, kMinParallelWork) == 1) {
    for (int64_t t = 0; t < slices; ++t) task(t, 0);
    return;
  }
  internal::ParallelFor(slices, task);
}

void GemmAcc(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
             const PackedB& b, float* c, int64_t ldc) {
  GemmImpl(m, n, k, a, lda, b, nullptr, true, c, ldc);
}

}  // namespace simd
#endif  // ATTNLAB_SIMD

}  // namespace kernels
}  // namespace attnlab

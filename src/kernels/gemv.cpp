// GEMV for weights in torch layout: y[M, N] = x[M, K]·W[N, K]ᵀ + bias with
// M small (decoding: one new token a call). No packing: each row of W is
// read once, contiguously, and dotted with the M rows of x, so a step
// streams the weights from memory exactly once (decoding is bound by memory
// bandwidth; packing W first would read it twice and write it once).
//
// SIMD: 4 rows of W a block, one accumulator vector per (x row, W row);
// for M <= 2 that is at most 8 accumulators + 1 x vector + 4 W vectors,
// inside the ~13 v128 registers V8 gives a wasm function. M > 2 runs the
// x rows two at a time over the same W block (still in L1). Each output is
// one lane-wise chain of multiply-adds over K, then a horizontal sum and
// the scalar tail, so the result does not depend on the thread count.
// Scalar: the plain dot product per output, in k order.
// Threads: outputs split into chunks of whole 4-row blocks.
#include <algorithm>

#include "kernels/kernels.h"
#include "kernels/simd.h"
#include "thread_pool.h"

namespace attnlab {
namespace kernels {

namespace scalar {
void GemvT(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
           const float* w, int64_t ldw, const float* bias, float* y,
           int64_t ldy) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const float* wr = w + j * ldw;
      const float* xr = x + i * ldx;
      float s = 0.0f;
      for (int64_t p = 0; p < k; ++p) s += xr[p] * wr[p];
      y[i * ldy + j] = s + (bias ? bias[j] : 0.0f);
    }
  }
}
}  // namespace scalar

#if ATTNLAB_SIMD
namespace simd {
namespace {
// Below this many multiply-adds a GEMV stays on the calling thread.
constexpr int64_t kMinParallelGemv = int64_t{1} << 16;
constexpr int64_t kRowsPerTask = 64;  // outputs (rows of W) a task

// Outputs j0..j1 of x rows i0, i0+1 (two when two_rows).
template <bool kTwoRows>
void GemvRows(int64_t i0, int64_t j0, int64_t j1, int64_t k, const float* x,
              int64_t ldx, const float* w, int64_t ldw, const float* bias,
              float* y, int64_t ldy) {
  const float* x0 = x + i0 * ldx;
  const float* x1 = kTwoRows ? x0 + ldx : x0;
  const int64_t kv = k - k % kWidth;
  int64_t j = j0;
  for (; j + 4 <= j1; j += 4) {
    const float* w0 = w + j * ldw;
    const float* w1 = w0 + ldw;
    const float* w2 = w1 + ldw;
    const float* w3 = w2 + ldw;
    Batch a0(0.0f), a1(0.0f), a2(0.0f), a3(0.0f);
    Batch b0(0.0f), b1(0.0f), b2(0.0f), b3(0.0f);
    for (int64_t p = 0; p < kv; p += kWidth) {
      const Batch xa = Batch::load_unaligned(x0 + p);
      const Batch v0 = Batch::load_unaligned(w0 + p);
      const Batch v1 = Batch::load_unaligned(w1 + p);
      const Batch v2 = Batch::load_unaligned(w2 + p);
      const Batch v3 = Batch::load_unaligned(w3 + p);
      a0 += xa * v0;
      a1 += xa * v1;
      a2 += xa * v2;
      a3 += xa * v3;
      if (kTwoRows) {
        const Batch xb = Batch::load_unaligned(x1 + p);
        b0 += xb * v0;
        b1 += xb * v1;
        b2 += xb * v2;
        b3 += xb * v3;
      }
    }
    float s[2][4] = {{xsimd::hadd(a0), xsimd::hadd(a1), xsimd::hadd(a2), xsimd::hadd(a3)},
                     {xsimd::hadd(b0), xsimd::hadd(b1), xsimd::hadd(b2), xsimd::hadd(b3)}};
    const float* ws[4] = {w0, w1, w2, w3};
    for (int r = 0; r < (kTwoRows ? 2 : 1); ++r) {
      const float* xr = r == 0 ? x0 : x1;
      for (int q = 0; q < 4; ++q) {
        float t = s[r][q];
        for (int64_t p = kv; p < k; ++p) t += xr[p] * ws[q][p];
        y[(i0 + r) * ldy + j + q] = t + (bias ? bias[j + q] : 0.0f);
      }
    }
  }
  for (; j < j1; ++j) {
    const float* wr = w + j * ldw;
    for (int r = 0; r < (kTwoRows ? 2 : 1); ++r) {
      const float* xr = r == 0 ? x0 : x1;
      Batch acc(0.0f);
      for (int64_t p = 0; p < kv; p += kWidth) {
        acc += Batch::load_unaligned(xr + p) * Batch::load_unaligned(wr + p);
      }
      float t = xsimd::hadd(acc);
      for (int64_t p = kv; p < k; ++p) t += xr[p] * wr[p];
      y[(i0 + r) * ldy + j] = t + (bias ? bias[j] : 0.0f);
    }
  }
}

void GemvBlock(int64_t m, int64_t j0, int64_t j1, int64_t k, const float* x,
               int64_t ldx, const float* w, int64_t ldw, const float* bias,
               float* y, int64_t ldy) {
  int64_t i = 0;
  for (; i + 2 <= m; i += 2) GemvRows<true>(i, j0, j1, k, x, ldx, w, ldw, bias, y, ldy);
  if (i < m) GemvRows<false>(i, j0, j1, k, x, ldx, w, ldw, bias, y, ldy);
}
}  // namespace

void GemvT(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
           const float* w, int64_t ldw, const float* bias, float* y,
           int64_t ldy) {
  const int threads = internal::ThreadsFor(m * n * k, kMinParallelGemv);
  if (threads == 1) {
    GemvBlock(m, 0, n, k, x, ldx, w, ldw, bias, y, ldy);
    return;
  }
  const int64_t tasks = (n + kRowsPerTask - 1) / kRowsPerTask;
  auto task = [=](int64_t t, int) {
    GemvBlock(m, t * kRowsPerTask, std::min(n, (t + 1) * kRowsPerTask), k, x, ldx, w, ldw, bias, y, ldy);
  };
  internal::ParallelFor(tasks, task);
}
}  // namespace simd
#endif  // ATTNLAB_SIMD

}  // namespace kernels
}  // namespace attnlab

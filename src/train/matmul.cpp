// The GEMM wrapper of the training ops: C (+)= op(A)·op(B) (+ bias) on the
// core's packed GEMM kernels (SIMD set, or the scalar set beside it when
// kernels::UsingScalarKernels()). B is packed into the workspace on every
// call (the weights change every step); a transposed A is copied into it.
#include <algorithm>
#include <cstring>

#include "train/ops.h"

namespace attnlab {
namespace train {

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

bool MatMul(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
            bool a_t, const float* b, int64_t ldb, bool b_t, const float* bias,
            float* c, int64_t ldc, bool accumulate, Workspace* ws) {
  if (m <= 0 || n <= 0) return true;
  if (k <= 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = bias ? bias[j] : 0.0f;
      }
    }
    return true;
  }
  if (!ws->pack.Reserve(kernels::PackedFloats(k, n))) return false;
  const kernels::PackedB pb =
      b_t ? kernels::PackB(k, n, b, 1, ldb, ws->pack.data())
          : kernels::PackB(k, n, b, ldb, 1, ws->pack.data());
  const float* a_rows = a;
  int64_t a_ld = lda;
  if (a_t) {
    // A stored [k, m]: copy to [m, k].
    if (!ws->trans.Reserve(m * k)) return false;
    float* t = ws->trans.data();
    constexpr int64_t kBlock = 16;  // cache-blocked transpose
    for (int64_t p0 = 0; p0 < k; p0 += kBlock) {
      const int64_t p1 = std::min(k, p0 + kBlock);
      for (int64_t i0 = 0; i0 < m; i0 += kBlock) {
        const int64_t i1 = std::min(m, i0 + kBlock);
        for (int64_t p = p0; p < p1; ++p) {
          const float* src = a + p * lda;
          for (int64_t i = i0; i < i1; ++i) t[i * k + p] = src[i];
        }
      }
    }
    a_rows = t;
    a_ld = k;
  }
  if (accumulate) {
    if (bias) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] += bias[j];
      }
    }
    GemmAccActive(m, n, k, a_rows, a_ld, pb, c, ldc);
  } else {
    kernels::Gemm(m, n, k, a_rows, a_ld, pb, bias, c, ldc);
  }
  return true;
}

}  // namespace train
}  // namespace attnlab

// Residual add + LayerNorm over the last dim, one row at a time in two passes
// (sum, then sum of squared deviations): the row is in L1 for the second pass
// and the centred variance avoids the cancellation of E[x²] - E[x]².
#include <cmath>

#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace attnlab {
namespace kernels {

namespace scalar {
void AddLayerNorm(int64_t rows, int64_t dim, const float* x, const float* r,
                  const float* gamma, const float* beta, float eps, float* y) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* xi = x + i * dim;
    const float* ri = r ? r + i * dim : nullptr;
    float* yi = y + i * dim;
    float sum = 0.0f;
    for (int64_t j = 0; j < dim; ++j) {
      const float t = ri ? xi[j] + ri[j] : xi[j];
      yi[j] = t;
      sum += t;
    }
    const float mean = sum / static_cast<float>(dim);
    float var = 0.0f;
    for (int64_t j = 0; j < dim; ++j) {
      const float d = yi[j] - mean;
      var += d * d;
    }
    const float rstd = 1.0f / std::sqrt(var / static_cast<float>(dim) + eps);
    for (int64_t j = 0; j < dim; ++j) {
      const float n = (yi[j] - mean) * rstd;
      yi[j] = n * (gamma ? gamma[j] : 1.0f) + (beta ? beta[j] : 0.0f);
    }
  }
}
}  // namespace scalar

#if ATTNLAB_SIMD
namespace simd {
void AddLayerNorm(int64_t rows, int64_t dim, const float* x, const float* r,
                  const float* gamma, const float* beta, float eps, float* y) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* xi = x + i * dim;
    const float* ri = r ? r + i * dim : nullptr;
    float* yi = y + i * dim;
    Batch vsum(0.0f);
    int64_t j = 0;
    for (; j + kWidth <= dim; j += kWidth) {
      Batch t = Batch::load_unaligned(xi + j);
      if (ri) t += Batch::load_unaligned(ri + j);
      t.store_unaligned(yi + j);
      vsum += t;
    }
    float sum = xsimd::hadd(vsum);
    for (; j < dim; ++j) {
      const float t = ri ? xi[j] + ri[j] : xi[j];
      yi[j] = t;
      sum += t;
    }
    const float mean = sum / static_cast<float>(dim);
    const Batch vmean(mean);
    Batch vvar(0.0f);
    j = 0;
    for (; j + kWidth <= dim; j += kWidth) {
      const Batch d = Batch::load_unaligned(yi + j) - vmean;
      vvar = xsimd::fma(d, d, vvar);
    }
    float var = xsimd::hadd(vvar);
    for (; j < dim; ++j) {
      const float d = yi[j] - mean;
      var += d * d;
    }
    const float rstd = 1.0f / std::sqrt(var / static_cast<float>(dim) + eps);
    const Batch vrstd(rstd);
    j = 0;
    for (; j + kWidth <= dim; j += kWidth) {
      Batch n = (Batch::load_unaligned(yi + j) - vmean) * vrstd;
      if (gamma) n *= Batch::load_unaligned(gamma + j);
      if (beta) n += Batch::load_unaligned(beta + j);
      n.store_unaligned(yi + j);
    }
    for (; j < dim; ++j) {
      const float n = (yi[j] - mean) * rstd;
      yi[j] = n * (gamma ? gamma[j] : 1.0f) + (beta ? beta[j] : 0.0f);
    }
  }
}
}  // namespace simd
#endif

}  // namespace kernels
}  // namespace attnlab

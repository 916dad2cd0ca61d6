// Residual + LayerNorm, forward and backward:
//   forward   z = x + r;  y = (z − mean(z))·rstd·gamma + beta,
//             rstd = 1/sqrt(var(z) + eps) (biased variance), per row of E
//   backward  x̂ = (z − mean)·rstd;  g = dy·gamma
//             dz = rstd·(g − mean(g) − x̂·mean(g·x̂))   (flows to x and r)
//             dgamma += Σ_rows dy·x̂;  dbeta += Σ_rows dy
// The forward is the core's LayerNorm kernel; the backward recomputes the
// row statistics from x and r. RMSNorm (Llama) below: the forward is the
// core's RmsNorm, the backward recomputes rstd.
#include <cmath>

#include "train/ops.h"

namespace attnlab {
namespace train {

void ResidualLayerNormForward(int64_t rows, int64_t dim, const float* x,
                              const float* r, const float* gamma,
                              const float* beta, float eps, float* y) {
  kernels::AddLayerNorm(rows, dim, x, r, gamma, beta, eps, y);
}

void ResidualLayerNormBackward(int64_t rows, int64_t dim, const float* x,
                               const float* r, const float* gamma, float eps,
                               const float* dy, float* dz, float* dgamma,
                               float* dbeta) {
  const double inv_dim = 1.0 / static_cast<double>(dim);
  for (int64_t row = 0; row < rows; ++row) {
    const float* xr = x + row * dim;
    const float* rr = r != nullptr ? r + row * dim : nullptr;
    const float* g = dy + row * dim;
    float* out = dz + row * dim;
    double mean = 0.0;
    for (int64_t j = 0; j < dim; ++j) mean += xr[j] + (rr ? rr[j] : 0.0f);
    mean *= inv_dim;
    double var = 0.0;
    for (int64_t j = 0; j < dim; ++j) {
      const double c = static_cast<double>(xr[j] + (rr ? rr[j] : 0.0f)) - mean;
      var += c * c;
    }
    var *= inv_dim;
    const double rstd = 1.0 / std::sqrt(var + static_cast<double>(eps));
    double sum_g = 0.0, sum_gx = 0.0;
    for (int64_t j = 0; j < dim; ++j) {
      const double xhat = (static_cast<double>(xr[j] + (rr ? rr[j] : 0.0f)) - mean) * rstd;
      const double gj = static_cast<double>(g[j]) * (gamma ? gamma[j] : 1.0f);
      sum_g += gj;
      sum_gx += gj * xhat;
      if (dgamma) dgamma[j] += static_cast<float>(g[j] * xhat);
      if (dbeta) dbeta[j] += g[j];
    }
    const double mg = sum_g * inv_dim, mgx = sum_gx * inv_dim;
    for (int64_t j = 0; j < dim; ++j) {
      const double xhat = (static_cast<double>(xr[j] + (rr ? rr[j] : 0.0f)) - mean) * rstd;
      const double gj = static_cast<double>(g[j]) * (gamma ? gamma[j] : 1.0f);
      out[j] = static_cast<float>(rstd * (gj - mg - xhat * mgx));
    }
  }
}

void RmsNormForward(int64_t rows, int64_t dim, const float* x, const float* w,
                    float eps, float* y) {
  RmsNormArgs a;
  a.rows = rows;
  a.dim = dim;
  a.x = x;
  a.weight = w;
  a.eps = eps;
  a.y = y;
  (void)RmsNorm(a);  // the caller's config was validated (rows, dim >= 1, eps > 0)
}

// x̂ = x·rstd, g = dy·w: dx = rstd·(g − x̂·mean(g·x̂)), dw += Σ_rows dy·x̂.
void RmsNormBackward(int64_t rows, int64_t dim, const float* x, const float* w,
                     float eps, const float* dy, float* dx, float* dw) {
  const double inv_dim = 1.0 / static_cast<double>(dim);
  for (int64_t row = 0; row < rows; ++row) {
    const float* xr = x + row * dim;
    const float* g = dy + row * dim;
    float* out = dx + row * dim;
    double ss = 0.0;
    for (int64_t j = 0; j < dim; ++j) ss += static_cast<double>(xr[j]) * xr[j];
    const double rstd = 1.0 / std::sqrt(ss * inv_dim + static_cast<double>(eps));
    double sum_gx = 0.0;
    for (int64_t j = 0; j < dim; ++j) {
      const double xhat = xr[j] * rstd;
      const double gj = static_cast<double>(g[j]) * (w ? w[j] : 1.0f);
      sum_gx += gj * xhat;
      if (dw) dw[j] += static_cast<float>(g[j] * xhat);
    }
    const double mgx = sum_gx * inv_dim;
    for (int64_t j = 0; j < dim; ++j) {
      const double gj = static_cast<double>(g[j]) * (w ? w[j] : 1.0f);
      out[j] = static_cast<float>(rstd * (gj - xr[j] * rstd * mgx));
    }
  }
}

}  // namespace train
}  // namespace attnlab

// Element-wise layers, forward and backward:
//   GELU       y = x·Φ(x) = x/2·(1 + erf(x/√2));  dx = dy·(Φ(x) + x·φ(x))
//              (erf to 1.5e-7 absolute, see NormalCdfPdf)
//   dropout    the core's inverted dropout (attention_lab.h); it is linear,
//              so the backward applies the same mask and 1/(1-p) to dy
//   embedding  out[r] = table[token[r]] + pos[r mod L];
//              dtable[token[r]] += dy[r], dpos[r mod L] += dy[r]
#include <cmath>
#include <cstring>

#include "train/ops.h"

namespace attnlab {
namespace train {

namespace {
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// Φ(x) and φ(x) from one exp: erf(z), z = |x|/√2, by Abramowitz & Stegun
// 7.1.26 (|error| <= 1.5e-7): erf(z) = 1 − poly(t)·e^{−z²}, t = 1/(1 + p·z),
// and e^{−z²} = e^{−x²/2} is also √(2π)·φ(x).
inline void NormalCdfPdf(float x, float* cdf, float* pdf) {
  const float z = std::fabs(x) * kInvSqrt2;
  const float t = 1.0f / (1.0f + 0.3275911f * z);
  const float poly =
      t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float e = std::exp(-0.5f * x * x);
  const float erf_z = 1.0f - poly * e;
  *cdf = 0.5f * (1.0f + (x >= 0.0f ? erf_z : -erf_z));
  *pdf = kInvSqrt2Pi * e;
}
}  // namespace

void GeluForward(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    float cdf, pdf;
    NormalCdfPdf(x[i], &cdf, &pdf);
    y[i] = x[i] * cdf;
  }
}

void GeluBackward(int64_t n, const float* x, const float* dy, float* dx) {
  for (int64_t i = 0; i < n; ++i) {
    float cdf, pdf;
    NormalCdfPdf(x[i], &cdf, &pdf);
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  }
}

void DropoutForward(int64_t n, float p, uint32_t seed, float* x) {
  if (p > 0.0f) Dropout(n, p, seed, x);
}

void DropoutBackward(int64_t n, float p, uint32_t seed, float* dy) {
  if (p > 0.0f) Dropout(n, p, seed, dy);
}

void EmbeddingForward(int64_t rows, int64_t length, int64_t dim,
                      const float* table, const float* pos,
                      const int32_t* tokens, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* t = table + static_cast<int64_t>(tokens[r]) * dim;
    float* o = out + r * dim;
    if (pos != nullptr) {
      const float* pr = pos + (r % length) * dim;
      for (int64_t j = 0; j < dim; ++j) o[j] = t[j] + pr[j];
    } else {
      std::memcpy(o, t, static_cast<size_t>(dim) * sizeof(float));
    }
  }
}

void EmbeddingBackward(int64_t rows, int64_t length, int64_t dim,
                       const int32_t* tokens, const float* dy, float* dtable,
                       float* dpos) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = dy + r * dim;
    float* t = dtable + static_cast<int64_t>(tokens[r]) * dim;
    for (int64_t j = 0; j < dim; ++j) t[j] += g[j];
    if (dpos != nullptr) {
      float* pr = dpos + (r % length) * dim;
      for (int64_t j = 0; j < dim; ++j) pr[j] += g[j];
    }
  }
}

}  // namespace train
}  // namespace attnlab

// Element-wise layers, forward and backward:
//   GELU       y = x·Φ(x) = x/2·(1 + erf(x/√2));  dx = dy·(Φ(x) + x·φ(x))
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
}  // namespace

void GeluForward(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
  }
}

void GeluBackward(int64_t n, const float* x, const float* dy, float* dx) {
  for (int64_t i = 0; i < n; ++i) {
    const float cdf = 0.5f * (1.0f + std::erf(x[i] * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * std::exp(-0.5f * x[i] * x[i]);
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

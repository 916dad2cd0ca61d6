// AdamW (torch.optim.AdamW semantics) with global-norm clipping:
//   g ← g·grad_scale                      (clip: scale = min(1, clip/‖g‖))
//   p ← p − lr·wd·p                       (decoupled decay, decay[i] = 1)
//   m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//   p ← p − lr/(1−β1^t) · m / (√v/√(1−β2^t) + eps)
#include <cmath>

#include "train/ops.h"

namespace attnlab {
namespace train {

double GlobalNorm(int64_t n, const float* g) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(g[i]) * g[i];
  return std::sqrt(s);
}

void AdamWUpdate(int64_t n, float* p, const float* g, float* m, float* v,
                 const uint8_t* decay, const AdamWConfig& c, float lr,
                 int64_t step, float grad_scale) {
  const double t = static_cast<double>(step);
  const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(c.beta1), t));
  const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(c.beta2), t)));
  const float step_size = lr / bc1;
  const float decay_factor = 1.0f - lr * c.weight_decay;
  const float b1 = c.beta1, b2 = c.beta2;
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * grad_scale;
    float pi = p[i];
    if (decay[i]) pi *= decay_factor;
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    p[i] = pi - step_size * m[i] / (std::sqrt(v[i]) / bc2_sqrt + c.eps);
  }
}

}  // namespace train
}  // namespace attnlab

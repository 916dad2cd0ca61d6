// RMSNorm over the last dim (Zhang & Sennrich 2019; the pre-norm of Llama
// blocks and the per-head QK-norm of Qwen3 / OLMo 2 / Gemma 3):
//   y[r, i] = x[r, i] / sqrt(mean_i x[r, i]^2 + eps) · weight[i]
// x, y: [rows, E]; weight: [E] (null: ones). The mean of squares is summed in
// double precision, so the SIMD and scalar builds give the same bits.
#include <cmath>
#include <sstream>

#include "internal.h"

namespace attnlab {

Status RmsNorm(const RmsNormArgs& a) {
  Status s;
  if (!(s = internal::CheckDim("rows", a.rows, 1)).ok()) return s;
  if (!(s = internal::CheckDim("E (the last dim)", a.dim, 1)).ok()) return s;
  int64_t n = 0;
  if (!(s = internal::TensorElements("x", {a.rows, a.dim}, &n)).ok()) return s;
  if (!(a.eps > 0.0) || !std::isfinite(a.eps)) {
    std::ostringstream os;
    os << "eps must be a finite number > 0 (got " << a.eps << ")";
    return Status::Invalid(os.str());
  }
  if (!(s = internal::CheckPointer("x", a.x)).ok()) return s;
  if (!(s = internal::CheckPointer("y", a.y)).ok()) return s;
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* x = a.x + r * a.dim;
    float* y = a.y + r * a.dim;
    double sum = 0.0;
    for (int64_t i = 0; i < a.dim; ++i) sum += static_cast<double>(x[i]) * x[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(a.dim) + a.eps));
    if (a.weight != nullptr) {
      for (int64_t i = 0; i < a.dim; ++i) y[i] = x[i] * inv * a.weight[i];
    } else {
      for (int64_t i = 0; i < a.dim; ++i) y[i] = x[i] * inv;
    }
  }
  return Status::Ok();
}

}  // namespace attnlab

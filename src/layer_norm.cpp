#include <cmath>
#include <sstream>

#include "internal.h"

namespace attnlab {

Status AddLayerNorm(int64_t rows, int64_t dim, const float* x,
                    const float* residual, const float* gamma,
                    const float* beta, float eps, float* y) {
  Status s = internal::CheckDim("rows", rows, 1);
  if (!s.ok()) return s;
  s = internal::CheckDim("dim", dim, 1);
  if (!s.ok()) return s;
  int64_t n = 0;
  s = internal::TensorElements("x", {rows, dim}, &n);
  if (!s.ok()) return s;
  if (!(eps > 0.0f) || !std::isfinite(eps)) {
    std::ostringstream os;
    os << "eps must be a finite number > 0 (got " << eps << ")";
    return Status::Invalid(os.str());
  }
  s = internal::CheckPointer("x", x);
  if (!s.ok()) return s;
  s = internal::CheckPointer("y", y);
  if (!s.ok()) return s;
  kernels::AddLayerNorm(rows, dim, x, residual, gamma, beta, eps, y);
  return Status::Ok();
}

}  // namespace attnlab

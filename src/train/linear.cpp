// Linear layer (torch layout), forward and backward:
//   forward   y[R, out] = x[R, in]·Wᵀ + b          W [out, in], b [out]
//   backward  dx[R, in]  = dy[R, out]·W
//             dW[out, in] += dyᵀ·x
//             db[out]     += Σ_rows dy
#include "train/ops.h"

namespace attnlab {
namespace train {

// The core's Linear driver (src/linear.cpp): a GEMV for a few rows
// (decoding), else W packed into the workspace and the GEMM.
bool LinearForward(int64_t rows, int64_t in, int64_t out, const float* x,
                   const float* w, const float* b, float* y, Workspace* ws) {
  return internal::LinearDriver(rows, in, out, x, w, false, b, y, &ws->pack);
}

void LinearForwardPacked(int64_t rows, int64_t in, int64_t out, const float* x,
                         const kernels::PackedB& w, const float* b, float* y) {
  internal::LinearPackedDriver(rows, in, out, x, w, b, y);
}

bool LinearBackward(int64_t rows, int64_t in, int64_t out, const float* x,
                    const float* w, const float* dy, float* dx,
                    bool accumulate_dx, float* dw, float* db, Workspace* ws) {
  if (dx != nullptr &&
      !MatMul(rows, in, out, dy, out, false, w, in, false, nullptr, dx, in,
              accumulate_dx, ws)) {
    return false;
  }
  if (dw != nullptr &&
      !MatMul(out, in, rows, dy, out, true, x, in, false, nullptr, dw, in, true,
              ws)) {
    return false;
  }
  if (db != nullptr) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* d = dy + r * out;
      for (int64_t o = 0; o < out; ++o) db[o] += d[o];
    }
  }
  return true;
}

}  // namespace train
}  // namespace attnlab

// Inverted dropout with a counter-based RNG: the mask of element i depends
// only on (seed, i), so the WebGPU shader reproduces it bit for bit and no RNG
// state is carried between calls.
#include <cmath>
#include <sstream>

#include "internal.h"

namespace attnlab {
namespace {
inline uint32_t Pcg(uint32_t x) {
  const uint32_t state = x * 747796405u + 2891336453u;
  const uint32_t word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}
}  // namespace

float DropoutUniform(uint32_t seed, uint32_t i) {
  const uint32_t h = Pcg(seed ^ Pcg(i));
  return static_cast<float>(h >> 8) * (1.0f / 16777216.0f);
}

Status Dropout(int64_t n, float p, uint32_t seed, float* x) {
  Status s = internal::CheckDim("n", n, 0);
  if (!s.ok()) return s;
  if (!(p >= 0.0f && p < 1.0f)) {
    std::ostringstream os;
    os << "dropout must be a number in [0, 1) (got " << p << ")";
    return Status::Invalid(os.str());
  }
  int64_t elements = 0;
  if (!(s = internal::TensorElements("dropout input", {n}, &elements)).ok()) {
    return s;
  }
  if (p == 0.0f || n == 0) return Status::Ok();
  s = internal::CheckPointer("x", x);
  if (!s.ok()) return s;
  const float keep_scale = 1.0f / (1.0f - p);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = DropoutUniform(seed, static_cast<uint32_t>(i)) < p ? 0.0f
                                                              : x[i] * keep_scale;
  }
  return Status::Ok();
}

}  // namespace attnlab

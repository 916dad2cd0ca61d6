// Element-wise activations of the models' MLPs, forward only (the training
// backward passes are in src/train/elementwise.cpp):
//   GeluTanh  GPT-2's gelu_new: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
//   Gelu      x·Φ(x) = 0.5·x·(1 + erf(x/√2)) (torch's default, BERT)
//   SwiGlu    SiLU(gate)·up = gate/(1 + e^(−gate))·up (Llama)
// SIMD: xsimd's tanh, erf and exp on kWidth lanes (a few ulp), scalar tail
// through the same functions on one-lane batches of the scalar set's math.
// Scalar: <cmath>, the oracle of the tests and the wasm-scalar build. Per
// GPT-2-small prefill of 128 tokens these are 4.7 M transcendentals.
// Threads (SIMD): chunks of kChunk elements (thread_pool.h).
#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"
#include "kernels/simd.h"
#include "thread_pool.h"

namespace attnlab {
namespace kernels {

namespace {
constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kGeluCubic = 0.044715f;
constexpr float kInvSqrt2 = 0.70710678118654752f;

inline float GeluTanhScalar(float v) {
  return 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v)));
}
inline float GeluScalar(float v) { return 0.5f * v * (1.0f + std::erf(v * kInvSqrt2)); }
inline float SiluMulScalar(float g, float u) { return g / (1.0f + std::exp(-g)) * u; }
}  // namespace

namespace scalar {
void GeluTanh(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = GeluTanhScalar(x[i]);
}
void Gelu(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = GeluScalar(x[i]);
}
void SwiGlu(int64_t n, const float* gate, const float* up, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = SiluMulScalar(gate[i], up[i]);
}
}  // namespace scalar

#if ATTNLAB_SIMD
namespace simd {
namespace {
// Elements a task; a multiple of kWidth, so every element below
// n − n % kWidth takes the vector formula in any split (the same bits on
// any thread count) and only the last task runs the scalar tail.
constexpr int64_t kChunk = int64_t{1} << 14;
// Below this many elements (a transcendental costs about as much as 32
// multiply-adds) the activation stays on the calling thread.
constexpr int64_t kMinParallelWork = int64_t{1} << 17;

// y[i] for i in [0, n): vec(i) for the kWidth elements from i (every i
// below n − n % kWidth), scalar(i) for the tail; the whole range on the
// calling thread, or in chunks on the pool.
template <class Vec, class Scalar>
void Elementwise(int64_t n, Vec vec, Scalar scalar) {
  auto range = [&](int64_t i0, int64_t i1) {
    const int64_t nv = i1 - (i1 - i0) % kWidth;
    for (int64_t i = i0; i < nv; i += kWidth) vec(i);
    for (int64_t i = nv; i < i1; ++i) scalar(i);
  };
  if (internal::ThreadsFor(n * 32, kMinParallelWork) == 1) {
    range(0, n);
    return;
  }
  const int64_t tasks = (n + kChunk - 1) / kChunk;
  auto task = [&](int64_t t, int) { range(t * kChunk, std::min(n, (t + 1) * kChunk)); };
  internal::ParallelFor(tasks, task);
}
}  // namespace

void GeluTanh(int64_t n, const float* x, float* y) {
  const Batch half(0.5f), one(1.0f), c(kSqrt2OverPi), cubic(kGeluCubic);
  Elementwise(
      n,
      [&](int64_t i) {
        const Batch v = Batch::load_unaligned(x + i);
        const Batch u = c * (v + cubic * v * v * v);
        (half * v * (one + xsimd::tanh(u))).store_unaligned(y + i);
      },
      [&](int64_t i) { y[i] = GeluTanhScalar(x[i]); });
}
void Gelu(int64_t n, const float* x, float* y) {
  const Batch half(0.5f), one(1.0f), s(kInvSqrt2);
  Elementwise(
      n,
      [&](int64_t i) {
        const Batch v = Batch::load_unaligned(x + i);
        (half * v * (one + xsimd::erf(v * s))).store_unaligned(y + i);
      },
      [&](int64_t i) { y[i] = GeluScalar(x[i]); });
}
void SwiGlu(int64_t n, const float* gate, const float* up, float* y) {
  const Batch one(1.0f);
  Elementwise(
      n,
      [&](int64_t i) {
        const Batch g = Batch::load_unaligned(gate + i);
        const Batch u = Batch::load_unaligned(up + i);
        (g / (one + xsimd::exp(-g)) * u).store_unaligned(y + i);
      },
      [&](int64_t i) { y[i] = SiluMulScalar(gate[i], up[i]); });
}
}  // namespace simd
#endif  // ATTNLAB_SIMD

}  // namespace kernels
}  // namespace attnlab

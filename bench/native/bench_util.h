// Shared helpers of the native Google Benchmark binaries (bench/native/).
#ifndef ATTNLAB_BENCH_NATIVE_BENCH_UTIL_H_
#define ATTNLAB_BENCH_NATIVE_BENCH_UTIL_H_

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "attention_lab.h"
#include "kernels/kernels.h"

namespace attnlab_bench {

// Uniform floats in [lo, hi) from a 32-bit LCG (the JS bench's generator).
inline std::vector<float> Rand(int64_t n, uint32_t seed, float lo = -1.0f,
                               float hi = 1.0f) {
  std::vector<float> a(static_cast<size_t>(n));
  uint32_t s = seed * 2654435761u;
  for (auto& x : a) {
    s = s * 1664525u + 1013904223u;
    x = lo + static_cast<float>(s / 4294967296.0) * (hi - lo);
  }
  return a;
}

// 64-byte aligned float buffer.
struct AlignedFloats {
  explicit AlignedFloats(int64_t n)
      : p(static_cast<float*>(std::aligned_alloc(
            64, static_cast<size_t>((n * 4 + 63) / 64 * 64)))) {}
  ~AlignedFloats() { std::free(p); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float* p;
};

// Selects the kernel set for one benchmark (arg 0 = SIMD, 1 = scalar) and
// restores the previous one when it goes out of scope.
class KernelSet {
 public:
  KernelSet(benchmark::State& state, bool scalar)
      : previous_(attnlab::kernels::UseScalarKernels(scalar)) {
    state.SetLabel(attnlab::KernelArch());
  }
  ~KernelSet() { attnlab::kernels::UseScalarKernels(previous_); }

 private:
  bool previous_;
};

// GFLOP/s as a rate counter (shown as FLOPS=…G/s).
inline void SetFlops(benchmark::State& state, double flops_per_iteration) {
  state.counters["FLOPS"] = benchmark::Counter(
      flops_per_iteration, benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
}

}  // namespace attnlab_bench

#endif  // ATTNLAB_BENCH_NATIVE_BENCH_UTIL_H_

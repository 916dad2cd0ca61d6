// Benchmark-only bindings, linked into the bench module
// (attention_lab_bench_<variant>, built by scripts/bench.sh; never shipped
// in web/dist): internal kernel timings that the public API does not offer.
#include <emscripten/bind.h>
#include <emscripten/emscripten.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "kernels/kernels.h"

namespace {

// Raw timing of the packed GEMM kernel, C[M,N] = A[M,K]·B[K,N], `iterations`
// times; returns milliseconds per call. B is packed once outside the timed
// loop (as weights are at setWeights).
double BenchGemm(double m_in, double n_in, double k_in, double iterations) {
  const int64_t m = static_cast<int64_t>(m_in), n = static_cast<int64_t>(n_in),
                k = static_cast<int64_t>(k_in);
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)),
      c(static_cast<size_t>(m * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) * 0.1f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) * 0.1f;
  float* packed = static_cast<float*>(
      std::aligned_alloc(64, static_cast<size_t>((attnlab::kernels::PackedFloats(k, n) * 4 + 63) / 64 * 64)));
  const attnlab::kernels::PackedB pb =
      attnlab::kernels::PackB(k, n, b.data(), n, 1, packed);
  attnlab::kernels::Gemm(m, n, k, a.data(), k, pb, nullptr, c.data(), n);
  const double t0 = emscripten_get_now();
  for (int i = 0; i < static_cast<int>(iterations); ++i) {
    attnlab::kernels::Gemm(m, n, k, a.data(), k, pb, nullptr, c.data(), n);
  }
  const double t1 = emscripten_get_now();
  std::free(packed);
  return (t1 - t0) / iterations;
}

}  // namespace

EMSCRIPTEN_BINDINGS(attention_lab_bench) {
  emscripten::function("benchGemm", &BenchGemm);
}

// Native GEMM benchmark (Google Benchmark): the packed GEMM kernel
// C[M,N] = A[M,K]·B[K,N], B packed once outside the loop (as weights are at
// setWeights), on the xsimd kernels of the build's arch (AVX2 by default;
// -DATTNLAB_NATIVE_ARCH=avx512 for AVX-512) and on the scalar kernels.
//   build/native-bench/attnlab_gemm_benchmark [--benchmark_filter=…]
// Shapes: the wasm bench's GEMMs (M×K×N) 128×512×512, 128×512×1536, 512×768×768.
#include "bench_util.h"

namespace {

using attnlab_bench::AlignedFloats;
using attnlab_bench::KernelSet;
using attnlab_bench::Rand;
namespace k = attnlab::kernels;

// Args: M, K, N, scalar (0/1).
void BM_Gemm(benchmark::State& state) {
  const int64_t m = state.range(0), kk = state.range(1), n = state.range(2);
  KernelSet set(state, state.range(3) != 0);
  const std::vector<float> a = Rand(m * kk, 21), b = Rand(kk * n, 22);
  std::vector<float> bias = Rand(n, 23), c(static_cast<size_t>(m * n));
  AlignedFloats packed(k::PackedFloats(kk, n));
  const k::PackedB pb = k::PackB(kk, n, b.data(), n, 1, packed.p);
  for (auto _ : state) {
    k::Gemm(m, n, kk, a.data(), kk, pb, bias.data(), c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  attnlab_bench::SetFlops(state, 2.0 * static_cast<double>(m * n * kk));
}

// Packing B (done once per setWeights; shown for scale).
void BM_PackB(benchmark::State& state) {
  const int64_t kk = state.range(0), n = state.range(1);
  KernelSet set(state, false);
  const std::vector<float> b = Rand(kk * n, 22);
  AlignedFloats packed(k::PackedFloats(kk, n));
  for (auto _ : state) {
    benchmark::DoNotOptimize(k::PackB(kk, n, b.data(), n, 1, packed.p));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kk * n * 4);
}

void GemmShapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "K", "N", "scalar"});
  for (int scalar : {0, 1}) {
    b->Args({128, 512, 512, scalar});
    b->Args({128, 512, 1536, scalar});
    b->Args({512, 768, 768, scalar});
  }
}

BENCHMARK(BM_Gemm)->Apply(GemmShapes);
BENCHMARK(BM_PackB)->ArgNames({"K", "N"})->Args({512, 512})->Args({512, 1536})->Args({768, 768});

}  // namespace

BENCHMARK_MAIN();

// Native attention benchmarks (Google Benchmark) on the public C++ API, with
// the xsimd kernels of the build's arch (AVX2 by default, AVX-512 with
// -DATTNLAB_NATIVE_ARCH=avx512) and with the scalar kernels: the same cases
// as the wasm bench (bench/bench.mjs).
//   build/native-bench/attnlab_attention_benchmark [--benchmark_filter=…]
#include <cmath>
#include <string>

#include "bench_util.h"

namespace {

using attnlab_bench::KernelSet;
using attnlab_bench::Rand;

std::unique_ptr<attnlab::MultiHeadAttention> MakeMha(int64_t e, int64_t h) {
  attnlab::MhaConfig cfg;
  cfg.embed_dim = e;
  cfg.num_heads = h;
  cfg.seed = 1;
  attnlab::Status s;
  auto mha = attnlab::MultiHeadAttention::Create(cfg, &s);
  if (!mha) std::abort();
  return mha;
}

double MhaFlops(int64_t b, int64_t lq, int64_t lk, int64_t e, bool causal) {
  double pairs = 0;
  for (int64_t i = 0; i < lq; ++i) pairs += causal ? static_cast<double>(std::min(i + 1, lk)) : static_cast<double>(lk);
  return 2.0 * b * (2 * lq + 2 * lk) * e * e + 4.0 * b * pairs * e;
}

// Args: B, L, E, H, needWeights, scalar. Causal self-attention.
void BM_MhaForward(benchmark::State& state) {
  const int64_t b = state.range(0), l = state.range(1), e = state.range(2), h = state.range(3);
  const bool need_weights = state.range(4) != 0;
  KernelSet set(state, state.range(5) != 0);
  auto mha = MakeMha(e, h);
  const std::vector<float> x = Rand(b * l * e, 11);
  std::vector<float> out(static_cast<size_t>(b * l * e));
  std::vector<float> weights(need_weights ? static_cast<size_t>(b * h * l * l) : 0);
  attnlab::MhaForwardArgs a;
  a.batch = b;
  a.lq = a.lk = l;
  a.query = a.key = a.value = x.data();
  a.mask.causal = true;
  a.output = out.data();
  a.weights = need_weights ? weights.data() : nullptr;
  for (auto _ : state) {
    if (!mha->Forward(a).ok()) state.SkipWithError("Forward failed");
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  attnlab_bench::SetFlops(state, MhaFlops(b, l, l, e, true));
}

// Decode step: Lq = 1 query against Lk = 512 keys/values (projected each call).
void BM_MhaDecode(benchmark::State& state) {
  const int64_t lk = state.range(0), e = 512, h = 8;
  KernelSet set(state, state.range(1) != 0);
  auto mha = MakeMha(e, h);
  const std::vector<float> q = Rand(e, 12), kv = Rand(lk * e, 13);
  std::vector<float> out(static_cast<size_t>(e));
  attnlab::MhaForwardArgs a;
  a.lq = 1;
  a.lk = lk;
  a.query = q.data();
  a.key = a.value = kv.data();
  a.output = out.data();
  for (auto _ : state) {
    if (!mha->Forward(a).ok()) state.SkipWithError("Forward failed");
    benchmark::DoNotOptimize(out.data());
  }
  attnlab_bench::SetFlops(state, MhaFlops(1, 1, lk, e, false));
}

// Decode step over a KV cache: SDPA with Lq = 1, Lk, H = 8, D = 64.
void BM_SdpaDecode(benchmark::State& state) {
  const int64_t lk = state.range(0), h = 8, d = 64;
  KernelSet set(state, state.range(1) != 0);
  const std::vector<float> q = Rand(h * d, 14), k = Rand(h * lk * d, 15), v = Rand(h * lk * d, 16);
  std::vector<float> out(static_cast<size_t>(h * d));
  attnlab::SdpaArgs a;
  a.heads = h;
  a.lq = 1;
  a.lk = lk;
  a.d = a.dv = d;
  a.q = q.data();
  a.k = k.data();
  a.v = v.data();
  a.output = out.data();
  for (auto _ : state) {
    if (!attnlab::ScaledDotProductAttention(a).ok()) state.SkipWithError("SDPA failed");
    benchmark::DoNotOptimize(out.data());
  }
  attnlab_bench::SetFlops(state, 4.0 * h * lk * d);
}

// Args: rows, dim, scalar.
void BM_LayerNorm(benchmark::State& state) {
  const int64_t rows = state.range(0), dim = state.range(1);
  KernelSet set(state, state.range(2) != 0);
  const std::vector<float> x = Rand(rows * dim, 31, -2, 2), g = Rand(dim, 32, 0.5f, 1.5f), bt = Rand(dim, 33, -0.5f, 0.5f);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    if (!attnlab::AddLayerNorm(rows, dim, x.data(), nullptr, g.data(), bt.data(), 1e-5f, y.data()).ok()) state.SkipWithError("LN failed");
    benchmark::DoNotOptimize(y.data());
  }
  attnlab_bench::SetFlops(state, 8.0 * rows * dim);
}

// Args: L, D.
void BM_PositionalEncoding(benchmark::State& state) {
  const int64_t l = state.range(0), d = state.range(1);
  state.SetLabel(attnlab::KernelArch());
  std::vector<float> y(static_cast<size_t>(l * d));
  for (auto _ : state) {
    if (!attnlab::PositionalEncoding(l, d, 10000.0, y.data()).ok()) state.SkipWithError("PE failed");
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * l * d);
}

void MhaShapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"B", "L", "E", "H", "weights", "scalar"});
  for (int scalar : {0, 1}) {
    for (int w : {0, 1}) {
      b->Args({2, 5, 512, 8, w, scalar});
      b->Args({1, 128, 512, 8, w, scalar});
      b->Args({1, 512, 768, 12, w, scalar});
    }
  }
}

BENCHMARK(BM_MhaForward)->Apply(MhaShapes)->Unit(benchmark::kMillisecond);
// The long sequence (SIMD only; a few seconds per call natively).
BENCHMARK(BM_MhaForward)
    ->Name("BM_MhaForward/long")
    ->ArgNames({"B", "L", "E", "H", "weights", "scalar"})
    ->Args({1, 16384, 512, 8, 0, 0})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MhaDecode)->ArgNames({"Lk", "scalar"})->Args({512, 0})->Args({512, 1})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SdpaDecode)->ArgNames({"Lk", "scalar"})->Args({512, 0})->Args({512, 1})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LayerNorm)->ArgNames({"rows", "dim", "scalar"})->Args({128, 512, 0})->Args({128, 512, 1})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PositionalEncoding)->ArgNames({"L", "D"})->Args({512, 512})->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

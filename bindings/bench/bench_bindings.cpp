// Benchmark-only bindings, linked into the bench module
// (attention_lab_bench_<variant>, built by scripts/bench.sh; never shipped
// in web/dist): internal kernel timings that the public API does not offer.
#include <emscripten/bind.h>
#include <emscripten/emscripten.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "attention_lab.h"
#include "internal.h"
#include "kernels/kernels.h"
#include "train/ops.h"
#include "train/weight_store.h"

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

// lab.multiHeadAttention's driver (MultiHeadAttention::Forward: one fused
// QKV GEMM for self-attention) against the whole models' driver
// (train::MhaForward over weights packed once, as a loaded model runs), on
// the same weights, self-attention [B, L, E], H heads, causal or not.
// path 0: MultiHeadAttention, 1: train::MhaForward. Milliseconds per call;
// callers interleave the two paths (issue 31: one code path if it costs no
// measured speed).
double BenchMhaPath(double path, double b_in, double l_in, double e_in, double h_in, double causal,
                    double iterations) {
  using namespace attnlab;
  const int64_t b = static_cast<int64_t>(b_in), l = static_cast<int64_t>(l_in), e = static_cast<int64_t>(e_in),
                h = static_cast<int64_t>(h_in);
  std::vector<float> x(static_cast<size_t>(b * l * e)), out(static_cast<size_t>(b * l * e));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) * 0.01f - 0.5f;
  MaskSpec mask;
  mask.causal = causal != 0;
  const int iters = static_cast<int>(iterations);
  if (path == 0) {
    MhaConfig c;
    c.embed_dim = e;
    c.num_heads = h;
    c.seed = 1;
    Status st;
    auto mha = MultiHeadAttention::Create(c, &st);
    MhaForwardArgs a;
    a.batch = b;
    a.lq = a.lk = l;
    a.query = a.key = a.value = x.data();
    a.output = out.data();
    a.mask = mask;
    (void)mha->Forward(a);
    const double t0 = emscripten_get_now();
    for (int i = 0; i < iters; ++i) (void)mha->Forward(a);
    return (emscripten_get_now() - t0) / iterations;
  }
  // torch-layout weights [out, in] packed once (B [in, out] panels).
  std::vector<float> w[8];
  std::vector<internal::AlignedBuffer> packs(8);
  kernels::PackedB pb[8];
  const kernels::PackedB* pk[8] = {};
  MhaParams p;
  for (int i = 0; i < 8; ++i) {
    const bool bias = i % 2 == 1;
    w[i].assign(static_cast<size_t>(bias ? e : e * e), 0.0f);
    for (size_t j = 0; j < w[i].size(); ++j) w[i][j] = bias ? 0.0f : static_cast<float>((j * 13 + i) % 29) * 0.002f - 0.03f;
    p.w[i] = w[i].data();
    if (!bias) {
      packs[i].Reserve(kernels::PackedFloats(e, e));
      pb[i] = kernels::PackB(e, e, w[i].data(), 1, e, packs[i].data());
      pk[i] = &pb[i];
    }
  }
  train::MhaShape s{b, l, l, e, h, e, e, nullptr, 0};
  s.packed = pk;
  kernels::AttentionView view;
  internal::ResolveMask(mask, b, h, l, l, &view);
  train::MhaActivations act;
  train::Workspace ws;
  (void)train::MhaForward(s, p, x.data(), x.data(), x.data(), view, nullptr, out.data(), nullptr, &act, &ws);
  const double t0 = emscripten_get_now();
  for (int i = 0; i < iters; ++i) {
    (void)train::MhaForward(s, p, x.data(), x.data(), x.data(), view, nullptr, out.data(), nullptr, &act, &ws);
  }
  return (emscripten_get_now() - t0) / iterations;
}

// The decoding GEMV of a loaded model's projection, y[M, N] = x[M, K]·Wᵀ,
// W [N, K] held as the weight store holds it (train::WeightStore, through
// the linear driver the models call): kind 0 float32 panels, 1 F16 panels,
// 8 Q8_0 and 2 Q4_0 GGML blocks (the GGUF rows). Milliseconds per call of
// `iterations`; W is written once outside the timed loop.
double BenchGemv(double kind_in, double m_in, double n_in, double k_in, double iterations) {
  using namespace attnlab;
  const int kind = static_cast<int>(kind_in);
  const int64_t m = static_cast<int64_t>(m_in), n = static_cast<int64_t>(n_in), k = static_cast<int64_t>(k_in);
  train::WeightStore store;
  (void)store.Add("w", {n, k}, false, true);
  if (!store.Allocate(kind == 1 ? 1 : 0)) return -1.0;
  uint32_t seed = 12345u;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  Status st;
  if (kind == 0) {
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t j = 0; j < n && st.ok(); ++j) {
      for (auto& v : row) v = static_cast<float>(next() >> 8) * 0x1p-24f - 0.5f;
      st = store.Write(0, j, 1, row.data(), k, false);
    }
  } else if (kind == 1) {
    std::vector<uint16_t> row(static_cast<size_t>(k));
    for (int64_t j = 0; j < n && st.ok(); ++j) {
      for (auto& v : row) v = static_cast<uint16_t>(0x2c00u | (next() >> 22) | ((next() >> 31) << 15));
      st = store.WriteHalf(0, j, 1, row.data(), k, false, 1);
    }
  } else {
    const auto qk = static_cast<kernels::QuantKind>(kind);
    const int64_t bb = kernels::QuantBlockBytes(qk);
    std::vector<uint8_t> w(static_cast<size_t>(n * (k / kernels::QuantBlockValues(qk)) * bb));
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>(next() >> 24);
    // d (and Q4_K's dmin) ~ 2^-7
    const size_t at = qk == kernels::QuantKind::kQ6_K ? 209 : 1;
    for (size_t b = 0; b < w.size(); b += static_cast<size_t>(bb)) {
      w[b + at] = 0x20;
      if (qk == kernels::QuantKind::kQ4_K) w[b + 3] = 0x20;
    }
    st = store.WriteQuant(0, 0, n, kind, w.data(), static_cast<int64_t>(w.size()));
  }
  if (!st.ok()) return -1.0;
  std::vector<float> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * n));
  for (auto& v : x) v = static_cast<float>(next() >> 8) * 0x1p-24f - 0.5f;
  const kernels::PackedB& pb = *store.Packed(0);
  internal::LinearPackedDriver(m, k, n, x.data(), pb, nullptr, y.data());
  const double t0 = emscripten_get_now();
  for (int i = 0; i < static_cast<int>(iterations); ++i) {
    internal::LinearPackedDriver(m, k, n, x.data(), pb, nullptr, y.data());
  }
  return (emscripten_get_now() - t0) / iterations;
}

}  // namespace

EMSCRIPTEN_BINDINGS(attention_lab_bench) {
  emscripten::function("benchGemv", &BenchGemv);
  emscripten::function("benchGemm", &BenchGemm);
  emscripten::function("benchMhaPath", &BenchMhaPath);
}

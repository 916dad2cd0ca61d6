// reference.h — double-precision reference implementations and helpers shared
// by the native tests. Everything here is written from the documented
// semantics (src/attention_lab.h, src/kernels/kernels.h), never from the code
// under test: no attnlab function is called to compute an expected value.
//
// Mask semantics used by the reference (the contract the tests check):
//   1. scores s = q·kᵀ·scale
//   2. the tensor mask is applied to every score:
//        keep      mask == 0 → s = -1e9
//        block     s += mask·(-1e9)
//        additive  s += mask
//   3. then causal (j > i) and padding (j >= lengths[b]) positions are set to
//      -1e9, overriding whatever the tensor mask produced
//   4. softmax per row; a row whose maximum is -inf is uniform (1/Lk)
#ifndef ATTNLAB_TESTS_NATIVE_REFERENCE_H_
#define ATTNLAB_TESTS_NATIVE_REFERENCE_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "attention_lab.h"
#include "kernels/kernels.h"

namespace attnlab_test {

using attnlab::MaskKind;
using attnlab::MaskSpec;

constexpr double kFill = -1e9;
constexpr double kInf = std::numeric_limits<double>::infinity();
// Unit roundoff of float32.
constexpr double kU = 1.0 / 16777216.0;  // 2^-24

// ---------------------------------------------------------------------------
// Memory helpers

// 64-byte aligned allocator: the SIMD GEMM loads packed panels aligned.
template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(size_t n) {
    size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    if (bytes == 0) bytes = 64;
    void* p = std::aligned_alloc(64, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const AlignedAllocator<U>&) const { return false; }
};
using AlignedFloats = std::vector<float, AlignedAllocator<float>>;

// Switches the active kernel set for a scope and restores the previous one.
class ScopedKernelSet {
 public:
  explicit ScopedKernelSet(bool use_scalar)
      : previous_(attnlab::kernels::UseScalarKernels(use_scalar)) {}
  ~ScopedKernelSet() { attnlab::kernels::UseScalarKernels(previous_); }
  ScopedKernelSet(const ScopedKernelSet&) = delete;
  ScopedKernelSet& operator=(const ScopedKernelSet&) = delete;

 private:
  bool previous_;
};

inline std::string KernelSetName(bool scalar) { return scalar ? "Scalar" : "Simd"; }

// ---------------------------------------------------------------------------
// Random data

class Rng {
 public:
  explicit Rng(uint32_t seed) : gen_(seed) {}
  float Uniform(float lo = -1.0f, float hi = 1.0f) {
    return std::uniform_real_distribution<float>(lo, hi)(gen_);
  }
  int64_t Int(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen_);
  }
  bool Bernoulli(double p) { return std::bernoulli_distribution(p)(gen_); }
  std::vector<float> Vector(int64_t n, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = Uniform(lo, hi);
    return v;
  }

 private:
  std::mt19937 gen_;
};

// ---------------------------------------------------------------------------
// Comparison helpers

// Checks |got - want| <= abs + rel·|want| element-wise. Reports the number of
// mismatches, the worst one and the first few, and returns true when all pass.
inline bool ExpectAllClose(const float* got, const double* want, int64_t n,
                           double abs_tol, double rel_tol,
                           const std::string& what) {
  int64_t bad = 0;
  double worst = 0.0;
  int64_t worst_i = -1;
  std::ostringstream first;
  for (int64_t i = 0; i < n; ++i) {
    const double g = got[i];
    const double w = want[i];
    const double err = std::fabs(g - w);
    const double tol = abs_tol + rel_tol * std::fabs(w);
    if (!(err <= tol)) {  // also catches NaN
      if (bad < 5) first << "\n  [" << i << "] got " << g << " want " << w << " err " << err << " tol " << tol;
      ++bad;
      if (!(err <= worst)) {
        worst = err;
        worst_i = i;
      }
    }
  }
  if (bad != 0) {
    ADD_FAILURE() << what << ": " << bad << " of " << n
                  << " elements outside abs " << abs_tol << " + rel " << rel_tol
                  << " (worst at " << worst_i << ", err " << worst << ")"
                  << first.str();
  }
  return bad == 0;
}

inline bool ExpectAllClose(const std::vector<float>& got,
                           const std::vector<double>& want, double abs_tol,
                           double rel_tol, const std::string& what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  if (got.size() != want.size()) return false;
  return ExpectAllClose(got.data(), want.data(), static_cast<int64_t>(got.size()),
                        abs_tol, rel_tol, what);
}

inline std::vector<double> ToDouble(const float* p, int64_t n) {
  return std::vector<double>(p, p + n);
}

inline bool AllFinite(const float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(p[i])) return false;
  }
  return true;
}

// Fills with a recognisable sentinel; Untouched() checks it bit for bit.
constexpr float kSentinel = -12345.625f;
inline void FillSentinel(float* p, int64_t n) { std::fill(p, p + n, kSentinel); }
inline bool Untouched(const float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(&p[i], &kSentinel, sizeof(float)) != 0) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Masks

// A mask as the tests describe it; Spec() views it as the library's MaskSpec.
struct RefMask {
  bool causal = false;
  std::vector<int32_t> lengths;  // empty: no padding
  MaskKind kind = MaskKind::kNone;
  std::vector<float> data;
  int64_t shape[4] = {1, 1, 1, 1};  // right-aligned to [B, H, Lq, Lk]

  MaskSpec Spec() const {
    MaskSpec s;
    s.causal = causal;
    s.lengths = lengths.empty() ? nullptr : lengths.data();
    s.kind = kind;
    s.data = data.empty() ? nullptr : data.data();
    for (int d = 0; d < 4; ++d) s.shape[d] = shape[d];
    return s;
  }

  // Tensor value at (b, h, i, j) by numpy broadcasting.
  double Value(int64_t b, int64_t h, int64_t i, int64_t j) const {
    const int64_t c[4] = {b, h, i, j};
    int64_t flat = 0;
    for (int d = 0; d < 4; ++d) flat = flat * shape[d] + (shape[d] == 1 ? 0 : c[d]);
    return data[static_cast<size_t>(flat)];
  }

  // Applies the mask to one scaled score (the semantics in the file comment).
  double Apply(double s, int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (kind != MaskKind::kNone) {
      const double m = Value(b, h, i, j);
      switch (kind) {
        case MaskKind::kKeep: if (m == 0.0) s = kFill; break;
        case MaskKind::kBlock: s += m * kFill; break;
        case MaskKind::kAdditive: s += m; break;
        default: break;
      }
    }
    if (causal && j > i) s = kFill;
    if (!lengths.empty() && j >= lengths[static_cast<size_t>(b)]) s = kFill;
    return s;
  }

  std::string Describe() const {
    std::ostringstream os;
    os << "mask{causal=" << causal << " lengths=";
    if (lengths.empty()) os << "none";
    for (size_t i = 0; i < lengths.size(); ++i) os << (i ? "," : "") << lengths[i];
    static const char* kinds[] = {"none", "keep", "block", "additive"};
    os << " kind=" << kinds[static_cast<int>(kind)] << " shape=[" << shape[0] << ","
       << shape[1] << "," << shape[2] << "," << shape[3] << "]}";
    return os.str();
  }
};

// Fills `m` with a random tensor mask of `kind` and `shape` (right-aligned to
// [B, H, Lq, Lk]):
//   keep      0/1, 0 with probability 0.35 (fully masked rows happen and are
//             exact: every score is -1e9 in float and double alike)
//   block     0/1, 1 with probability 0.35, but key 0 is never blocked: a
//             fully blocked row is s - 1e9, which float32 rounds to -1e9
//             (uniform) while double keeps s (softmax(s)); that case has its
//             own test
//   additive  U(-3, 3), -inf with probability 0.1
inline void FillTensorMask(RefMask* m, MaskKind kind, int64_t b, int64_t h,
                           int64_t lq, int64_t lk, Rng& rng) {
  m->kind = kind;
  m->shape[0] = b;
  m->shape[1] = h;
  m->shape[2] = lq;
  m->shape[3] = lk;
  const int64_t n = b * h * lq * lk;
  m->data.assign(static_cast<size_t>(n), 0.0f);
  for (int64_t t = 0; t < n; ++t) {
    float& x = m->data[static_cast<size_t>(t)];
    switch (kind) {
      case MaskKind::kKeep: x = rng.Bernoulli(0.35) ? 0.0f : 1.0f; break;
      case MaskKind::kBlock: x = (t % lk != 0 && rng.Bernoulli(0.35)) ? 1.0f : 0.0f; break;
      case MaskKind::kAdditive:
        x = rng.Bernoulli(0.1) ? -std::numeric_limits<float>::infinity() : rng.Uniform(-3.0f, 3.0f);
        break;
      default: break;
    }
  }
}

// ---------------------------------------------------------------------------
// Reference ops

// Softmax of one row in double; uniform when every entry is -inf.
inline void RefSoftmaxRow(double* s, int64_t n) {
  double mx = -kInf;
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, s[j]);
  if (mx == -kInf) {
    for (int64_t j = 0; j < n; ++j) s[j] = 1.0 / static_cast<double>(n);
    return;
  }
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - mx);
    sum += s[j];
  }
  for (int64_t j = 0; j < n; ++j) s[j] /= sum;
}

// C[M, N] = A[M, K]·B[K, N] (+ bias), with B(k, n) = b[k * sbk + n * sbn].
inline std::vector<double> RefGemm(int64_t m, int64_t n, int64_t k,
                                   const float* a, int64_t lda, const float* b,
                                   int64_t sbk, int64_t sbn, const float* bias) {
  std::vector<double> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = bias ? bias[j] : 0.0;
      for (int64_t p = 0; p < k; ++p) {
        acc += static_cast<double>(a[i * lda + p]) * b[p * sbk + j * sbn];
      }
      c[static_cast<size_t>(i * n + j)] = acc;
    }
  }
  return c;
}

// Scaled dot-product attention over [B, H, L, *] contiguous tensors.
inline void RefSdpa(int64_t B, int64_t H, int64_t Lq, int64_t Lk, int64_t D,
                    int64_t Dv, const double* q, const double* k,
                    const double* v, double scale, const RefMask& mask,
                    std::vector<double>* out, std::vector<double>* weights) {
  out->assign(static_cast<size_t>(B * H * Lq * Dv), 0.0);
  weights->assign(static_cast<size_t>(B * H * Lq * Lk), 0.0);
  std::vector<double> row(static_cast<size_t>(Lk));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t n = b * H + h;
      const double* qh = q + n * Lq * D;
      const double* kh = k + n * Lk * D;
      const double* vh = v + n * Lk * Dv;
      for (int64_t i = 0; i < Lq; ++i) {
        for (int64_t j = 0; j < Lk; ++j) {
          double s = 0.0;
          for (int64_t p = 0; p < D; ++p) s += qh[i * D + p] * kh[j * D + p];
          row[static_cast<size_t>(j)] = mask.Apply(s * scale, b, h, i, j);
        }
        RefSoftmaxRow(row.data(), Lk);
        double* w = weights->data() + (n * Lq + i) * Lk;
        double* o = out->data() + (n * Lq + i) * Dv;
        for (int64_t j = 0; j < Lk; ++j) {
          w[j] = row[static_cast<size_t>(j)];
          for (int64_t p = 0; p < Dv; ++p) o[p] += w[j] * vh[j * Dv + p];
        }
      }
    }
  }
}

// y = x·Wᵀ + b with torch-layout W [out, in]; x [rows, in].
inline std::vector<double> RefLinearTorch(int64_t rows, int64_t in, int64_t out,
                                          const double* x, const float* w,
                                          const float* bias) {
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double acc = bias ? bias[o] : 0.0;
      for (int64_t i = 0; i < in; ++i) acc += x[r * in + i] * static_cast<double>(w[o * in + i]);
      y[static_cast<size_t>(r * out + o)] = acc;
    }
  }
  return y;
}

// Multi-head attention weights in torch layout (biases empty when absent).
struct MhaWeights {
  std::vector<float> wq, bq, wk, bk, wv, bv, wo, bo;
};

inline MhaWeights RandomMhaWeights(Rng& rng, int64_t e, int64_t kdim,
                                   int64_t vdim, bool bias, float scale = 0.5f) {
  MhaWeights w;
  w.wq = rng.Vector(e * e, -scale, scale);
  w.wk = rng.Vector(e * kdim, -scale, scale);
  w.wv = rng.Vector(e * vdim, -scale, scale);
  w.wo = rng.Vector(e * e, -scale, scale);
  if (bias) {
    w.bq = rng.Vector(e, -scale, scale);
    w.bk = rng.Vector(e, -scale, scale);
    w.bv = rng.Vector(e, -scale, scale);
    w.bo = rng.Vector(e, -scale, scale);
  }
  return w;
}

inline const float* OrNull(const std::vector<float>& v) {
  return v.empty() ? nullptr : v.data();
}

// torch.nn.MultiheadAttention forward in double. query [B, Lq, E], key
// [B, Lk, kdim], value [B, Lk, vdim]; out [B, Lq, E]; weights [B, H, Lq, Lk]
// and their mean over heads avg [B, Lq, Lk].
inline void RefMha(int64_t B, int64_t Lq, int64_t Lk, int64_t E, int64_t H,
                   int64_t kdim, int64_t vdim, const float* query,
                   const float* key, const float* value, const MhaWeights& w,
                   const RefMask& mask, std::vector<double>* out,
                   std::vector<double>* weights, std::vector<double>* avg) {
  const int64_t D = E / H;
  const auto qd = ToDouble(query, B * Lq * E);
  const auto kd = ToDouble(key, B * Lk * kdim);
  const auto vd = ToDouble(value, B * Lk * vdim);
  const auto Q = RefLinearTorch(B * Lq, E, E, qd.data(), w.wq.data(), OrNull(w.bq));
  const auto K = RefLinearTorch(B * Lk, kdim, E, kd.data(), w.wk.data(), OrNull(w.bk));
  const auto V = RefLinearTorch(B * Lk, vdim, E, vd.data(), w.wv.data(), OrNull(w.bv));
  // Split heads: [B, L, H, D] → [B, H, L, D].
  auto split = [&](const std::vector<double>& x, int64_t L) {
    std::vector<double> y(x.size());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t l = 0; l < L; ++l)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t d = 0; d < D; ++d)
            y[static_cast<size_t>(((b * H + h) * L + l) * D + d)] =
                x[static_cast<size_t>((b * L + l) * E + h * D + d)];
    return y;
  };
  const auto Qh = split(Q, Lq), Kh = split(K, Lk), Vh = split(V, Lk);
  std::vector<double> ctx_h;
  RefSdpa(B, H, Lq, Lk, D, D, Qh.data(), Kh.data(), Vh.data(),
          1.0 / std::sqrt(static_cast<double>(D)), mask, &ctx_h, weights);
  std::vector<double> ctx(static_cast<size_t>(B * Lq * E));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < Lq; ++l)
        for (int64_t d = 0; d < D; ++d)
          ctx[static_cast<size_t>((b * Lq + l) * E + h * D + d)] =
              ctx_h[static_cast<size_t>(((b * H + h) * Lq + l) * D + d)];
  *out = RefLinearTorch(B * Lq, E, E, ctx.data(), w.wo.data(), OrNull(w.bo));
  if (avg != nullptr) {
    avg->assign(static_cast<size_t>(B * Lq * Lk), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < Lq * Lk; ++t)
          (*avg)[static_cast<size_t>(b * Lq * Lk + t)] +=
              (*weights)[static_cast<size_t>((b * H + h) * Lq * Lk + t)] / static_cast<double>(H);
  }
}

// LayerNorm over the last dim (biased variance) of x [rows, dim] in double.
inline std::vector<double> RefLayerNorm(int64_t rows, int64_t dim,
                                        const std::vector<double>& x,
                                        const float* gamma, const float* beta,
                                        double eps) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * dim;
    double mean = 0.0;
    for (int64_t j = 0; j < dim; ++j) mean += xr[j];
    mean /= static_cast<double>(dim);
    double var = 0.0;
    for (int64_t j = 0; j < dim; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= static_cast<double>(dim);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < dim; ++j) {
      y[static_cast<size_t>(r * dim + j)] =
          (xr[j] - mean) * rstd * (gamma ? gamma[j] : 1.0) + (beta ? beta[j] : 0.0);
    }
  }
  return y;
}

// RMSNorm over the last dim of x [rows, dim] in double:
// y = x / sqrt(mean(x^2) + eps) * weight (null weight: ones).
inline std::vector<double> RefRmsNorm(int64_t rows, int64_t dim,
                                      const std::vector<double>& x,
                                      const float* weight, double eps) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * dim;
    double ms = 0.0;
    for (int64_t j = 0; j < dim; ++j) ms += xr[j] * xr[j];
    ms /= static_cast<double>(dim);
    const double inv = 1.0 / std::sqrt(ms + eps);
    for (int64_t j = 0; j < dim; ++j) {
      y[static_cast<size_t>(r * dim + j)] = xr[j] * inv * (weight ? weight[j] : 1.0);
    }
  }
  return y;
}

// Sinusoidal positional encoding in double: PE(pos, 2i) = sin(pos / base^(2i/E)),
// PE(pos, 2i+1) = cos(pos / base^(2i/E)).
inline std::vector<double> RefPositionalEncoding(int64_t L, int64_t E, double base) {
  std::vector<double> pe(static_cast<size_t>(L * E));
  for (int64_t pos = 0; pos < L; ++pos) {
    for (int64_t c = 0; c < E; ++c) {
      const int64_t i2 = c - (c % 2);
      const double angle = static_cast<double>(pos) /
                           std::pow(base, static_cast<double>(i2) / static_cast<double>(E));
      pe[static_cast<size_t>(pos * E + c)] = (c % 2 == 0) ? std::sin(angle) : std::cos(angle);
    }
  }
  return pe;
}

// The documented counter-based uniform, written out independently.
inline uint32_t RefPcg(uint32_t x) {
  uint32_t s = x * 747796405u + 2891336453u;
  uint32_t w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}
inline float RefDropoutUniform(uint32_t seed, uint32_t i) {
  const uint32_t h = RefPcg(seed ^ RefPcg(i));
  return static_cast<float>(static_cast<double>(h >> 8) / 16777216.0);
}

// ---------------------------------------------------------------------------
// Attention as today's models use it (ONNX Attention semantics), in double.
// Written from the documented rules (attention_lab.h, ONNX Attention-23/24):
//   s = q·kᵀ·scale; softcap: s = c·tanh(s/c); tensor mask (keep: 0 → fill;
//   block: m ≠ 0 → s + m·fill; additive: s + m); ALiBi: s -= slope_h·|p - j|;
//   key j of query i is masked (s = fill) when
//     causal and j > i + off_c,  j >= len_b,  window: j < p_w - left or
//     j > p_w + right (p_w = i + off_w, -1 unbounded),
//   off = len_b - Lq (bottom-right) or 0 (top-left), len_b = lengths[b] or Lk.
//   A row whose max is -inf: zeros when fill is -inf, else uniform 1/Lk.
//   GQA: query head h reads kv head h·Hkv/H.
struct RefModern {
  int64_t kv_heads = 0;  // 0: H
  double softcap = 0.0;  // 0: none
  double fill = kFill;
  bool causal = false;
  bool causal_bottom_right = false;
  int64_t causal_offset = 0;  // top-left: p_i = i + offset
  std::vector<int32_t> lengths;
  bool window = false;
  int64_t left = -1, right = -1;
  bool window_bottom_right = false;
  int64_t window_offset = 0;
  std::vector<float> slopes;  // ALiBi [H]; empty: none
  RefMask tensor;             // kind/data/shape only (causal/lengths unused)

  MaskSpec Spec() const {
    MaskSpec m = tensor.Spec();
    m.causal = causal;
    m.causal_align = causal_bottom_right ? attnlab::Align::kBottomRight : attnlab::Align::kTopLeft;
    m.lengths = lengths.empty() ? nullptr : lengths.data();
    m.window = window;
    m.window_left = left;
    m.window_right = right;
    m.window_align = window_bottom_right ? attnlab::Align::kBottomRight : attnlab::Align::kTopLeft;
    m.causal_offset = causal_offset;
    m.window_offset = window_offset;
    m.alibi = !slopes.empty();
    m.alibi_slopes = slopes.empty() ? nullptr : slopes.data();
    m.fill = static_cast<float>(fill);
    return m;
  }
  std::string Describe() const {
    std::ostringstream os;
    os << "modern{hkv=" << kv_heads << " softcap=" << softcap << " fill=" << fill
       << " causal=" << causal << (causal_bottom_right ? "(br)" : "(tl)")
       << " lengths=" << lengths.size() << " window=" << window << "[" << left << ","
       << right << "]" << (window_bottom_right ? "(br)" : "(tl)") << " alibi=" << slopes.size()
       << " " << tensor.Describe() << "}";
    return os.str();
  }
};

// q [B,H,Lq,D], k [B,Hkv,Lk,D], v [B,Hkv,Lk,Dv] → out [B,H,Lq,Dv], weights
// [B,H,Lq,Lk].
// T: float, or double for finite differences.
template <class T>
inline void RefSdpaModern(int64_t B, int64_t H, int64_t Lq, int64_t Lk,
                          int64_t D, int64_t Dv, const T* q, const T* k,
                          const T* v, double scale, const RefModern& m,
                          std::vector<double>* out,
                          std::vector<double>* weights) {
  const int64_t Hkv = m.kv_heads > 0 ? m.kv_heads : H;
  out->assign(static_cast<size_t>(B * H * Lq * Dv), 0.0);
  weights->assign(static_cast<size_t>(B * H * Lq * Lk), 0.0);
  std::vector<double> row(static_cast<size_t>(Lk));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = m.lengths.empty() ? Lk : m.lengths[static_cast<size_t>(b)];
    const int64_t off_c = m.causal_bottom_right ? len - Lq : m.causal_offset;
    const int64_t off_w = m.window_bottom_right ? len - Lq : m.window_offset;
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h * Hkv / H;
      const T* qh = q + (b * H + h) * Lq * D;
      const T* kh = k + (b * Hkv + g) * Lk * D;
      const T* vh = v + (b * Hkv + g) * Lk * Dv;
      for (int64_t i = 0; i < Lq; ++i) {
        for (int64_t j = 0; j < Lk; ++j) {
          double s = 0.0;
          for (int64_t p = 0; p < D; ++p) s += static_cast<double>(qh[i * D + p]) * kh[j * D + p];
          s *= scale;
          if (m.softcap > 0.0) s = m.softcap * std::tanh(s / m.softcap);
          if (m.tensor.kind != MaskKind::kNone) {
            const double mv = m.tensor.Value(b, h, i, j);
            if (m.tensor.kind == MaskKind::kKeep && mv == 0.0) s = m.fill;
            if (m.tensor.kind == MaskKind::kBlock && mv != 0.0) s += mv * m.fill;
            if (m.tensor.kind == MaskKind::kAdditive) s += mv;
          }
          if (!m.slopes.empty()) {
            s -= m.slopes[static_cast<size_t>(h)] * std::fabs(static_cast<double>(i + off_c - j));
          }
          bool masked = j >= len;
          if (m.causal && j > i + off_c) masked = true;
          if (m.window) {
            const int64_t p = i + off_w;
            if (m.left >= 0 && j < p - m.left) masked = true;
            if (m.right >= 0 && j > p + m.right) masked = true;
          }
          row[static_cast<size_t>(j)] = masked ? m.fill : s;
        }
        double mx = -kInf;
        for (int64_t j = 0; j < Lk; ++j) mx = std::max(mx, row[static_cast<size_t>(j)]);
        double* w = weights->data() + ((b * H + h) * Lq + i) * Lk;
        if (mx == -kInf) {
          const double u = std::isinf(m.fill) ? 0.0 : 1.0 / static_cast<double>(Lk);
          for (int64_t j = 0; j < Lk; ++j) w[j] = u;
        } else {
          double sum = 0.0;
          for (int64_t j = 0; j < Lk; ++j) sum += (w[j] = std::exp(row[static_cast<size_t>(j)] - mx));
          for (int64_t j = 0; j < Lk; ++j) w[j] /= sum;
        }
        double* o = out->data() + ((b * H + h) * Lq + i) * Dv;
        for (int64_t j = 0; j < Lk; ++j) {
          for (int64_t p = 0; p < Dv; ++p) o[p] += w[j] * vh[j * Dv + p];
        }
      }
    }
  }
}

// The ALiBi paper's slopes (its get_slopes), in double.
inline std::vector<double> RefAlibiSlopes(int64_t H) {
  auto pow2 = [](int64_t n) {
    std::vector<double> r;
    const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(n)) - 3.0)));
    for (int64_t i = 0; i < n; ++i) r.push_back(start * std::pow(start, static_cast<double>(i)));
    return r;
  };
  const double lg = std::log2(static_cast<double>(H));
  if (lg == std::floor(lg)) return pow2(H);
  const int64_t n = int64_t{1} << static_cast<int64_t>(std::floor(lg));
  std::vector<double> r = pow2(n);
  const std::vector<double> r2 = RefAlibiSlopes(2 * n);
  for (int64_t i = 0; i < H - n; ++i) r.push_back(r2[static_cast<size_t>(2 * i)]);
  return r;
}

// RoPE on one vector x[0, D) at position p (angles in double), ONNX pairs.
inline std::vector<double> RefRotate(const double* x, int64_t D, int64_t R,
                                     bool interleaved, const double* cosv,
                                     const double* sinv) {
  std::vector<double> y(x, x + D);
  for (int64_t i = 0; i < R / 2; ++i) {
    const int64_t a = interleaved ? 2 * i : i;
    const int64_t b = interleaved ? 2 * i + 1 : i + R / 2;
    y[static_cast<size_t>(a)] = cosv[i] * x[a] - sinv[i] * x[b];
    y[static_cast<size_t>(b)] = sinv[i] * x[a] + cosv[i] * x[b];
  }
  return y;
}
inline void RefRopeAngles(double p, int64_t R, double base, double* c, double* s) {
  for (int64_t i = 0; i < R / 2; ++i) {
    const double th = p / std::pow(base, 2.0 * static_cast<double>(i) / static_cast<double>(R));
    c[i] = std::cos(th);
    s[i] = std::sin(th);
  }
}

}  // namespace attnlab_test

#endif  // ATTNLAB_TESTS_NATIVE_REFERENCE_H_

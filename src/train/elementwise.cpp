// Element-wise layers, forward and backward:
//   GELU       y = x·Φ(x) = x/2·(1 + erf(x/√2));  dx = dy·(Φ(x) + x·φ(x))
//              (the backward's erf to 1.5e-7 absolute, see NormalCdfPdf)
//   dropout    the core's inverted dropout (attention_lab.h); it is linear,
//              so the backward applies the same mask and 1/(1-p) to dy
//   gelu_new   GPT-2's tanh form; SwiGLU  y = SiLU(gate)·up (Llama's MLP);
//   GeGLU      y = GELU(gate)·up, erf or tanh form (Gemma's MLP)
//   embedding  out[r] = table[token[r]] + pos[r mod L];
//              dtable[token[r]] += dy[r], dpos[r mod L] += dy[r]
#include <cmath>
#include <cstring>

#include "train/ops.h"

namespace attnlab {
namespace train {

namespace {
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// Φ(x) and φ(x) from one exp: erf(z), z = |x|/√2, by Abramowitz & Stegun
// 7.1.26 (|error| <= 1.5e-7): erf(z) = 1 − poly(t)·e^{−z²}, t = 1/(1 + p·z),
// and e^{−z²} = e^{−x²/2} is also √(2π)·φ(x).
inline void NormalCdfPdf(float x, float* cdf, float* pdf) {
  const float z = std::fabs(x) * kInvSqrt2;
  const float t = 1.0f / (1.0f + 0.3275911f * z);
  const float poly =
      t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float e = std::exp(-0.5f * x * x);
  const float erf_z = 1.0f - poly * e;
  *cdf = 0.5f * (1.0f + (x >= 0.0f ? erf_z : -erf_z));
  *pdf = kInvSqrt2Pi * e;
}

// GELU(x) = x·Φ(x) at x: its value and its derivative Φ(x) + x·φ(x).
inline void GeluAt(float x, float* act, float* slope) {
  float cdf, pdf;
  NormalCdfPdf(x, &cdf, &pdf);
  *act = x * cdf;
  *slope = cdf + x * pdf;
}

constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kGeluCubic = 0.044715f;

// gelu_new at x: 0.5x(1 + t), t = tanh(u), and its derivative
// 0.5(1 + t) + 0.5x(1 − t²)·√(2/π)(1 + 3·0.044715x²).
inline void GeluTanhAt(float x, float* act, float* slope) {
  const float t = std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
  const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  *act = 0.5f * x * (1.0f + t);
  *slope = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}
}  // namespace

// The forwards are the core's activation kernels (src/kernels/activation.cpp,
// SIMD on the active kernel set): one definition for training and models.
void GeluForward(int64_t n, const float* x, float* y) { kernels::Gelu(n, x, y); }

void GeluBackward(int64_t n, const float* x, const float* dy, float* dx) {
  for (int64_t i = 0; i < n; ++i) {
    float act, slope;
    GeluAt(x[i], &act, &slope);
    dx[i] = dy[i] * slope;
  }
}

void GeluTanhForward(int64_t n, const float* x, float* y) { kernels::GeluTanh(n, x, y); }

void GeluTanhBackward(int64_t n, const float* x, const float* dy, float* dx) {
  for (int64_t i = 0; i < n; ++i) {
    float act, slope;
    GeluTanhAt(x[i], &act, &slope);
    dx[i] = dy[i] * slope;
  }
}

void ReluForward(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void ReluBackward(int64_t n, const float* x, const float* dy, float* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

void SiluForward(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

// d/dx x·σ(x) = σ(x)(1 + x(1 − σ(x))).
void SiluBackward(int64_t n, const float* x, const float* dy, float* dx) {
  for (int64_t i = 0; i < n; ++i) {
    const float sg = 1.0f / (1.0f + std::exp(-x[i]));
    dx[i] = dy[i] * sg * (1.0f + x[i] * (1.0f - sg));
  }
}

void SwiGluForward(int64_t n, const float* gate, const float* up, float* y) {
  kernels::SwiGlu(n, gate, up, y);
}

// dgate = dy·up·σ(g)(1 + g(1 − σ(g))), dup = dy·SiLU(g).
void SwiGluBackward(int64_t n, const float* gate, const float* up,
                    const float* dy, float* dgate, float* dup) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i], u = up[i], d = dy[i];
    const float sg = 1.0f / (1.0f + std::exp(-g));
    const float dg = d * u * sg * (1.0f + g * (1.0f - sg));
    dup[i] = d * g * sg;
    dgate[i] = dg;
  }
}

void GeGluForward(int64_t n, const float* gate, const float* up, bool tanh_form, float* y) {
  if (tanh_form) {
    kernels::GeluTanh(n, gate, y);
  } else {
    kernels::Gelu(n, gate, y);
  }
  for (int64_t i = 0; i < n; ++i) y[i] *= up[i];
}

// dgate = dy·up·GELU'(g), dup = dy·GELU(g) (GELU recomputed as in the
// backwards above).
void GeGluBackward(int64_t n, const float* gate, const float* up, bool tanh_form,
                   const float* dy, float* dgate, float* dup) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i], u = up[i], d = dy[i];
    float act, slope;
    if (tanh_form) {
      GeluTanhAt(g, &act, &slope);
    } else {
      GeluAt(g, &act, &slope);
    }
    dup[i] = d * act;
    dgate[i] = d * u * slope;
  }
}

void DropoutForward(int64_t n, float p, uint32_t seed, float* x) {
  if (p > 0.0f) Dropout(n, p, seed, x);
}

void DropoutBackward(int64_t n, float p, uint32_t seed, float* dy) {
  if (p > 0.0f) Dropout(n, p, seed, dy);
}

void EmbeddingForward(int64_t rows, int64_t length, int64_t dim,
                      const float* table, const float* pos,
                      const int32_t* tokens, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* t = table + static_cast<int64_t>(tokens[r]) * dim;
    float* o = out + r * dim;
    if (pos != nullptr) {
      const float* pr = pos + (r % length) * dim;
      for (int64_t j = 0; j < dim; ++j) o[j] = t[j] + pr[j];
    } else {
      std::memcpy(o, t, static_cast<size_t>(dim) * sizeof(float));
    }
  }
}

void EmbeddingBackward(int64_t rows, int64_t length, int64_t dim,
                       const int32_t* tokens, const float* dy, float* dtable,
                       float* dpos) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = dy + r * dim;
    float* t = dtable + static_cast<int64_t>(tokens[r]) * dim;
    for (int64_t j = 0; j < dim; ++j) t[j] += g[j];
    if (dpos != nullptr) {
      float* pr = dpos + (r % length) * dim;
      for (int64_t j = 0; j < dim; ++j) pr[j] += g[j];
    }
  }
}

}  // namespace train
}  // namespace attnlab

// The MLP activations (src/kernels/activation.cpp) on both kernel sets
// against double references: gelu_new (tanh form), erf GELU and SwiGLU, at
// lengths around the SIMD width, over [-12, 12] (saturated tails included).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/kernels.h"

namespace {

namespace k = attnlab::kernels;

TEST(Activations, MatchDoubleReferencesOnBothKernelSets) {
  for (bool scalar : {false, true}) {
    const bool before = k::UseScalarKernels(scalar);
    for (int64_t n : {1, 3, 4, 5, 8, 9, 1001}) {
      std::vector<float> x(n), g(n), y(n);
      for (int64_t i = 0; i < n; ++i) {
        x[i] = -12.0f + 24.0f * static_cast<float>(i) / static_cast<float>(std::max<int64_t>(n - 1, 1));
        g[i] = std::cos(static_cast<float>(i));
      }
      auto check = [&](const char* what, auto ref) {
        for (int64_t i = 0; i < n; ++i) {
          const double want = ref(i);
          ASSERT_NEAR(y[i], want, 2e-6 * std::max(1.0, std::fabs(want)))
              << what << (scalar ? " scalar" : " simd") << " n=" << n << " x=" << x[i];
        }
      };
      k::GeluTanh(n, x.data(), y.data());
      check("gelu_new", [&](int64_t i) {
        const double v = x[i];
        return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
      });
      k::Gelu(n, x.data(), y.data());
      check("gelu", [&](int64_t i) { return 0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0))); });
      k::SwiGlu(n, x.data(), g.data(), y.data());
      check("swiglu", [&](int64_t i) { return x[i] / (1.0 + std::exp(-static_cast<double>(x[i]))) * g[i]; });
    }
    k::UseScalarKernels(before);
  }
}

}  // namespace

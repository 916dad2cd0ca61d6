// GemvT (src/kernels/gemv.cpp), the decoding GEMV over torch-layout weights:
// both kernel sets against a double reference at sizes equal to, below,
// above and a multiple of the SIMD width and of the 4-row block, with and
// without a bias, rows strided (ldx, ldw, ldy larger than the sizes); N
// leaves every remainder of the four-row blocks (and of the four-panel
// blocks of GemvPacked: 75 and 100 columns are 10 and 13 panels).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "internal.h"
#include "kernels/kernels.h"

namespace {

namespace k = attnlab::kernels;

TEST(GemvT, MatchesADoubleReferenceOnBothKernelSets) {
  std::mt19937 g(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (bool scalar : {false, true}) {
    const bool before = k::UseScalarKernels(scalar);
    for (int64_t m : {1, 2, 3, 4}) {
      for (int64_t n : {1, 3, 4, 5, 8, 14, 67}) {
        for (int64_t kk : {1, 3, 4, 5, 8, 17, 64, 771}) {
          for (bool bias : {false, true}) {
            const int64_t ldx = kk + 3, ldw = kk + 1, ldy = n + 2;
            std::vector<float> x(m * ldx), w(n * ldw), b(n), y(m * ldy, 7.0f);
            for (auto& v : x) v = u(g);
            for (auto& v : w) v = u(g);
            for (auto& v : b) v = u(g);
            k::GemvT(m, n, kk, x.data(), ldx, w.data(), ldw, bias ? b.data() : nullptr, y.data(), ldy);
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t j = 0; j < n; ++j) {
                double s = bias ? b[j] : 0.0;
                for (int64_t p = 0; p < kk; ++p) s += static_cast<double>(x[i * ldx + p]) * w[j * ldw + p];
                ASSERT_NEAR(y[i * ldy + j], s, 1e-5 * (1.0 + std::sqrt(static_cast<double>(kk))))
                    << (scalar ? "scalar" : "simd") << " m=" << m << " n=" << n << " k=" << kk << " (" << i << "," << j << ")";
              }
              for (int64_t j = n; j < ldy; ++j) ASSERT_EQ(y[i * ldy + j], 7.0f) << "wrote past the row";
            }
          }
        }
      }
    }
    k::UseScalarKernels(before);
  }
}

TEST(GemvPacked, MatchesADoubleReferenceOverPackedWeights) {
  std::mt19937 g(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (bool scalar : {false, true}) {
    const bool before = k::UseScalarKernels(scalar);
    for (int64_t m : {1, 2, 4}) {
      for (int64_t n : {1, 7, 16, 33, 75, 100}) {
        for (int64_t kk : {1, 2, 3, 64, 97}) {
          std::vector<float> x(m * kk), w(n * kk), b(n), y(m * n);
          for (auto& v : x) v = u(g);
          for (auto& v : w) v = u(g);
          for (auto& v : b) v = u(g);
          attnlab::internal::AlignedBuffer buf;
          ASSERT_TRUE(buf.Reserve(k::PackedFloats(kk, n)));
          const k::PackedB pb = k::PackB(kk, n, w.data(), 1, kk, buf.data());  // B(k, n) = W[n, k]
          k::GemvPacked(m, n, kk, x.data(), kk, pb, b.data(), y.data(), n);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              double s = b[j];
              for (int64_t p = 0; p < kk; ++p) s += static_cast<double>(x[i * kk + p]) * w[j * kk + p];
              ASSERT_NEAR(y[i * n + j], s, 1e-5 * (1.0 + std::sqrt(static_cast<double>(kk))))
                  << (scalar ? "scalar" : "simd") << " m=" << m << " n=" << n << " k=" << kk;
            }
          }
        }
      }
    }
    k::UseScalarKernels(before);
  }
}

}  // namespace

// GEMM kernel tests (kernels::PackB / kernels::Gemm), XNNPACK style: every
// shape is checked against a double-precision reference, for both kernel sets,
// at N equal to, below, above and multiples of the panel width GemmNr() and of
// 4/8/16/32, M tails 1–3 around the 4-row micro-kernel and the 128-row block,
// K = 1, odd K and K around the 768-deep block.
//
// Tolerance (GEMM): the error bound of a float32 dot product of length K,
//   |c - ĉ| <= γ(K+1) · (|bias| + Σ_k |a_ik|·|b_kj|),   γ(n) = n·u, u = 2^-24
// (Higham, Accuracy and Stability, §3.1), doubled for safety. This holds for
// any summation order, FMA or not, and is tight enough to catch a single
// wrong or missing term.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/kernels.h"
#include "thread_pool.h"
#include "reference.h"

namespace attnlab_test {
namespace {

namespace k = attnlab::kernels;

class GemmTest : public ::testing::TestWithParam<bool> {
 protected:
  GemmTest() : kernels_(GetParam()) {}
  ScopedKernelSet kernels_;
};

struct GemmCase {
  int64_t m, n, kk;
  int64_t lda_pad = 0;   // lda = K + lda_pad
  int64_t ldc_pad = 0;   // ldc = N + ldc_pad
  bool bias = false;
  bool transposed_b = false;  // pack from B stored as [N, K]
};

// Runs one GEMM and checks it against the reference.
void RunGemm(const GemmCase& c, uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << "M=" << c.m << " N=" << c.n << " K=" << c.kk << " lda_pad="
               << c.lda_pad << " ldc_pad=" << c.ldc_pad << " bias=" << c.bias
               << " transposed_b=" << c.transposed_b << " nr=" << k::GemmNr(c.n));
  Rng rng(seed);
  const int64_t lda = c.kk + c.lda_pad, ldc = c.n + c.ldc_pad;
  const std::vector<float> a = rng.Vector(c.m * lda);
  const std::vector<float> b = rng.Vector(c.kk * c.n);  // [K, N] or [N, K]
  const std::vector<float> bias = rng.Vector(c.n);
  const int64_t sk = c.transposed_b ? 1 : c.n;
  const int64_t sn = c.transposed_b ? c.kk : 1;

  AlignedFloats packed(static_cast<size_t>(k::PackedFloats(c.kk, c.n)), std::nanf(""));
  const k::PackedB pb = k::PackB(c.kk, c.n, b.data(), sk, sn, packed.data());
  EXPECT_EQ(pb.data, packed.data());
  EXPECT_EQ(pb.nr, k::GemmNr(c.n));

  // C is prefilled with NaN inside the written region (Gemm must overwrite,
  // not accumulate) and a sentinel in the ldc padding (must stay untouched).
  std::vector<float> cbuf(static_cast<size_t>(c.m * ldc), kSentinel);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) cbuf[static_cast<size_t>(i * ldc + j)] = std::nanf("");
  k::Gemm(c.m, c.n, c.kk, a.data(), lda, pb, c.bias ? bias.data() : nullptr, cbuf.data(), ldc);

  const std::vector<double> want =
      RefGemm(c.m, c.n, c.kk, a.data(), lda, b.data(), sk, sn, c.bias ? bias.data() : nullptr);
  int64_t bad = 0;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double abs_sum = c.bias ? std::fabs(bias[j]) : 0.0;
      for (int64_t p = 0; p < c.kk; ++p)
        abs_sum += std::fabs(static_cast<double>(a[i * lda + p]) * b[p * sk + j * sn]);
      const double tol = 2.0 * (c.kk + 1) * kU * abs_sum + 1e-30;
      const double got = cbuf[static_cast<size_t>(i * ldc + j)];
      const double w = want[static_cast<size_t>(i * c.n + j)];
      if (!(std::fabs(got - w) <= tol) && bad++ < 5) {
        ADD_FAILURE() << "C(" << i << "," << j << ") = " << got << ", want " << w
                      << " (tol " << tol << ")";
      }
    }
    for (int64_t j = c.n; j < ldc; ++j) {
      if (!Untouched(&cbuf[static_cast<size_t>(i * ldc + j)], 1) && bad++ < 5) {
        ADD_FAILURE() << "C(" << i << "," << j << ") past N was written";
      }
    }
  }
  EXPECT_EQ(bad, 0) << "mismatching elements";
}

std::vector<int64_t> NSizes() {
  const int64_t nr = k::GemmNr(1 << 20);  // the SIMD panel width (scalar: n itself)
  std::vector<int64_t> ns = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 64, 65};
  if (nr < 1024) {
    for (int64_t n : {nr - 1, nr, nr + 1, 2 * nr, 3 * nr + 5}) {
      if (n >= 1) ns.push_back(n);
    }
  }
  return ns;
}

TEST_P(GemmTest, ShapesSweepMN) {
  // M around the 4-row micro-kernel (tails 1-3) and the 128-row block.
  const int64_t ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 63, 64, 65, 67, 127, 128, 129, 131, 259};
  uint32_t seed = 1;
  for (int64_t kk : {1, 3, 17}) {
    for (int64_t m : ms) {
      for (int64_t n : NSizes()) {
        RunGemm({m, n, kk}, seed++);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_P(GemmTest, ShapesSweepK) {
  // K = 1, even/odd K (the micro-kernel unrolls K by 2), multiples of 4/8/16,
  // and K around 768 and beyond (K is processed in blocks of 768).
  uint32_t seed = 1000;
  for (int64_t kk : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, 255, 256, 257,
                     511, 512, 513, 767, 768, 769, 1100, 1537}) {
    for (int64_t m : {1, 3, 4, 7}) {
      for (int64_t n : {1, 8, 16, 17, 33}) {
        RunGemm({m, n, kk}, seed++);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_P(GemmTest, BiasStridesAndTransposedB) {
  uint32_t seed = 2000;
  for (int64_t m : {1, 2, 3, 4, 5, 66}) {
    for (int64_t n : {1, 7, 16, 17, 32, 35}) {
      for (int64_t kk : {1, 6, 13}) {
        RunGemm({m, n, kk, /*lda_pad=*/3, /*ldc_pad=*/5, /*bias=*/true, false}, seed++);
        RunGemm({m, n, kk, 0, 0, /*bias=*/true, /*transposed_b=*/true}, seed++);
        RunGemm({m, n, kk, 7, 1, false, /*transposed_b=*/true}, seed++);
        if (HasFailure()) return;
      }
    }
  }
}

// Small integers make every product and partial sum exact in float32, so the
// result must match bit for bit whatever the summation order.
TEST_P(GemmTest, ExactOnSmallIntegers) {
  Rng rng(77);
  for (int64_t m : {1, 3, 4, 5, 9}) {
    for (int64_t n : {1, 15, 16, 17, 40}) {
      for (int64_t kk : {1, 2, 5, 16, 33}) {
        std::vector<float> a(static_cast<size_t>(m * kk)), b(static_cast<size_t>(kk * n)),
            bias(static_cast<size_t>(n));
        for (auto& x : a) x = static_cast<float>(rng.Int(-8, 8));
        for (auto& x : b) x = static_cast<float>(rng.Int(-8, 8));
        for (auto& x : bias) x = static_cast<float>(rng.Int(-100, 100));
        AlignedFloats packed(static_cast<size_t>(k::PackedFloats(kk, n)));
        const k::PackedB pb = k::PackB(kk, n, b.data(), n, 1, packed.data());
        std::vector<float> c(static_cast<size_t>(m * n));
        k::Gemm(m, n, kk, a.data(), kk, pb, bias.data(), c.data(), n);
        const auto want = RefGemm(m, n, kk, a.data(), kk, b.data(), n, 1, bias.data());
        for (size_t i = 0; i < c.size(); ++i) {
          ASSERT_EQ(static_cast<double>(c[i]), want[i])
              << "M=" << m << " N=" << n << " K=" << kk << " at " << i;
        }
      }
    }
  }
}

// Every element of packed panels against b_at(r, col), B's element (zero past N).
template <class F>
void ExpectPanels(const AlignedFloats& packed, const k::PackedB& pb, int64_t n, int64_t kk, F b_at) {
  const int64_t nr = pb.nr, panels = (n + nr - 1) / nr;
  for (int64_t p = 0; p < panels; ++p) {
    for (int64_t r = 0; r < kk; ++r) {
      for (int64_t c = 0; c < nr; ++c) {
        const int64_t col = p * nr + c;
        const float got = packed[static_cast<size_t>(p * pb.panel_stride + r * nr + c)];
        const float want = col < n ? b_at(r, col) : 0.0f;
        ASSERT_EQ(got, want) << "n=" << n << " k=" << kk << " panel " << p << " row " << r << " col " << c;
      }
    }
  }
}

// The packed layout is part of the kernel interface:
//   B(k, n) = data[(n / nr) * panel_stride + k * nr + n % nr], zero past N.
TEST_P(GemmTest, PackedLayout) {
  Rng rng(5);
  for (int64_t n : NSizes()) {
    for (int64_t kk : {1, 2, 7}) {
      const std::vector<float> b = rng.Vector(kk * n);
      const int64_t floats = k::PackedFloats(kk, n);
      const int64_t nr = k::GemmNr(n);
      const int64_t panels = (n + nr - 1) / nr;
      ASSERT_GE(floats, panels * nr * kk) << "n=" << n << " k=" << kk;
      AlignedFloats packed(static_cast<size_t>(floats), std::nanf(""));
      const k::PackedB pb = k::PackB(kk, n, b.data(), n, 1, packed.data());
      ASSERT_EQ(pb.nr, nr);
      ASSERT_GE(pb.panel_stride, kk * nr);
      ExpectPanels(packed, pb, n, kk, [&](int64_t r, int64_t col) { return b[static_cast<size_t>(r * n + col)]; });
      if (HasFatalFailure()) return;
    }
  }
}

// The same layout packed from B stored as [N, K] (the torch layout: sk = 1,
// sn = K + pad), whose whole panels the SIMD set packs by 4×4 transposes.
TEST_P(GemmTest, PackedLayoutFromTransposedB) {
  Rng rng(6);
  for (int64_t n : NSizes()) {
    for (int64_t kk : {1, 3, 4, 7, 8, 13, 768}) {
      const int64_t sn = kk + 3;
      const std::vector<float> b = rng.Vector(n * sn);
      AlignedFloats packed(static_cast<size_t>(k::PackedFloats(kk, n)), std::nanf(""));
      const k::PackedB pb = k::PackB(kk, n, b.data(), 1, sn, packed.data());
      ASSERT_EQ(pb.nr, k::GemmNr(n));
      ExpectPanels(packed, pb, n, kk, [&](int64_t r, int64_t col) { return b[static_cast<size_t>(col * sn + r)]; });
      if (HasFatalFailure()) return;
    }
  }
}

// "The K-prefix and the N-prefix of a packed matrix are themselves valid packed
// matrices": the attention core relies on this to skip masked columns.
TEST_P(GemmTest, PrefixesOfPackedMatrix) {
  Rng rng(9);
  const int64_t K = 21;
  for (int64_t N : {5, 16, 17, 40, 70}) {
    const int64_t M = 6;
    const std::vector<float> a = rng.Vector(M * K);
    const std::vector<float> b = rng.Vector(K * N);
    AlignedFloats packed(static_cast<size_t>(k::PackedFloats(K, N)));
    const k::PackedB pb = k::PackB(K, N, b.data(), N, 1, packed.data());
    for (int64_t kp : {int64_t{1}, int64_t{2}, int64_t{10}, K}) {
      for (int64_t np : {int64_t{1}, int64_t{3}, N / 2 + 1, N}) {
        std::vector<float> c(static_cast<size_t>(M * np));
        k::Gemm(M, np, kp, a.data(), K, pb, nullptr, c.data(), np);
        // Reference over the prefixes: B's leading dimension stays N.
        const auto want = RefGemm(M, np, kp, a.data(), K, b.data(), N, 1, nullptr);
        ExpectAllClose(c.data(), want.data(), M * np, 2.0 * (kp + 1) * kU * kp, 0.0,
                       "prefix N=" + std::to_string(N) + " k'=" + std::to_string(kp) +
                           " n'=" + std::to_string(np));
      }
    }
  }
}

// GemmT (W unpacked, [N, K] rows ldw apart, each task packing its own slice)
// is Gemm over PackB(W) bit for bit, at any thread count: N across several
// slices (a slice is about 2^16 floats, so N > 2^16 / K spans many) and M
// across the 128-row block, with a bias, padded strides and W's rows padded.
TEST_P(GemmTest, TransposedUnpackedEqualsPackedBitForBit) {
  uint32_t seed = 3000;
  for (int threads : {1, 3}) {
    ASSERT_TRUE(attnlab::SetThreadCount(threads).ok());
    for (int64_t m : {1, 5, 130}) {
      for (int64_t kk : {0, 1, 33, 768, 800}) {
        for (int64_t n : {1, 17, 700}) {
          SCOPED_TRACE(::testing::Message() << "threads=" << threads << " M=" << m << " N=" << n << " K=" << kk);
          Rng rng(seed++);
          const int64_t lda = kk + 2, ldw = kk + 3, ldc = n + 1;
          const std::vector<float> a = rng.Vector(m * lda), w = rng.Vector(n * ldw), bias = rng.Vector(n);
          AlignedFloats packed(static_cast<size_t>(k::PackedFloats(kk, n)));
          const k::PackedB pb = k::PackB(kk, n, w.data(), 1, ldw, packed.data());
          std::vector<float> want(static_cast<size_t>(m * ldc), kSentinel), got = want;
          k::Gemm(m, n, kk, a.data(), lda, pb, bias.data(), want.data(), ldc);
          k::GemmT(m, n, kk, a.data(), lda, w.data(), ldw, bias.data(), got.data(), ldc);
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
                << "at " << i << ": " << got[i] << " vs Gemm's " << want[i];
          }
          const std::vector<double> ref = RefGemm(m, n, kk, a.data(), lda, w.data(), 1, ldw, bias.data());
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              double abs_sum = std::fabs(bias[j]);
              for (int64_t p = 0; p < kk; ++p) abs_sum += std::fabs(static_cast<double>(a[i * lda + p]) * w[j * ldw + p]);
              ASSERT_NEAR(got[i * ldc + j], ref[i * n + j], 2.0 * (kk + 1) * kU * abs_sum + 1e-30) << "C(" << i << "," << j << ")";
            }
          }
        }
      }
    }
  }
  ASSERT_TRUE(attnlab::SetThreadCount(1).ok());
}

TEST_P(GemmTest, PanelWidthMatchesKernelSet) {
  if (GetParam()) {
    // Scalar: one panel of width N.
    EXPECT_EQ(k::GemmNr(1), 1);
    EXPECT_EQ(k::GemmNr(37), 37);
  } else {
    // SIMD: two vectors of at least 4 floats (SSE/SIMD128 8, AVX2 16, AVX-512 32).
    const int64_t nr = k::GemmNr(1);
    EXPECT_GE(nr, 8);
    EXPECT_EQ(nr % 8, 0);
    EXPECT_EQ(k::GemmNr(1000), nr);
  }
}

INSTANTIATE_TEST_SUITE_P(KernelSets, GemmTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return KernelSetName(info.param);
                         });

}  // namespace
}  // namespace attnlab_test

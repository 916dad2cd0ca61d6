// Dropout and DropoutUniform: the counter-based uniform matches the
// documented PCG formula (written out independently in reference.h) bit for
// bit; inverted dropout drops exactly the elements with DropoutUniform < p and
// scales the rest by 1/(1 - p); the drop rate is p; masks depend only on
// (seed, index).
//
// Tolerance (kept elements): 2 ulp relative (x·(1/(1-p)) and x/(1-p) may
// differ by one rounding). Drop rate over 2e5 draws: ±0.005 (> 10 standard
// deviations of a binomial proportion).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attention_lab.h"
#include "reference.h"

namespace attnlab_test {
namespace {

using attnlab::Status;

TEST(DropoutUniform, MatchesDocumentedFormula) {
  for (uint32_t seed : {0u, 1u, 7u, 12345u, 0xdeadbeefu, 0xffffffffu}) {
    for (uint32_t i = 0; i < 5000; ++i) {
      const float got = attnlab::DropoutUniform(seed, i);
      ASSERT_EQ(got, RefDropoutUniform(seed, i)) << "seed " << seed << " i " << i;
    }
    for (uint32_t i : {0xfffffffeu, 0xffffffffu, 0x80000000u}) {
      ASSERT_EQ(attnlab::DropoutUniform(seed, i), RefDropoutUniform(seed, i));
    }
  }
}

TEST(DropoutUniform, RangeAndResolution) {
  double sum = 0.0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = attnlab::DropoutUniform(99, static_cast<uint32_t>(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    const double scaled = static_cast<double>(u) * 16777216.0;  // 24-bit grid
    ASSERT_EQ(scaled, std::floor(scaled)) << u;
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
}

TEST(Dropout, DropsExactlyWhereUniformBelowP) {
  Rng rng(1);
  for (float p : {0.1f, 0.25f, 0.5f, 0.9f}) {
    for (uint32_t seed : {0u, 7u, 12345u}) {
      const int64_t n = 1037;
      const std::vector<float> x0 = rng.Vector(n);
      std::vector<float> x = x0;
      const Status s = attnlab::Dropout(n, p, seed, x.data());
      ASSERT_TRUE(s.ok()) << s.message;
      for (int64_t i = 0; i < n; ++i) {
        const float xi = x[static_cast<size_t>(i)];
        if (RefDropoutUniform(seed, static_cast<uint32_t>(i)) < p) {
          ASSERT_EQ(xi, 0.0f) << "p " << p << " seed " << seed << " i " << i;
        } else {
          const double want = static_cast<double>(x0[static_cast<size_t>(i)]) / (1.0 - static_cast<double>(p));
          ASSERT_NEAR(xi, want, 2.0 * 2.0 * kU * std::fabs(want))
              << "p " << p << " seed " << seed << " i " << i;
        }
      }
    }
  }
}

TEST(Dropout, RateMatchesP) {
  const int64_t n = 200000;
  for (float p : {0.1f, 0.5f, 0.9f}) {
    std::vector<float> x(static_cast<size_t>(n), 1.0f);
    ASSERT_TRUE(attnlab::Dropout(n, p, 2024, x.data()).ok());
    int64_t dropped = 0;
    double sum = 0.0;
    for (float v : x) {
      dropped += v == 0.0f;
      sum += v;
    }
    EXPECT_NEAR(static_cast<double>(dropped) / n, p, 0.005) << "p " << p;
    EXPECT_NEAR(sum / n, 1.0, 0.05) << "inverted dropout keeps the mean, p " << p;
  }
}

TEST(Dropout, PZeroAndEmptyAreNoOps) {
  Rng rng(2);
  const std::vector<float> x0 = rng.Vector(100);
  std::vector<float> x = x0;
  ASSERT_TRUE(attnlab::Dropout(100, 0.0f, 5, x.data()).ok());
  EXPECT_EQ(x, x0);
  ASSERT_TRUE(attnlab::Dropout(0, 0.5f, 5, x.data()).ok());
  EXPECT_EQ(x, x0);
}

TEST(Dropout, MaskDependsOnlyOnSeedAndIndex) {
  std::vector<float> a(300, 1.0f), b(1000, 1.0f), c(300, 1.0f), d(300, 1.0f);
  ASSERT_TRUE(attnlab::Dropout(300, 0.3f, 77, a.data()).ok());
  ASSERT_TRUE(attnlab::Dropout(1000, 0.3f, 77, b.data()).ok());
  ASSERT_TRUE(attnlab::Dropout(300, 0.3f, 77, c.data()).ok());
  ASSERT_TRUE(attnlab::Dropout(300, 0.3f, 78, d.data()).ok());
  EXPECT_EQ(a, c) << "same seed, same mask";
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin())) << "a prefix call gives the prefix";
  EXPECT_NE(a, d) << "another seed gives another mask";
}

}  // namespace
}  // namespace attnlab_test

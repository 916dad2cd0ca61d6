// RmsNorm (src/rms_norm.cpp) against the double-precision reference
// RefRmsNorm: widths around the SIMD width (tails), with and without a
// weight, several eps, in place (y aliasing x), rows of zeros (y = 0) and
// rows with a large common scale; bad arguments give a Status naming them.
// RmsNorm has one implementation (the mean of squares in double), so it does
// not depend on the kernel set.
//
// Tolerance: |got - want| <= 1e-6 + 1e-5·|want|. The double sum leaves one
// float rounding of 1/sqrt(·) and two of the products (~3 ulp relative);
// observed worst ~2e-7 relative.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attention_lab.h"
#include "reference.h"

namespace attnlab_test {
namespace {

using attnlab::Status;

constexpr double kAbs = 1e-6, kRel = 1e-5;

void CheckRmsNorm(int64_t rows, int64_t dim, bool weight, double eps, uint32_t seed,
                  float scale = 1.0f, bool in_place = false) {
  SCOPED_TRACE(::testing::Message() << "rows=" << rows << " dim=" << dim << " weight=" << weight
                                    << " eps=" << eps << " scale=" << scale << " in_place=" << in_place);
  Rng rng(seed);
  std::vector<float> x = rng.Vector(rows * dim);
  for (float& v : x) v *= scale;
  const std::vector<float> w = rng.Vector(dim, 0.5f, 1.5f);
  const std::vector<double> want =
      RefRmsNorm(rows, dim, ToDouble(x.data(), rows * dim), weight ? w.data() : nullptr, eps);
  std::vector<float> y(x.size(), -7.0f);
  attnlab::RmsNormArgs a;
  a.rows = rows;
  a.dim = dim;
  a.x = x.data();
  a.weight = weight ? w.data() : nullptr;
  a.eps = eps;
  a.y = in_place ? x.data() : y.data();
  const Status s = attnlab::RmsNorm(a);
  ASSERT_TRUE(s.ok()) << s.message;
  const std::vector<float>& got = in_place ? x : y;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], kAbs + kRel * std::fabs(want[i])) << "element " << i;
  }
}

TEST(RmsNorm, WidthSweep) {
  for (int64_t dim : {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 64, 127, 512}) {
    CheckRmsNorm(3, dim, true, 1e-5, 100 + static_cast<uint32_t>(dim));
  }
}

TEST(RmsNorm, WithoutWeightAndEpsilon) {
  for (double eps : {1e-6, 1e-5, 1e-2, 1.0}) {
    CheckRmsNorm(4, 24, false, eps, 200);
    CheckRmsNorm(4, 24, true, eps, 201);
  }
}

TEST(RmsNorm, InPlaceAndScaledRows) {
  CheckRmsNorm(5, 37, true, 1e-5, 300, 1.0f, true);
  CheckRmsNorm(5, 37, true, 1e-5, 301, 1000.0f);
  CheckRmsNorm(5, 37, false, 1e-5, 302, 1e-3f);
}

TEST(RmsNorm, ZeroRowGivesZero) {
  std::vector<float> x(2 * 6, 0.0f), y(x.size(), 1.0f);
  attnlab::RmsNormArgs a;
  a.rows = 2;
  a.dim = 6;
  a.x = x.data();
  a.y = y.data();
  ASSERT_TRUE(attnlab::RmsNorm(a).ok());
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

TEST(RmsNorm, BadArgumentsAreNamed) {
  std::vector<float> x(6, 1.0f), y(6);
  attnlab::RmsNormArgs a;
  a.rows = 2;
  a.dim = 3;
  a.x = x.data();
  a.y = y.data();
  struct Case { const char* what; void (*edit)(attnlab::RmsNormArgs*); };
  for (const Case& c : {Case{"rows", [](attnlab::RmsNormArgs* b) { b->rows = 0; }},
                        Case{"E (the last dim)", [](attnlab::RmsNormArgs* b) { b->dim = -1; }},
                        Case{"eps", [](attnlab::RmsNormArgs* b) { b->eps = 0.0; }},
                        Case{"eps", [](attnlab::RmsNormArgs* b) { b->eps = NAN; }},
                        Case{"x", [](attnlab::RmsNormArgs* b) { b->x = nullptr; }},
                        Case{"y", [](attnlab::RmsNormArgs* b) { b->y = nullptr; }}}) {
    attnlab::RmsNormArgs b = a;
    c.edit(&b);
    const Status s = attnlab::RmsNorm(b);
    EXPECT_FALSE(s.ok()) << c.what;
    EXPECT_NE(s.message.find(c.what), std::string::npos) << s.message;
  }
  EXPECT_TRUE(attnlab::RmsNorm(a).ok());
}

}  // namespace
}  // namespace attnlab_test

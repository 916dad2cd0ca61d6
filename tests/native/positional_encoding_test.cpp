// PositionalEncoding: known values, odd dModel (the last column is a sin),
// other bases, long sequences, against a double-precision reference.
//
// Tolerance (positional encoding): 1e-6 absolute. The library forms angles in
// double; the only float32 step is rounding a value in [-1, 1] (<= 6e-8).
// At pos ~ 5000 a float32 angle would already be off by ~3e-4, so this also
// checks that the angle is not formed in float32.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attention_lab.h"
#include "reference.h"

namespace attnlab_test {
namespace {

using attnlab::Status;

constexpr double kAbs = 1e-6;

std::vector<float> Pe(int64_t L, int64_t E, double base = 10000.0) {
  std::vector<float> out(static_cast<size_t>(L * E + 4), kSentinel);
  const Status s = attnlab::PositionalEncoding(L, E, base, out.data());
  EXPECT_TRUE(s.ok()) << s.message;
  EXPECT_TRUE(Untouched(out.data() + L * E, 4)) << "wrote past [L, E]";
  out.resize(static_cast<size_t>(L * E));
  return out;
}

TEST(PositionalEncoding, KnownValues) {
  // E = 4, base 10000: columns sin(p), cos(p), sin(p/100), cos(p/100).
  const std::vector<float> pe = Pe(4, 4);
  const double want[4][4] = {
      {0.0, 1.0, 0.0, 1.0},
      {0.8414709848078965, 0.5403023058681398, 0.009999833334166664, 0.9999500004166653},
      {0.9092974268256817, -0.4161468365471424, 0.01999866669333308, 0.9998000066665778},
      {0.1411200080598672, -0.9899924966004454, 0.02999550020249566, 0.9995500337489875}};
  for (int p = 0; p < 4; ++p)
    for (int c = 0; c < 4; ++c)
      EXPECT_NEAR(pe[static_cast<size_t>(p * 4 + c)], want[p][c], kAbs) << "pos " << p << " col " << c;
  // Row 0 is exactly [0, 1, 0, 1, ...].
  const std::vector<float> wide = Pe(1, 10);
  for (int c = 0; c < 10; ++c) EXPECT_EQ(wide[static_cast<size_t>(c)], c % 2 ? 1.0f : 0.0f);
}

TEST(PositionalEncoding, OddModelDimensionEndsWithSin) {
  // E = 1: the single column is sin(pos).
  const std::vector<float> one = Pe(5, 1);
  for (int p = 0; p < 5; ++p) EXPECT_NEAR(one[static_cast<size_t>(p)], std::sin(p), kAbs);
  // E = 5: column 4 is sin(pos / 10000^(4/5)).
  const std::vector<float> five = Pe(7, 5);
  for (int p = 0; p < 7; ++p) {
    EXPECT_NEAR(five[static_cast<size_t>(p * 5 + 4)], std::sin(p / std::pow(10000.0, 0.8)), kAbs) << p;
  }
  for (int64_t e : {1, 3, 9, 33}) {
    const auto pe = Pe(50, e);
    const auto want = RefPositionalEncoding(50, e, 10000.0);
    ExpectAllClose(pe, want, kAbs, 0.0, "E=" + std::to_string(e));
  }
}

TEST(PositionalEncoding, SweepAgainstReference) {
  for (double base : {10000.0, 100.0, 2.5}) {
    for (int64_t e : {2, 4, 7, 8, 16, 17, 64, 128}) {
      for (int64_t l : {1, 2, 37}) {
        const auto pe = Pe(l, e, base);
        ExpectAllClose(pe, RefPositionalEncoding(l, e, base), kAbs, 0.0,
                       "L=" + std::to_string(l) + " E=" + std::to_string(e) +
                           " base=" + std::to_string(base));
      }
    }
  }
}

TEST(PositionalEncoding, LongSequenceAnglesInDouble) {
  const int64_t L = 6000, E = 16;
  const auto pe = Pe(L, E);
  ExpectAllClose(pe, RefPositionalEncoding(L, E, 10000.0), kAbs, 0.0, "L=6000");
}

TEST(PositionalEncoding, IndependentOfKernelSet) {
  std::vector<float> a, b;
  {
    ScopedKernelSet s(false);
    a = Pe(9, 11);
  }
  {
    ScopedKernelSet s(true);
    b = Pe(9, 11);
  }
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace attnlab_test

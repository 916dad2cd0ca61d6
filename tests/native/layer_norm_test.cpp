// AddLayerNorm (public API, which runs kernels::AddLayerNorm of the active
// kernel set) against a double-precision reference, for both kernel sets:
// widths around the SIMD width (tails), optional residual/gamma/beta, several
// eps, in-place operation (y aliasing x), constant rows and rows with a large
// common offset.
//
// Tolerances (LayerNorm, inputs U(-1, 1)):
//   |got - want| <= 1e-5 + 1e-4·|want|
// The result is (x - mean)·rstd·gamma + beta with mean and variance summed
// in float32 over E terms (relative error ~E·u); normalised values are O(1-3).
// Observed worst error ~6e-7.
// Offset rows (x = 100 + U(-1, 1)): 1e-3 abs. The float32 running sum of E
// values near 100 reaches 100·E, where one rounding is ~100·E·u; ~√E such
// errors, divided by E for the mean and by the row's std (~0.58), give ~1e-4
// at E = 256 (observed 1.4e-4). No float32 LayerNorm does better without
// a compensated sum, so this bound only guards against gross errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention_lab.h"
#include "reference.h"

namespace attnlab_test {
namespace {

using attnlab::Status;

constexpr double kAbs = 1e-5, kRel = 1e-4;

class LayerNormTest : public ::testing::TestWithParam<bool> {
 protected:
  LayerNormTest() : kernels_(GetParam()) {}
  ScopedKernelSet kernels_;
};

void CheckLayerNorm(int64_t rows, int64_t dim, bool residual, bool gamma, bool beta, float eps,
                    uint32_t seed, float offset = 0.0f, double abs_tol = kAbs) {
  SCOPED_TRACE(::testing::Message() << "rows=" << rows << " dim=" << dim << " residual="
                                    << residual << " gamma=" << gamma << " beta=" << beta
                                    << " eps=" << eps << " offset=" << offset);
  Rng rng(seed);
  std::vector<float> x = rng.Vector(rows * dim, offset - 1.0f, offset + 1.0f);
  const std::vector<float> r = rng.Vector(rows * dim);
  const std::vector<float> g = rng.Vector(dim, 0.5f, 2.0f), b = rng.Vector(dim);
  std::vector<float> y(static_cast<size_t>(rows * dim + 8), kSentinel);
  const Status s = attnlab::AddLayerNorm(rows, dim, x.data(), residual ? r.data() : nullptr,
                                         gamma ? g.data() : nullptr, beta ? b.data() : nullptr,
                                         eps, y.data());
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_TRUE(Untouched(y.data() + rows * dim, 8)) << "wrote past rows·dim";
  std::vector<double> sum(static_cast<size_t>(rows * dim));
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = static_cast<double>(x[i]) + (residual ? r[i] : 0.0);
  const auto want = RefLayerNorm(rows, dim, sum, gamma ? g.data() : nullptr,
                                 beta ? b.data() : nullptr, eps);
  ExpectAllClose(y.data(), want.data(), rows * dim, abs_tol, kRel, "y");

  // In place: y aliases x.
  const Status s2 = attnlab::AddLayerNorm(rows, dim, x.data(), residual ? r.data() : nullptr,
                                          gamma ? g.data() : nullptr, beta ? b.data() : nullptr,
                                          eps, x.data());
  ASSERT_TRUE(s2.ok()) << s2.message;
  for (int64_t i = 0; i < rows * dim; ++i) {
    ASSERT_EQ(x[static_cast<size_t>(i)], y[static_cast<size_t>(i)]) << "in-place result differs at " << i;
  }
}

TEST_P(LayerNormTest, WidthSweep) {
  uint32_t seed = 1;
  for (int64_t dim : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, 768}) {
    for (int64_t rows : {1, 2, 3, 5}) {
      CheckLayerNorm(rows, dim, true, true, true, 1e-5f, seed++);
      if (HasFailure()) return;
    }
  }
}

TEST_P(LayerNormTest, OptionalResidualGammaBeta) {
  uint32_t seed = 100;
  for (int mask = 0; mask < 8; ++mask) {
    for (int64_t dim : {1, 7, 16, 19}) {
      CheckLayerNorm(3, dim, mask & 1, mask & 2, mask & 4, 1e-5f, seed++);
    }
  }
}

TEST_P(LayerNormTest, Epsilon) {
  uint32_t seed = 200;
  for (float eps : {1e-12f, 1e-5f, 1e-3f, 0.5f, 10.0f}) {
    CheckLayerNorm(4, 24, true, true, true, eps, seed++);
  }
}

TEST_P(LayerNormTest, LargeCommonOffset) {
  uint32_t seed = 300;
  for (int64_t dim : {8, 17, 64, 256}) {
    CheckLayerNorm(3, dim, false, true, true, 1e-5f, seed++, 100.0f, 1e-3);
  }
}

TEST_P(LayerNormTest, ConstantRowGivesBeta) {
  // Zero variance: (x - mean) is exactly 0, the output is beta (no NaN).
  for (int64_t dim : {1, 7, 8, 9, 33}) {
    std::vector<float> x(static_cast<size_t>(2 * dim), 0.5f), y(x.size(), kSentinel);
    Rng rng(400);
    const auto g = rng.Vector(dim), b = rng.Vector(dim);
    ASSERT_TRUE(attnlab::AddLayerNorm(2, dim, x.data(), nullptr, g.data(), b.data(), 1e-5f, y.data()).ok());
    for (int64_t i = 0; i < 2 * dim; ++i) {
      EXPECT_EQ(y[static_cast<size_t>(i)], b[static_cast<size_t>(i % dim)]) << "dim " << dim << " i " << i;
    }
  }
}

TEST_P(LayerNormTest, SimdMatchesScalar) {
  Rng rng(500);
  const int64_t rows = 5, dim = 45;
  const auto x = rng.Vector(rows * dim), r = rng.Vector(rows * dim), g = rng.Vector(dim), b = rng.Vector(dim);
  std::vector<float> y1(x.size()), y2(x.size());
  ASSERT_TRUE(attnlab::AddLayerNorm(rows, dim, x.data(), r.data(), g.data(), b.data(), 1e-5f, y1.data()).ok());
  {
    ScopedKernelSet flip(!GetParam());
    ASSERT_TRUE(attnlab::AddLayerNorm(rows, dim, x.data(), r.data(), g.data(), b.data(), 1e-5f, y2.data()).ok());
  }
  ExpectAllClose(y1, ToDouble(y2.data(), static_cast<int64_t>(y2.size())), 2e-6, 2e-6, "simd vs scalar");
}

INSTANTIATE_TEST_SUITE_P(KernelSets, LayerNormTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return KernelSetName(info.param);
                         });

}  // namespace
}  // namespace attnlab_test

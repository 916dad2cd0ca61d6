// The flash path (weights not requested, Lk >= 512: online softmax over key
// tiles) must agree with the dense path (weights requested) for every mask
// kind, including rows whose keys are all masked (the flash path hands those
// blocks back to the dense path). Tolerance: 2e-6 absolute on outputs of
// unit-scale data (both paths are float32; they differ in summation order).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "attention_lab.h"
#include "kernels/kernels.h"

namespace attnlab {
namespace {

struct FlashCase {
  int b, h, lq, lk, d, dv;
  bool causal, padding;
  MaskKind kind;
};

class FlashTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { previous_ = kernels::UseScalarKernels(GetParam()); }
  void TearDown() override { kernels::UseScalarKernels(previous_); }
  bool previous_ = false;
};

TEST_P(FlashTest, MatchesDensePath) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  const std::vector<FlashCase> cases = {
      {1, 2, 70, 600, 16, 24, true, false, MaskKind::kNone},
      {2, 1, 33, 1030, 64, 64, false, true, MaskKind::kNone},
      {1, 1, 40, 777, 8, 8, true, true, MaskKind::kKeep},
      {1, 2, 5, 513, 32, 32, false, false, MaskKind::kBlock},
      {2, 1, 64, 900, 16, 16, true, true, MaskKind::kAdditive},
      {1, 1, 3, 512, 4, 4, false, false, MaskKind::kKeep},
  };
  for (const FlashCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "Lq " << c.lq << " Lk " << c.lk << " kind "
                                    << static_cast<int>(c.kind));
    const size_t nq = static_cast<size_t>(c.b * c.h * c.lq * c.d);
    const size_t nk = static_cast<size_t>(c.b * c.h * c.lk * c.d);
    const size_t nv = static_cast<size_t>(c.b * c.h * c.lk * c.dv);
    const size_t no = static_cast<size_t>(c.b * c.h * c.lq * c.dv);
    std::vector<float> q(nq), k(nk), v(nv), dense(no), flash(no),
        w(static_cast<size_t>(c.b * c.h * c.lq * c.lk)),
        mask(static_cast<size_t>(c.lq * c.lk));
    for (auto& x : q) x = u(rng);
    for (auto& x : k) x = u(rng);
    for (auto& x : v) x = u(rng);
    for (size_t i = 0; i < mask.size(); ++i) {
      if (c.kind == MaskKind::kKeep) mask[i] = (i * 7) % 5 != 0;
      else if (c.kind == MaskKind::kBlock) mask[i] = (i * 3) % 4 == 0;
      else mask[i] = u(rng);
    }
    if (c.kind == MaskKind::kKeep) {
      for (int j = 0; j < c.lk; ++j) mask[2 * c.lk + j] = 0.0f;  // row 2 all masked
    }
    std::vector<int32_t> lengths(static_cast<size_t>(c.b));
    for (int i = 0; i < c.b; ++i) lengths[i] = i == 0 ? c.lk - 37 : 0;

    SdpaArgs a;
    a.batch = c.b;
    a.heads = c.h;
    a.lq = c.lq;
    a.lk = c.lk;
    a.d = c.d;
    a.dv = c.dv;
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.mask.causal = c.causal;
    if (c.padding) a.mask.lengths = lengths.data();
    if (c.kind != MaskKind::kNone) {
      a.mask.kind = c.kind;
      a.mask.data = mask.data();
      a.mask.shape[2] = c.lq;
      a.mask.shape[3] = c.lk;
    }
    a.output = dense.data();
    a.weights = w.data();
    ASSERT_TRUE(ScaledDotProductAttention(a).ok());
    a.output = flash.data();
    a.weights = nullptr;
    ASSERT_TRUE(ScaledDotProductAttention(a).ok());
    for (size_t i = 0; i < no; ++i) {
      ASSERT_NEAR(dense[i], flash[i], 2e-6) << "at " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(KernelSets, FlashTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Scalar" : "Simd"; });

}  // namespace
}  // namespace attnlab

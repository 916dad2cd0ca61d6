// The fused attention core (kernels::AttentionCore) driven directly through
// AttentionView, with the strided layouts MHA uses (heads interleaved in a
// row, padded rows and batches), per-head and head-averaged weights, and
// scratch exactly AttentionScratchFloats(view) long. Checked against the
// double-precision reference for both kernel sets; padding between rows and
// past the scratch must stay untouched. Also: kernel-set switching and
// KernelArch().
//
// Tolerances (attention core, inputs U(-1, 1), D <= 33): output and weights
// |got - want| <= 5e-6 + 5e-5·|want| (as scaled_dot_product_attention_test);
// averaged weights the same (a mean of H such values).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "attention_lab.h"
#include "kernels/kernels.h"
#include "reference.h"

namespace attnlab_test {
namespace {

namespace k = attnlab::kernels;
using attnlab::MaskKind;

constexpr double kAbs = 5e-6;
constexpr double kRel = 5e-5;

// A [B, H, L, W] tensor stored as rows of H·W values plus `row_pad` unused
// floats, batches `batch_pad` floats apart beyond that (the MHA layout).
struct Strided {
  int64_t B, H, L, W, row_pad, batch_pad;
  std::vector<float> buf;
  int64_t sl() const { return H * W + row_pad; }
  int64_t sh() const { return W; }
  int64_t sb() const { return L * sl() + batch_pad; }
  float& at(int64_t b, int64_t h, int64_t l, int64_t w) {
    return buf[static_cast<size_t>(b * sb() + l * sl() + h * sh() + w)];
  }
  Strided(int64_t b, int64_t h, int64_t l, int64_t w, int64_t rp, int64_t bp)
      : B(b), H(h), L(l), W(w), row_pad(rp), batch_pad(bp),
        buf(static_cast<size_t>(b * (l * (h * w + rp) + bp)), kSentinel) {}
  void Randomize(Rng& rng) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t l = 0; l < L; ++l)
          for (int64_t w = 0; w < W; ++w) at(b, h, l, w) = rng.Uniform();
  }
  // Contiguous [B, H, L, W] copy in double.
  std::vector<double> Dense() {
    std::vector<double> d;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t l = 0; l < L; ++l)
          for (int64_t w = 0; w < W; ++w) d.push_back(at(b, h, l, w));
    return d;
  }
  std::vector<float> DenseFloat() {
    std::vector<float> d;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t l = 0; l < L; ++l)
          for (int64_t w = 0; w < W; ++w) d.push_back(at(b, h, l, w));
    return d;
  }
  // True when every float outside the tensor still holds the sentinel.
  bool PaddingUntouched() {
    std::vector<char> inside(buf.size(), 0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t l = 0; l < L; ++l)
          for (int64_t w = 0; w < W; ++w)
            inside[static_cast<size_t>(b * sb() + l * sl() + h * sh() + w)] = 1;
    for (size_t i = 0; i < buf.size(); ++i)
      if (!inside[i] && !Untouched(&buf[i], 1)) return false;
    return true;
  }
};

struct CoreCase {
  int64_t B, H, Lq, Lk, D, Dv;
  RefMask mask;
  bool average = false;
};

void RunCore(const CoreCase& c, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "B=" << c.B << " H=" << c.H << " Lq=" << c.Lq
                                    << " Lk=" << c.Lk << " D=" << c.D << " Dv=" << c.Dv
                                    << " average=" << c.average << " " << c.mask.Describe());
  Rng rng(seed);
  Strided q(c.B, c.H, c.Lq, c.D, 3, 5), kt(c.B, c.H, c.Lk, c.D, 1, 0),
      v(c.B, c.H, c.Lk, c.Dv, 2, 7), out(c.B, c.H, c.Lq, c.Dv, 4, 3);
  q.Randomize(rng);
  kt.Randomize(rng);
  v.Randomize(rng);

  k::AttentionView view;
  view.batch = c.B;
  view.heads = c.H;
  view.lq = c.Lq;
  view.lk = c.Lk;
  view.d = c.D;
  view.dv = c.Dv;
  view.q = q.buf.data();
  view.q_sb = q.sb();
  view.q_sh = q.sh();
  view.q_sl = q.sl();
  view.k = kt.buf.data();
  view.k_sb = kt.sb();
  view.k_sh = kt.sh();
  view.k_sl = kt.sl();
  view.v = v.buf.data();
  view.v_sb = v.sb();
  view.v_sh = v.sh();
  view.v_sl = v.sl();
  view.out = out.buf.data();
  view.o_sb = out.sb();
  view.o_sh = out.sh();
  view.o_sl = out.sl();
  view.scale = 0.37f;
  view.causal = c.mask.causal;
  view.lengths = c.mask.lengths.empty() ? nullptr : c.mask.lengths.data();
  if (c.mask.kind != MaskKind::kNone) {
    // Broadcast strides of the [mB, mH, mLq, mLk] tensor over [B, H, Lq, Lk].
    int64_t st[4], stride = 1;
    for (int d = 3; d >= 0; --d) {
      st[d] = c.mask.shape[d] == 1 ? 0 : stride;
      stride *= c.mask.shape[d];
    }
    view.mask_kind = c.mask.kind;
    view.mask = c.mask.data.data();
    view.m_sb = st[0];
    view.m_sh = st[1];
    view.m_sq = st[2];
    view.m_sk = st[3];
  }
  const int64_t wsize = c.average ? c.B * c.Lq * c.Lk : c.B * c.H * c.Lq * c.Lk;
  std::vector<float> weights(static_cast<size_t>(wsize + 16), kSentinel);
  view.weights = weights.data();
  view.average_weights = c.average;

  const int64_t scratch_floats = k::AttentionScratchFloats(view);
  ASSERT_GT(scratch_floats, 0);
  constexpr int64_t kTail = 64;
  AlignedFloats scratch(static_cast<size_t>(scratch_floats + kTail), kSentinel);
  k::AttentionCore(view, scratch.data());

  EXPECT_TRUE(Untouched(scratch.data() + scratch_floats, kTail)) << "scratch overrun";
  EXPECT_TRUE(Untouched(weights.data() + wsize, 16)) << "weights overrun";
  EXPECT_TRUE(out.PaddingUntouched()) << "output written outside its strided view";

  std::vector<double> want_out, want_w;
  const auto qd = q.Dense(), kd = kt.Dense(), vd = v.Dense();
  RefSdpa(c.B, c.H, c.Lq, c.Lk, c.D, c.Dv, qd.data(), kd.data(), vd.data(), 0.37f, c.mask,
          &want_out, &want_w);
  ExpectAllClose(out.DenseFloat(), want_out, kAbs, kRel, "output");
  if (c.average) {
    std::vector<double> avg(static_cast<size_t>(wsize), 0.0);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t h = 0; h < c.H; ++h)
        for (int64_t t = 0; t < c.Lq * c.Lk; ++t)
          avg[static_cast<size_t>(b * c.Lq * c.Lk + t)] +=
              want_w[static_cast<size_t>((b * c.H + h) * c.Lq * c.Lk + t)] / c.H;
    ExpectAllClose(weights.data(), avg.data(), wsize, kAbs, kRel, "averaged weights");
  } else {
    ExpectAllClose(weights.data(), want_w.data(), wsize, kAbs, kRel, "weights");
  }
}

class AttentionCoreTest : public ::testing::TestWithParam<bool> {
 protected:
  AttentionCoreTest() : kernels_(GetParam()) {}
  ScopedKernelSet kernels_;
};

TEST_P(AttentionCoreTest, StridedHeadsSweep) {
  uint32_t seed = 1;
  for (int64_t lk : {1, 3, 4, 8, 9, 16, 17, 33}) {
    for (int64_t d : {1, 4, 8, 13, 16, 32}) {
      for (int64_t lq : {1, 2, 3, 5, 8}) {
        RunCore({2, 3, lq, lk, d, (lk + d) % 11 + 1, RefMask{}, false}, seed++);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_P(AttentionCoreTest, MasksAndAveragedWeights) {
  uint32_t seed = 100;
  const int64_t B = 2, H = 4;
  for (bool average : {false, true}) {
    for (auto lqlk : {std::vector<int64_t>{1, 5}, {6, 6}, {9, 4}, {4, 19}, {70, 33}}) {
      const int64_t lq = lqlk[0], lk = lqlk[1];
      for (int variant = 0; variant < 6; ++variant) {
        CoreCase c{B, H, lq, lk, 8, 5, RefMask{}, average};
        Rng rng(seed);
        switch (variant) {
          case 0: break;
          case 1: c.mask.causal = true; break;
          case 2: c.mask.lengths = {0, static_cast<int32_t>(lk)}; break;
          case 3:
            c.mask.causal = true;
            c.mask.lengths = {static_cast<int32_t>((lk + 1) / 2), 1};
            break;
          case 4: FillTensorMask(&c.mask, MaskKind::kKeep, B, 1, lq, lk, rng); break;
          case 5:
            FillTensorMask(&c.mask, MaskKind::kAdditive, B, H, lq, lk, rng);
            c.mask.causal = true;
            c.mask.lengths = {static_cast<int32_t>(lk), 0};
            break;
        }
        RunCore(c, seed++);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_P(AttentionCoreTest, LongKeysUseSmallQueryBlocks) {
  // Lk = 1000 makes the query block shrink below 64 rows; Lq spans several.
  uint32_t seed = 200;
  for (bool causal : {false, true}) {
    CoreCase c{1, 2, 40, 1000, 4, 3, RefMask{}, causal};
    c.mask.causal = causal;
    RunCore(c, seed++);
  }
}

INSTANTIATE_TEST_SUITE_P(KernelSets, AttentionCoreTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return KernelSetName(info.param);
                         });

// ---------------------------------------------------------------------------

TEST(KernelSelection, UseScalarKernelsReturnsPreviousAndRestores) {
  const bool initial = k::UsingScalarKernels();
  EXPECT_FALSE(initial) << "natively the SIMD kernels are the default";
  EXPECT_EQ(k::UseScalarKernels(true), initial);
  EXPECT_TRUE(k::UsingScalarKernels());
  EXPECT_TRUE(k::UseScalarKernels(false));
  EXPECT_FALSE(k::UsingScalarKernels());
  k::UseScalarKernels(initial);
  {
    ScopedKernelSet scalar(true);
    EXPECT_TRUE(k::UsingScalarKernels());
  }
  EXPECT_EQ(k::UsingScalarKernels(), initial);
}

TEST(KernelSelection, KernelArchReportsAvxWhenSimdIsActive) {
  {
    ScopedKernelSet simd(false);
    const std::string arch = attnlab::KernelArch();
    // The native build is compiled for AVX2 (or AVX-512): never sse/scalar.
    EXPECT_NE(arch.find("avx"), std::string::npos) << "KernelArch() = " << arch;
  }
  {
    ScopedKernelSet scalar(true);
    EXPECT_EQ(std::string(attnlab::KernelArch()), "scalar");
  }
}

// attention_lab.h documents the names: "avx512", "avx2", "sse4.1" or "scalar".
TEST(KernelSelection, KernelArchIsOneOfTheDocumentedNames) {
  ScopedKernelSet simd(false);
  const std::string arch = attnlab::KernelArch();
  EXPECT_TRUE(arch == "avx512" || arch == "avx2" || arch == "sse4.1" || arch == "scalar")
      << "KernelArch() = \"" << arch << "\", not one of the names documented in attention_lab.h";
}

}  // namespace
}  // namespace attnlab_test

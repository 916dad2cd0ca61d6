// ScaledDotProductAttention (public API) against a double-precision reference,
// for both kernel sets: shape sweeps around the SIMD width and the GEMM panel
// width, every mask kind in every broadcast form, causal/padding and their
// combinations, fully masked rows, custom scales and long sequences that span
// several query blocks.
//
// Tolerances (SDPA, inputs U(-1, 1), D <= 64):
//   output, weights: |got - want| <= 5e-6 + 5e-5·|want|
// (observed worst error ~2e-7 on both kernel sets, so ~25x headroom).
// A score is a float32 dot product of length D (error <= D·u·Σ|q||k|·scale,
// ~1e-5 worst case at D = 64, typically ~1e-7); the softmax turns an absolute
// score error into the same relative weight error; the output is a convex
// combination of V rows (|v| <= 1) computed in float32 over Lk terms.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attention_lab.h"
#include "reference.h"

namespace attnlab_test {
namespace {

using attnlab::MaskKind;
using attnlab::SdpaArgs;
using attnlab::Status;

constexpr double kAbs = 5e-6;
constexpr double kRel = 5e-5;

struct SdpaCase {
  int64_t B = 1, H = 1, Lq = 1, Lk = 1, D = 1, Dv = 1;
  RefMask mask;
  bool has_scale = false;
  float scale = 1.0f;
  float input_range = 1.0f;
};

std::string Describe(const SdpaCase& c) {
  std::ostringstream os;
  os << "B=" << c.B << " H=" << c.H << " Lq=" << c.Lq << " Lk=" << c.Lk << " D=" << c.D
     << " Dv=" << c.Dv << " " << c.mask.Describe();
  if (c.has_scale) os << " scale=" << c.scale;
  return os.str();
}

struct SdpaResult {
  std::vector<float> out, weights, out_no_weights;
  std::vector<double> want_out, want_weights;
  std::vector<float> q, k, v;
};

// Runs the case through the library (with and without weights) and the reference.
SdpaResult RunSdpa(const SdpaCase& c, uint32_t seed) {
  Rng rng(seed);
  SdpaResult r;
  r.q = rng.Vector(c.B * c.H * c.Lq * c.D, -c.input_range, c.input_range);
  r.k = rng.Vector(c.B * c.H * c.Lk * c.D, -c.input_range, c.input_range);
  r.v = rng.Vector(c.B * c.H * c.Lk * c.Dv, -c.input_range, c.input_range);
  r.out.assign(static_cast<size_t>(c.B * c.H * c.Lq * c.Dv), std::nanf(""));
  r.weights.assign(static_cast<size_t>(c.B * c.H * c.Lq * c.Lk), std::nanf(""));
  SdpaArgs a;
  a.batch = c.B;
  a.heads = c.H;
  a.lq = c.Lq;
  a.lk = c.Lk;
  a.d = c.D;
  a.dv = c.Dv;
  a.q = r.q.data();
  a.k = r.k.data();
  a.v = r.v.data();
  a.has_scale = c.has_scale;
  a.scale = c.scale;
  a.mask = c.mask.Spec();
  a.output = r.out.data();
  a.weights = r.weights.data();
  const Status s = attnlab::ScaledDotProductAttention(a);
  EXPECT_TRUE(s.ok()) << s.message;

  // Without weights (the core may then take another path, e.g. an online
  // softmax over key tiles for long Lk).
  r.out_no_weights.assign(r.out.size(), std::nanf(""));
  a.output = r.out_no_weights.data();
  a.weights = nullptr;
  const Status s2 = attnlab::ScaledDotProductAttention(a);
  EXPECT_TRUE(s2.ok()) << s2.message;

  const double scale = c.has_scale ? static_cast<double>(c.scale)
                                   : 1.0 / std::sqrt(static_cast<double>(c.D));
  const auto qd = ToDouble(r.q.data(), static_cast<int64_t>(r.q.size()));
  const auto kd = ToDouble(r.k.data(), static_cast<int64_t>(r.k.size()));
  const auto vd = ToDouble(r.v.data(), static_cast<int64_t>(r.v.size()));
  RefSdpa(c.B, c.H, c.Lq, c.Lk, c.D, c.Dv, qd.data(), kd.data(), vd.data(), scale,
          c.mask, &r.want_out, &r.want_weights);
  return r;
}

void CheckSdpa(const SdpaCase& c, uint32_t seed, double abs_tol = kAbs, double rel_tol = kRel) {
  SCOPED_TRACE(Describe(c));
  const SdpaResult r = RunSdpa(c, seed);
  ExpectAllClose(r.out, r.want_out, abs_tol, rel_tol, "output");
  ExpectAllClose(r.weights, r.want_weights, abs_tol, rel_tol, "weights");
  ExpectAllClose(r.out_no_weights, r.want_out, abs_tol, rel_tol, "output (weights not requested)");
}

class SdpaTest : public ::testing::TestWithParam<bool> {
 protected:
  SdpaTest() : kernels_(GetParam()) {}
  ScopedKernelSet kernels_;
};

TEST_P(SdpaTest, UnmaskedShapeSweep) {
  // Lk and D/Dv around the SIMD width (4/8/16) and the GEMM panel width (16/32).
  uint32_t seed = 1;
  for (int64_t lk : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64}) {
    for (int64_t d : {1, 3, 8, 16, 17}) {
      for (int64_t lq : {1, 2, 3, 4, 5}) {
        SdpaCase c;
        c.Lq = lq;
        c.Lk = lk;
        c.D = d;
        c.Dv = (d * 7) % 19 + 1;  // decoupled from D
        CheckSdpa(c, seed++);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_P(SdpaTest, BatchHeadsAndWideHeads) {
  uint32_t seed = 100;
  for (int64_t d : {32, 33, 64}) {
    for (int64_t dv : {1, 16, 31, 64}) {
      SdpaCase c;
      c.B = 2;
      c.H = 3;
      c.Lq = 6;
      c.Lk = 11;
      c.D = d;
      c.Dv = dv;
      CheckSdpa(c, seed++);
    }
  }
}

TEST_P(SdpaTest, LongSequencesSpanSeveralQueryBlocks) {
  // Query rows are processed in blocks (up to 64 rows, fewer for long Lk);
  // the causal mask makes every block see a different number of columns.
  uint32_t seed = 200;
  for (bool causal : {false, true}) {
    for (auto dims : {std::vector<int64_t>{130, 9, 5}, std::vector<int64_t>{70, 600, 4},
                      std::vector<int64_t>{65, 65, 8}, std::vector<int64_t>{3, 1100, 3}}) {
      SdpaCase c;
      c.Lq = dims[0];
      c.Lk = dims[1];
      c.D = dims[2];
      c.Dv = 3;
      c.mask.causal = causal;
      CheckSdpa(c, seed++);
    }
  }
}

// Long key sequences with and without weights: without weights the core may
// walk the keys in tiles with an online softmax (and fall back to whole rows
// when a row's visible keys cannot outweigh the implicit -1e9 fill). Lk at and
// around tile multiples (256, 512), Lq around a 32-row block, every mask kind.
TEST_P(SdpaTest, LongKeysWithAndWithoutWeights) {
  uint32_t seed = 250;
  struct Dims { int64_t lq, lk, d, dv; };
  for (Dims dm : {Dims{1, 512, 4, 3}, Dims{33, 513, 8, 5}, Dims{70, 700, 3, 17},
                  Dims{5, 1100, 16, 1}, Dims{32, 768, 5, 4}}) {
    for (int variant = 0; variant < 8; ++variant) {
      SdpaCase c;
      c.B = 2;
      c.H = 1;
      c.Lq = dm.lq;
      c.Lk = dm.lk;
      c.D = dm.d;
      c.Dv = dm.dv;
      Rng rng(seed);
      const float inf = std::numeric_limits<float>::infinity();
      switch (variant) {
        case 0: break;
        case 1: c.mask.causal = true; break;
        case 2: c.mask.lengths = {static_cast<int32_t>(dm.lk), 0}; break;
        case 3: c.mask.lengths = {300, static_cast<int32_t>(dm.lk - 1)}; c.mask.causal = true; break;
        case 4:  // keep, with query row 0 fully masked (uniform)
          FillTensorMask(&c.mask, MaskKind::kKeep, 1, 1, dm.lq, dm.lk, rng);
          std::fill(c.mask.data.begin(), c.mask.data.begin() + dm.lk, 0.0f);
          break;
        case 5: FillTensorMask(&c.mask, MaskKind::kBlock, 2, 1, 1, dm.lk, rng); break;
        case 6:  // additive, with the last query row all -inf (uniform)
          FillTensorMask(&c.mask, MaskKind::kAdditive, 1, 1, dm.lq, dm.lk, rng);
          std::fill(c.mask.data.end() - dm.lk, c.mask.data.end(), -inf);
          break;
        case 7:  // additive -inf on the visible keys of row 0, causal: weight
                 // goes to the keys filled with -1e9
          FillTensorMask(&c.mask, MaskKind::kAdditive, 2, 1, dm.lq, dm.lk, rng);
          c.mask.data[0] = -inf;
          c.mask.causal = true;
          c.mask.lengths = {static_cast<int32_t>(dm.lk), 200};
          break;
      }
      CheckSdpa(c, seed++);
      if (HasFailure()) return;
    }
  }
}

// The softmax exponential over a wide range of score differences: q = 0 makes
// every raw score 0, and an additive mask sets the scores of query row 0 to a
// ramp from -110 to +5 (differences down to -115, past float32's exp
// underflow at ~-87.3 / -103.3) and of row 1 to a shuffled ramp over [-12, 3]
// (SIMD lanes see mixed values).
// Tolerances: float32 forms s - max with up to |s - max|·u/2 absolute error,
// which exp turns into relative error, so
//   row 0: 1e-5 relative (115·u/2 ~ 3.4e-6, plus exp, the sum and a division)
//   row 1: 2e-6 relative (15·u/2 ~ 4.5e-7, plus the same ~10 ulp)
// and 2e-38 absolute: weights that underflow (<= exp(-87.3) ~ 1.2e-38) may be
// 0 or denormal.
TEST_P(SdpaTest, SoftmaxExpAccuracyOverWideRange) {
  for (int64_t lk : {7, 8, 16, 33, 64, 600}) {
    SdpaCase c;
    c.Lq = 2;
    c.Lk = lk;
    c.D = 4;
    c.Dv = 3;
    c.input_range = 0.0f;  // q = k = v = 0 ...
    c.mask.kind = MaskKind::kAdditive;
    c.mask.shape[2] = 2;
    c.mask.shape[3] = lk;
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < lk; ++j) {
        const double t = static_cast<double>(j) / static_cast<double>(lk - 1);
        c.mask.data.push_back(i == 0 ? static_cast<float>(-110.0 + 115.0 * t)
                                     : static_cast<float>(-12.0 + 15.0 * std::fmod(t * 7.0, 1.0)));
      }
    }
    SCOPED_TRACE(Describe(c));
    SdpaResult r = RunSdpa(c, 1400);
    ExpectAllClose(r.weights.data(), r.want_weights.data(), lk, 2e-38, 1e-5, "weights row 0");
    ExpectAllClose(r.weights.data() + lk, r.want_weights.data() + lk, lk, 2e-38, 2e-6, "weights row 1");
    // ... except v, so that the output is the weighted mean of distinct rows.
    Rng rng(1401);
    const std::vector<float> v = rng.Vector(lk * c.Dv);
    SdpaArgs a;
    a.lq = 2;
    a.lk = lk;
    a.d = c.D;
    a.dv = c.Dv;
    a.q = r.q.data();
    a.k = r.k.data();
    a.v = v.data();
    a.mask = c.mask.Spec();
    std::vector<float> out(static_cast<size_t>(2 * c.Dv));
    a.output = out.data();
    ASSERT_TRUE(attnlab::ScaledDotProductAttention(a).ok());
    std::vector<double> want(out.size(), 0.0);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < lk; ++j)
        for (int64_t p = 0; p < c.Dv; ++p)
          want[static_cast<size_t>(i * c.Dv + p)] +=
              r.want_weights[static_cast<size_t>(i * lk + j)] * v[static_cast<size_t>(j * c.Dv + p)];
    ExpectAllClose(out, want, kAbs, kRel, "output (weights not requested)");
  }
}

TEST_P(SdpaTest, CustomScale) {
  uint32_t seed = 300;
  for (float scale : {0.3f, 1.0f, 2.5f, -0.7f}) {
    SdpaCase c;
    c.B = 2;
    c.Lq = 5;
    c.Lk = 17;
    c.D = 8;
    c.Dv = 9;
    c.has_scale = true;
    c.scale = scale;
    CheckSdpa(c, seed++);
  }
  // scale 0: every score is 0, the weights are uniform and the output is the
  // mean of the V rows.
  SdpaCase c;
  c.Lq = 3;
  c.Lk = 7;
  c.D = 4;
  c.Dv = 5;
  c.has_scale = true;
  c.scale = 0.0f;
  const SdpaResult r = RunSdpa(c, 301);
  for (float w : r.weights) EXPECT_NEAR(w, 1.0 / 7.0, 1e-7);
  ExpectAllClose(r.out, r.want_out, 1e-6, 1e-6, "scale 0 output");
}

TEST_P(SdpaTest, LargeScoresAreStable) {
  // Inputs U(-4, 4), D = 16: scores up to ±256 must not overflow exp.
  // Tolerance 1e-3 abs + 1e-3 rel: a score is O(100) and carries ~D·u·|s|
  // absolute error (~1e-4), which the softmax turns into a relative error.
  SdpaCase c;
  c.B = 2;
  c.Lq = 9;
  c.Lk = 33;
  c.D = 16;
  c.Dv = 8;
  c.input_range = 4.0f;
  c.has_scale = true;
  c.scale = 1.0f;
  SCOPED_TRACE(Describe(c));
  const SdpaResult r = RunSdpa(c, 400);
  EXPECT_TRUE(AllFinite(r.out.data(), static_cast<int64_t>(r.out.size())));
  EXPECT_TRUE(AllFinite(r.weights.data(), static_cast<int64_t>(r.weights.size())));
  ExpectAllClose(r.weights, r.want_weights, 1e-3, 1e-3, "weights");
  ExpectAllClose(r.out, r.want_out, 4e-3, 1e-3, "output");
  ExpectAllClose(r.out_no_weights, r.want_out, 4e-3, 1e-3, "output without weights");
}

// ---------------------------------------------------------------------------
// Causal and padding masks

TEST_P(SdpaTest, CausalSquareAndRectangular) {
  uint32_t seed = 500;
  // Lq == Lk, Lq > Lk (later rows see every key) and Lq < Lk (top-left
  // aligned: row i sees keys 0..i only).
  for (auto lqlk : {std::vector<int64_t>{1, 1}, {4, 4}, {8, 8}, {17, 17}, {9, 4},
                    {33, 16}, {3, 7}, {5, 40}, {16, 17}}) {
    for (int64_t d : {1, 8, 17}) {
      SdpaCase c;
      c.B = 2;
      c.H = 2;
      c.Lq = lqlk[0];
      c.Lk = lqlk[1];
      c.D = d;
      c.Dv = 4;
      c.mask.causal = true;
      CheckSdpa(c, seed++);
    }
  }
}

TEST_P(SdpaTest, CausalWeightsAreLowerTriangular) {
  SdpaCase c;
  c.Lq = 6;
  c.Lk = 9;  // top-left aligned: row i sees keys j <= i
  c.D = 8;
  c.Dv = 3;
  c.mask.causal = true;
  const SdpaResult r = RunSdpa(c, 510);
  for (int64_t i = 0; i < c.Lq; ++i) {
    for (int64_t j = 0; j < c.Lk; ++j) {
      const float w = r.weights[static_cast<size_t>(i * c.Lk + j)];
      if (j > i) {
        EXPECT_EQ(w, 0.0f) << "row " << i << " key " << j;
      } else {
        EXPECT_GT(w, 0.0f) << "row " << i << " key " << j;
      }
    }
  }
  // Row 0 sees only key 0: weight exactly 1 and output = v[0].
  EXPECT_NEAR(r.weights[0], 1.0f, 1e-7);
  for (int64_t p = 0; p < c.Dv; ++p) EXPECT_NEAR(r.out[static_cast<size_t>(p)], r.v[static_cast<size_t>(p)], 1e-6);
}

TEST_P(SdpaTest, PaddingLengths) {
  uint32_t seed = 600;
  for (int64_t lk : {1, 3, 8, 16, 17, 33}) {
    // Lengths include 0 (uniform rows) and Lk (nothing masked).
    for (auto lens : {std::vector<int32_t>{0, static_cast<int32_t>(lk)},
                      std::vector<int32_t>{static_cast<int32_t>(lk), 1},
                      std::vector<int32_t>{static_cast<int32_t>((lk + 1) / 2), 0},
                      std::vector<int32_t>{static_cast<int32_t>(lk > 1 ? lk - 1 : 1),
                                           static_cast<int32_t>(lk)}}) {
      for (bool causal : {false, true}) {
        SdpaCase c;
        c.B = 2;
        c.H = 2;
        c.Lq = 5;
        c.Lk = lk;
        c.D = 8;
        c.Dv = 17;
        c.mask.lengths = lens;
        c.mask.causal = causal;
        CheckSdpa(c, seed++);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_P(SdpaTest, PaddingLengthZeroGivesUniformRowsWithoutNaN) {
  for (int64_t lk : {1, 5, 16, 37, 600}) {
    SdpaCase c;
    c.B = 2;
    c.H = 3;
    c.Lq = 4;
    c.Lk = lk;
    c.D = 8;
    c.Dv = 6;
    c.mask.lengths = {0, 0};
    SCOPED_TRACE(Describe(c));
    const SdpaResult r = RunSdpa(c, 700 + static_cast<uint32_t>(lk));
    ASSERT_TRUE(AllFinite(r.out.data(), static_cast<int64_t>(r.out.size())));
    ASSERT_TRUE(AllFinite(r.weights.data(), static_cast<int64_t>(r.weights.size())));
    for (float w : r.weights) EXPECT_NEAR(w, 1.0 / static_cast<double>(lk), 1e-7);
    ExpectAllClose(r.out, r.want_out, 1e-6, 1e-5, "output (mean of V rows)");
    ExpectAllClose(r.out_no_weights, r.want_out, 1e-6, 1e-5, "output without weights");
  }
}

TEST_P(SdpaTest, PaddingLengthLkEqualsNoMask) {
  SdpaCase c;
  c.B = 2;
  c.H = 2;
  c.Lq = 5;
  c.Lk = 19;
  c.D = 8;
  c.Dv = 8;
  const SdpaResult plain = RunSdpa(c, 800);
  c.mask.lengths = {19, 19};
  const SdpaResult padded = RunSdpa(c, 800);
  ExpectAllClose(padded.out, ToDouble(plain.out.data(), static_cast<int64_t>(plain.out.size())),
                 0.0, 0.0, "output with lengths == Lk vs no mask");
  ExpectAllClose(padded.weights,
                 ToDouble(plain.weights.data(), static_cast<int64_t>(plain.weights.size())),
                 0.0, 0.0, "weights with lengths == Lk vs no mask");
}

// ---------------------------------------------------------------------------
// Tensor masks in every broadcast form, alone and with causal/padding.

struct MaskForm {
  const char* name;
  bool b, h, q, k;  // which dims are full (else 1)
};
constexpr MaskForm kForms[] = {
    {"[Lq,Lk]", false, false, true, true},     {"[B,1,1,Lk]", true, false, false, true},
    {"[B,1,Lq,Lk]", true, false, true, true},  {"[B,H,Lq,Lk]", true, true, true, true},
    {"[H,1,Lk]", false, true, false, true},    {"[Lk]", false, false, false, true},
    {"[B,H,Lq,1]", true, true, true, false},
};

TEST_P(SdpaTest, TensorMasksAllFormsAndCombinations) {
  uint32_t seed = 900;
  const int64_t B = 2, H = 3;
  for (MaskKind kind : {MaskKind::kKeep, MaskKind::kBlock, MaskKind::kAdditive}) {
    for (const MaskForm& form : kForms) {
      // A block mask broadcast over keys blocks whole rows (see FillTensorMask).
      if (kind == MaskKind::kBlock && !form.k) continue;
      for (auto lqlk : {std::vector<int64_t>{1, 1}, {5, 7}, {8, 8}, {9, 17}, {17, 9}}) {
        const int64_t lq = lqlk[0], lk = lqlk[1];
        for (int combo = 0; combo < 4; ++combo) {  // none, causal, padding, both
          SdpaCase c;
          c.B = B;
          c.H = H;
          c.Lq = lq;
          c.Lk = lk;
          c.D = 8;
          c.Dv = 5;
          Rng rng(seed);
          FillTensorMask(&c.mask, kind, form.b ? B : 1, form.h ? H : 1, form.q ? lq : 1,
                         form.k ? lk : 1, rng);
          c.mask.causal = (combo & 1) != 0;
          if (combo & 2) {
            // Block masks need key 0 visible (see FillTensorMask): no length 0.
            const int32_t lo = kind == MaskKind::kBlock ? 1 : 0;
            c.mask.lengths = {std::max<int32_t>(lo, static_cast<int32_t>(lk / 2)),
                              combo == 2 ? static_cast<int32_t>(lk) : lo};
          }
          CheckSdpa(c, seed++);
          if (HasFailure()) {
            ADD_FAILURE() << "form " << form.name;
            return;
          }
        }
      }
    }
  }
}

TEST_P(SdpaTest, TensorMaskAppliesAfterScaling) {
  // keep: masked scores are exactly -1e9 (not -1e9·scale); additive: the mask
  // is added to the scaled scores. Checked through the reference with a scale
  // far from 1.
  uint32_t seed = 950;
  for (MaskKind kind : {MaskKind::kKeep, MaskKind::kBlock, MaskKind::kAdditive}) {
    SdpaCase c;
    c.B = 2;
    c.H = 2;
    c.Lq = 4;
    c.Lk = 10;
    c.D = 8;
    c.Dv = 3;
    c.has_scale = true;
    c.scale = 3.0f;
    Rng rng(seed);
    FillTensorMask(&c.mask, kind, 2, 2, 4, 10, rng);
    CheckSdpa(c, seed++, 1e-4, 1e-4);  // scale 3: scores ~±10, see LargeScoresAreStable
  }
}

TEST_P(SdpaTest, FullyMaskedRowsAreUniform) {
  const int64_t lq = 3, lk = 13;
  auto uniform_rows = [&](const SdpaCase& c, const SdpaResult& r, std::vector<int64_t> rows) {
    for (int64_t i : rows) {
      for (int64_t j = 0; j < lk; ++j) {
        EXPECT_NEAR(r.weights[static_cast<size_t>(i * lk + j)], 1.0 / lk, 1e-7)
            << Describe(c) << " row " << i << " key " << j;
      }
    }
    EXPECT_TRUE(AllFinite(r.out.data(), static_cast<int64_t>(r.out.size()))) << Describe(c);
  };
  SdpaCase c;
  c.Lq = lq;
  c.Lk = lk;
  c.D = 8;
  c.Dv = 4;
  c.mask.shape[2] = lq;
  c.mask.shape[3] = lk;
  c.mask.data.assign(static_cast<size_t>(lq * lk), 1.0f);
  // keep: row 1 all zeros → all -1e9 → uniform.
  c.mask.kind = MaskKind::kKeep;
  std::fill(c.mask.data.begin() + lk, c.mask.data.begin() + 2 * lk, 0.0f);
  {
    const SdpaResult r = RunSdpa(c, 1000);
    uniform_rows(c, r, {1});
    ExpectAllClose(r.weights, r.want_weights, kAbs, kRel, "keep weights");
    ExpectAllClose(r.out, r.want_out, kAbs, kRel, "keep output");
  }
  // block: row 1 all ones → s - 1e9 rounds to -1e9 in float32 (|s| < 32) →
  // uniform. (Double keeps s, so only the uniform row is checked here.)
  c.mask.kind = MaskKind::kBlock;
  for (size_t t = 0; t < c.mask.data.size(); ++t) c.mask.data[t] = 1.0f - c.mask.data[t];
  {
    const SdpaResult r = RunSdpa(c, 1001);
    uniform_rows(c, r, {1});
  }
  // additive: row 2 all -inf → uniform, rows 0-1 all finite.
  c.mask.kind = MaskKind::kAdditive;
  std::fill(c.mask.data.begin(), c.mask.data.end(), 0.5f);
  std::fill(c.mask.data.begin() + 2 * lk, c.mask.data.end(), -std::numeric_limits<float>::infinity());
  {
    const SdpaResult r = RunSdpa(c, 1002);
    uniform_rows(c, r, {2});
    ExpectAllClose(r.weights, r.want_weights, kAbs, kRel, "additive weights");
    ExpectAllClose(r.out, r.want_out, kAbs, kRel, "additive output");
  }
  // additive -inf everywhere, broadcast [Lk], across widths around the SIMD
  // width and long enough for tiled keys.
  for (int64_t n : {1, 7, 8, 9, 16, 17, 33, 530}) {
    SdpaCase d;
    d.B = 2;
    d.Lq = 2;
    d.Lk = n;
    d.D = 4;
    d.Dv = 3;
    d.mask.kind = MaskKind::kAdditive;
    d.mask.shape[3] = n;
    d.mask.data.assign(static_cast<size_t>(n), -std::numeric_limits<float>::infinity());
    const SdpaResult r = RunSdpa(d, 1003);
    for (float w : r.weights) EXPECT_NEAR(w, 1.0 / n, 1e-7) << Describe(d);
    ExpectAllClose(r.out, r.want_out, 1e-6, 1e-5, "all -inf output " + Describe(d));
    ExpectAllClose(r.out_no_weights, r.want_out, 1e-6, 1e-5, "all -inf output, no weights " + Describe(d));
  }
}

// Causal/padding fill -1e9 overrides the tensor mask (tensor mask first, then
// fill): a causally hidden key stays hidden even when the additive mask
// favours it, and a row whose visible keys are all -inf puts its weight on the
// keys filled with -1e9 (which are larger than -inf).
TEST_P(SdpaTest, CausalAndPaddingOverrideTensorMask) {
  const int64_t lq = 3, lk = 4;
  SdpaCase c;
  c.Lq = lq;
  c.Lk = lk;
  c.D = 4;
  c.Dv = 2;
  c.mask.causal = true;
  c.mask.kind = MaskKind::kAdditive;
  c.mask.shape[2] = lq;
  c.mask.shape[3] = lk;
  const float inf = std::numeric_limits<float>::infinity();
  c.mask.data = {-inf, 50.0f, 50.0f, 50.0f,   // row 0: key 0 -inf, the rest causally hidden
                 0.0f, 0.0f, 1e30f, 1e30f,    // row 1: huge bonus on hidden keys
                 0.0f, 0.0f, 0.0f, 0.0f};
  const SdpaResult r = RunSdpa(c, 1100);
  ASSERT_TRUE(AllFinite(r.weights.data(), lq * lk));
  // Row 0: key 0 is -inf, keys 1..3 are filled with -1e9 → uniform over 1..3.
  EXPECT_EQ(r.weights[0], 0.0f);
  for (int64_t j = 1; j < lk; ++j) EXPECT_NEAR(r.weights[static_cast<size_t>(j)], 1.0 / 3.0, 1e-6);
  // Row 1: keys 2, 3 are hidden whatever the mask says.
  EXPECT_EQ(r.weights[lk + 2], 0.0f);
  EXPECT_EQ(r.weights[lk + 3], 0.0f);
  ExpectAllClose(r.weights, r.want_weights, kAbs, kRel, "weights");
  ExpectAllClose(r.out, r.want_out, kAbs, kRel, "output");

  // Padding with keep: a kept-by-tensor key beyond the length stays masked.
  SdpaCase p;
  p.B = 2;
  p.Lq = 2;
  p.Lk = 5;
  p.D = 3;
  p.Dv = 3;
  p.mask.lengths = {2, 5};
  p.mask.kind = MaskKind::kKeep;
  p.mask.shape[3] = 5;
  p.mask.data = {0.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  const SdpaResult rp = RunSdpa(p, 1101);
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(rp.weights[static_cast<size_t>(i * 5 + 0)], 0.0f);
    EXPECT_NEAR(rp.weights[static_cast<size_t>(i * 5 + 1)], 1.0f, 1e-6);
    for (int64_t j = 2; j < 5; ++j) EXPECT_EQ(rp.weights[static_cast<size_t>(i * 5 + j)], 0.0f);
  }
  ExpectAllClose(rp.weights, rp.want_weights, kAbs, kRel, "padding+keep weights");
  ExpectAllClose(rp.out, rp.want_out, kAbs, kRel, "padding+keep output");
}

TEST_P(SdpaTest, BatchesAndHeadsAreIndependent) {
  // Computing a [B, H] problem at once equals computing each (b, h) alone.
  SdpaCase c;
  c.B = 3;
  c.H = 2;
  c.Lq = 5;
  c.Lk = 9;
  c.D = 6;
  c.Dv = 7;
  const SdpaResult all = RunSdpa(c, 1200);
  for (int64_t n = 0; n < c.B * c.H; ++n) {
    std::vector<float> out(static_cast<size_t>(c.Lq * c.Dv));
    SdpaArgs a;
    a.lq = c.Lq;
    a.lk = c.Lk;
    a.d = c.D;
    a.dv = c.Dv;
    a.q = all.q.data() + n * c.Lq * c.D;
    a.k = all.k.data() + n * c.Lk * c.D;
    a.v = all.v.data() + n * c.Lk * c.Dv;
    a.output = out.data();
    ASSERT_TRUE(attnlab::ScaledDotProductAttention(a).ok());
    for (int64_t t = 0; t < c.Lq * c.Dv; ++t) {
      EXPECT_EQ(out[static_cast<size_t>(t)], all.out[static_cast<size_t>(n * c.Lq * c.Dv + t)])
          << "problem " << n << " element " << t;
    }
  }
}

TEST_P(SdpaTest, SimdMatchesScalarKernels) {
  // The two kernel sets agree to float32 rounding on the same problem.
  SdpaCase c;
  c.B = 2;
  c.H = 2;
  c.Lq = 7;
  c.Lk = 37;
  c.D = 19;
  c.Dv = 21;
  c.mask.causal = true;
  c.mask.lengths = {30, 37};
  const SdpaResult mine = RunSdpa(c, 1300);
  SdpaResult other;
  {
    ScopedKernelSet flip(!GetParam());
    other = RunSdpa(c, 1300);
  }
  ExpectAllClose(mine.out, ToDouble(other.out.data(), static_cast<int64_t>(other.out.size())),
                 1e-5, 1e-5, "output simd vs scalar");
  ExpectAllClose(mine.weights,
                 ToDouble(other.weights.data(), static_cast<int64_t>(other.weights.size())),
                 1e-6, 1e-5, "weights simd vs scalar");
}

INSTANTIATE_TEST_SUITE_P(KernelSets, SdpaTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return KernelSetName(info.param);
                         });

}  // namespace
}  // namespace attnlab_test

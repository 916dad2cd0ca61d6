// MultiHeadAttention against a double-precision torch.nn.MultiheadAttention
// reference (written in reference.h from the documented formulas), for both
// kernel sets: embed/head sizes around the SIMD and panel widths, bias on/off,
// kdim/vdim != E, cross attention Lq != Lk, every mask kind, the fused
// self-attention path vs the unfused path, torch vs keras weight layouts,
// head-averaged weights, seeded Xavier initialisation and scratch reuse.
//
// Tolerances (MHA, inputs U(-1, 1), weights U(-0.5, 0.5), E <= 64):
//   output   |got - want| <= 1e-5 + 5e-5·|want|
//   weights  |got - want| <= 5e-6 + 5e-5·|want|
// Four float32 GEMMs of depth <= 64 plus the attention core; projected
// values are O(1-3), so each GEMM contributes ~E·u·Σ|x||w| (~1e-5 worst case);
// the observed worst error is ~6e-7 on both kernel sets.
// Fused vs unfused and averaged vs mean-of-heads: 1e-6 abs (the same float32
// operations in a different grouping).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attention_lab.h"
#include "reference.h"

namespace attnlab_test {
namespace {

using attnlab::MaskKind;
using attnlab::MhaConfig;
using attnlab::MhaForwardArgs;
using attnlab::MultiHeadAttention;
using attnlab::Status;
using attnlab::WeightId;
using attnlab::WeightLayout;

constexpr double kOutAbs = 1e-5, kOutRel = 5e-5;
constexpr double kWAbs = 5e-6, kWRel = 5e-5;

std::unique_ptr<MultiHeadAttention> MakeMha(int64_t e, int64_t h, int64_t kdim = 0,
                                            int64_t vdim = 0, bool bias = true,
                                            uint32_t seed = 0) {
  MhaConfig cfg;
  cfg.embed_dim = e;
  cfg.num_heads = h;
  cfg.kdim = kdim;
  cfg.vdim = vdim;
  cfg.bias = bias;
  cfg.seed = seed;
  Status s;
  auto m = MultiHeadAttention::Create(cfg, &s);
  EXPECT_TRUE(s.ok()) << s.message;
  EXPECT_NE(m, nullptr);
  return m;
}

// Transposes a row-major [rows, cols] matrix.
std::vector<float> Transpose(const std::vector<float>& w, int64_t rows, int64_t cols) {
  std::vector<float> t(w.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[static_cast<size_t>(c * rows + r)] = w[static_cast<size_t>(r * cols + c)];
  return t;
}

// Sets every weight; torch-layout source, written in `layout`.
void SetWeights(MultiHeadAttention& m, const MhaWeights& w, WeightLayout layout) {
  const int64_t e = m.config().embed_dim, kd = m.config().kdim, vd = m.config().vdim;
  auto set = [&](WeightId id, const std::vector<float>& torch, int64_t in) {
    const std::vector<float> src = layout == WeightLayout::kTorch ? torch : Transpose(torch, e, in);
    const Status s = m.SetWeight(id, src.data(), layout);
    ASSERT_TRUE(s.ok()) << s.message;
  };
  set(WeightId::kWq, w.wq, e);
  set(WeightId::kWk, w.wk, kd);
  set(WeightId::kWv, w.wv, vd);
  set(WeightId::kWo, w.wo, e);
  if (m.config().bias) {
    ASSERT_TRUE(m.SetWeight(WeightId::kBq, w.bq.data(), layout).ok());
    ASSERT_TRUE(m.SetWeight(WeightId::kBk, w.bk.data(), layout).ok());
    ASSERT_TRUE(m.SetWeight(WeightId::kBv, w.bv.data(), layout).ok());
    ASSERT_TRUE(m.SetWeight(WeightId::kBo, w.bo.data(), layout).ok());
  }
}

// Reads every weight back in torch layout.
MhaWeights GetWeights(const MultiHeadAttention& m) {
  MhaWeights w;
  auto get = [&](WeightId id, std::vector<float>* out) {
    out->assign(static_cast<size_t>(m.WeightSize(id)), std::nanf(""));
    if (out->empty()) return;
    const Status s = m.GetWeight(id, WeightLayout::kTorch, out->data());
    EXPECT_TRUE(s.ok()) << s.message;
  };
  get(WeightId::kWq, &w.wq);
  get(WeightId::kBq, &w.bq);
  get(WeightId::kWk, &w.wk);
  get(WeightId::kBk, &w.bk);
  get(WeightId::kWv, &w.wv);
  get(WeightId::kBv, &w.bv);
  get(WeightId::kWo, &w.wo);
  get(WeightId::kBo, &w.bo);
  return w;
}

struct MhaCase {
  int64_t B = 1, Lq = 1, Lk = 1, E = 8, H = 2, kdim = 0, vdim = 0;
  bool bias = true;
  bool self = false;  // query == key == value (same pointer)
  bool average = false;
  bool need_weights = true;
  RefMask mask;
};

std::string Describe(const MhaCase& c) {
  std::ostringstream os;
  os << "B=" << c.B << " Lq=" << c.Lq << " Lk=" << c.Lk << " E=" << c.E << " H=" << c.H
     << " kdim=" << c.kdim << " vdim=" << c.vdim << " bias=" << c.bias << " self=" << c.self
     << " average=" << c.average << " " << c.mask.Describe();
  return os.str();
}

struct MhaRun {
  std::vector<float> query, key, value, out, weights;
  MhaWeights w;
};

// Creates a layer with random weights, runs Forward and checks it against
// the reference.
MhaRun CheckMha(const MhaCase& c, uint32_t seed) {
  SCOPED_TRACE(Describe(c));
  MhaRun r;
  Rng rng(seed);
  const int64_t kdim = c.kdim ? c.kdim : c.E, vdim = c.vdim ? c.vdim : c.E;
  auto m = MakeMha(c.E, c.H, c.kdim, c.vdim, c.bias, seed);
  if (!m) return r;
  r.w = RandomMhaWeights(rng, c.E, kdim, vdim, c.bias);
  SetWeights(*m, r.w, WeightLayout::kTorch);
  r.query = rng.Vector(c.B * c.Lq * c.E);
  if (c.self) {
    r.key = r.query;
    r.value = r.query;
  } else {
    r.key = rng.Vector(c.B * c.Lk * kdim);
    r.value = rng.Vector(c.B * c.Lk * vdim);
  }
  const int64_t wn = c.average ? c.B * c.Lq * c.Lk : c.B * c.H * c.Lq * c.Lk;
  r.out.assign(static_cast<size_t>(c.B * c.Lq * c.E), std::nanf(""));
  r.weights.assign(static_cast<size_t>(wn), std::nanf(""));
  MhaForwardArgs a;
  a.batch = c.B;
  a.lq = c.Lq;
  a.lk = c.Lk;
  a.query = r.query.data();
  a.key = c.self ? r.query.data() : r.key.data();
  a.value = c.self ? r.query.data() : r.value.data();
  a.mask = c.mask.Spec();
  a.output = r.out.data();
  a.weights = c.need_weights ? r.weights.data() : nullptr;
  a.average_weights = c.average;
  const Status s = m->Forward(a);
  EXPECT_TRUE(s.ok()) << s.message;

  std::vector<double> want_out, want_w, want_avg;
  RefMha(c.B, c.Lq, c.Lk, c.E, c.H, kdim, vdim, r.query.data(), r.key.data(), r.value.data(),
         r.w, c.mask, &want_out, &want_w, &want_avg);
  ExpectAllClose(r.out, want_out, kOutAbs, kOutRel, "output");
  if (c.need_weights) {
    ExpectAllClose(r.weights, c.average ? want_avg : want_w, kWAbs, kWRel,
                   c.average ? "averaged weights" : "weights");
  }
  return r;
}

class MhaTest : public ::testing::TestWithParam<bool> {
 protected:
  MhaTest() : kernels_(GetParam()) {}
  ScopedKernelSet kernels_;
};

TEST_P(MhaTest, SelfAttentionShapeSweep) {
  // (E, H): head dims 1, 3, 4, 8, 11, 16, 32 and E around 4/8/16/32/64.
  const std::vector<std::pair<int64_t, int64_t>> eh = {
      {1, 1}, {4, 1}, {8, 2}, {12, 3}, {16, 4}, {17, 1}, {24, 8},
      {32, 2}, {33, 3}, {48, 3}, {64, 4}, {64, 2}};
  uint32_t seed = 1;
  for (auto [e, h] : eh) {
    for (int64_t l : {1, 5, 17}) {
      for (bool bias : {true, false}) {
        for (bool self : {true, false}) {
          MhaCase c;
          c.B = 2;
          c.Lq = c.Lk = l;
          c.E = e;
          c.H = h;
          c.bias = bias;
          c.self = self;
          CheckMha(c, seed++);
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST_P(MhaTest, CrossAttentionWithKdimVdim) {
  uint32_t seed = 100;
  struct Dims { int64_t e, h, kdim, vdim, lq, lk; };
  for (Dims d : {Dims{12, 3, 7, 5, 3, 9}, Dims{16, 2, 33, 1, 10, 2}, Dims{8, 4, 8, 3, 1, 17},
                 Dims{20, 5, 20, 20, 6, 4}, Dims{32, 4, 16, 48, 17, 33}}) {
    for (bool bias : {true, false}) {
      MhaCase c;
      c.B = 2;
      c.E = d.e;
      c.H = d.h;
      c.kdim = d.kdim;
      c.vdim = d.vdim;
      c.Lq = d.lq;
      c.Lk = d.lk;
      c.bias = bias;
      CheckMha(c, seed++);
    }
  }
}

TEST_P(MhaTest, Masks) {
  uint32_t seed = 200;
  const int64_t B = 2, H = 4, E = 16;
  for (auto lqlk : {std::vector<int64_t>{6, 6}, {4, 9}, {9, 4}}) {
    const int64_t lq = lqlk[0], lk = lqlk[1];
    for (int variant = 0; variant < 8; ++variant) {
      for (bool average : {false, true}) {
        MhaCase c;
        c.B = B;
        c.H = H;
        c.E = E;
        c.Lq = lq;
        c.Lk = lk;
        c.self = lq == lk && variant % 2 == 0;
        c.average = average;
        Rng rng(seed);
        switch (variant) {
          case 0: c.mask.causal = true; break;
          case 1: c.mask.lengths = {0, static_cast<int32_t>(lk)}; break;
          case 2: c.mask.lengths = {static_cast<int32_t>(lk) - 1, 1}; c.mask.causal = true; break;
          case 3: FillTensorMask(&c.mask, MaskKind::kKeep, B, 1, 1, lk, rng); break;
          case 4: FillTensorMask(&c.mask, MaskKind::kBlock, 1, 1, lq, lk, rng); break;
          case 5: FillTensorMask(&c.mask, MaskKind::kAdditive, B, H, lq, lk, rng); break;
          case 6:
            FillTensorMask(&c.mask, MaskKind::kKeep, B, 1, lq, lk, rng);
            c.mask.causal = true;
            c.mask.lengths = {static_cast<int32_t>(lk), 2};
            break;
          case 7:
            FillTensorMask(&c.mask, MaskKind::kAdditive, 1, H, 1, lk, rng);
            c.mask.lengths = {1, 0};
            break;
        }
        CheckMha(c, seed++);
        if (HasFailure()) return;
      }
    }
  }
}

// Long key sequences without weights (the core may use tiled keys with an
// online softmax there), self and cross attention, with masks.
TEST_P(MhaTest, LongKeysWithoutWeights) {
  uint32_t seed = 250;
  for (int variant = 0; variant < 4; ++variant) {
    MhaCase c;
    c.B = 2;
    c.E = 16;
    c.H = 2;
    c.need_weights = false;
    switch (variant) {
      case 0: c.Lq = 40; c.Lk = 600; break;
      case 1: c.Lq = 3; c.Lk = 1030; c.mask.lengths = {1030, 700}; c.kdim = 5; break;
      case 2: c.Lq = c.Lk = 520; c.self = true; c.mask.causal = true; break;
      case 3: c.Lq = c.Lk = 513; c.self = true; c.mask.lengths = {0, 300}; break;
    }
    CheckMha(c, seed++);
    if (HasFailure()) return;
  }
}

TEST_P(MhaTest, FusedSelfPathEqualsUnfusedPath) {
  for (auto [e, h] : std::vector<std::pair<int64_t, int64_t>>{{8, 2}, {17, 1}, {32, 4}, {48, 6}}) {
    SCOPED_TRACE(::testing::Message() << "E=" << e << " H=" << h);
    Rng rng(300 + static_cast<uint32_t>(e));
    auto m = MakeMha(e, h, 0, 0, true, 5);
    ASSERT_NE(m, nullptr);
    SetWeights(*m, RandomMhaWeights(rng, e, e, e, true), WeightLayout::kTorch);
    const int64_t B = 2, L = 13;
    const std::vector<float> x = rng.Vector(B * L * e);
    const std::vector<float> xk = x, xv = x;  // separate copies: unfused path
    std::vector<float> out_f(static_cast<size_t>(B * L * e)), out_u(out_f.size()),
        out_p(out_f.size());
    std::vector<float> w_f(static_cast<size_t>(B * h * L * L)), w_u(w_f.size());
    MhaForwardArgs a;
    a.batch = B;
    a.lq = a.lk = L;
    a.mask.causal = true;
    a.query = a.key = a.value = x.data();
    a.output = out_f.data();
    a.weights = w_f.data();
    ASSERT_TRUE(m->Forward(a).ok());
    a.key = xk.data();
    a.value = xv.data();
    a.output = out_u.data();
    a.weights = w_u.data();
    ASSERT_TRUE(m->Forward(a).ok());
    // key == value but query separate: K and V from one product against the
    // [Wk | Wv] panels (where E starts a panel; E = 17 does not), the same
    // multiply-add chains as separate K and V products, so the same bits.
    a.key = a.value = xk.data();
    a.output = out_p.data();
    a.weights = nullptr;
    ASSERT_TRUE(m->Forward(a).ok());
    ExpectAllClose(out_f, ToDouble(out_u.data(), static_cast<int64_t>(out_u.size())), 1e-6, 0.0,
                   "fused vs unfused output");
    ExpectAllClose(w_f, ToDouble(w_u.data(), static_cast<int64_t>(w_u.size())), 1e-6, 0.0,
                   "fused vs unfused weights");
    EXPECT_EQ(out_p, out_u) << "key==value vs separate output";
  }
}

TEST_P(MhaTest, AveragedWeightsAreMeanOfHeads) {
  const int64_t B = 2, Lq = 5, Lk = 7, E = 24, H = 6;
  Rng rng(400);
  auto m = MakeMha(E, H);
  ASSERT_NE(m, nullptr);
  SetWeights(*m, RandomMhaWeights(rng, E, E, E, true), WeightLayout::kTorch);
  const auto q = rng.Vector(B * Lq * E), kv = rng.Vector(B * Lk * E);
  std::vector<float> out1(static_cast<size_t>(B * Lq * E)), out2(out1.size());
  std::vector<float> per_head(static_cast<size_t>(B * H * Lq * Lk));
  std::vector<float> avg(static_cast<size_t>(B * Lq * Lk) + 8, kSentinel);
  MhaForwardArgs a;
  a.batch = B;
  a.lq = Lq;
  a.lk = Lk;
  a.query = q.data();
  a.key = a.value = kv.data();
  a.mask.lengths = nullptr;
  a.output = out1.data();
  a.weights = per_head.data();
  ASSERT_TRUE(m->Forward(a).ok());
  a.output = out2.data();
  a.weights = avg.data();
  a.average_weights = true;
  ASSERT_TRUE(m->Forward(a).ok());
  EXPECT_EQ(out1, out2) << "average_weights must not change the output";
  EXPECT_TRUE(Untouched(avg.data() + B * Lq * Lk, 8)) << "averaged weights are [B, Lq, Lk]";
  std::vector<double> mean(static_cast<size_t>(B * Lq * Lk), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < Lq * Lk; ++t)
        mean[static_cast<size_t>(b * Lq * Lk + t)] +=
            per_head[static_cast<size_t>((b * H + h) * Lq * Lk + t)] / static_cast<double>(H);
  ExpectAllClose(avg.data(), mean.data(), B * Lq * Lk, 1e-6, 0.0, "averaged vs mean of heads");
  // Each averaged row still sums to 1.
  for (int64_t r = 0; r < B * Lq; ++r) {
    double s = 0.0;
    for (int64_t j = 0; j < Lk; ++j) s += avg[static_cast<size_t>(r * Lk + j)];
    EXPECT_NEAR(s, 1.0, 1e-5) << "row " << r;
  }
}

TEST_P(MhaTest, ScratchReuseAcrossShapesAndKernelSwitch) {
  // One layer run on varying shapes must give what a fresh layer gives, also
  // when the kernel set changes between calls (weights are repacked).
  const int64_t E = 16, H = 4;
  Rng rng(500);
  const MhaWeights w = RandomMhaWeights(rng, E, E, E, true);
  auto shared = MakeMha(E, H);
  ASSERT_NE(shared, nullptr);
  SetWeights(*shared, w, WeightLayout::kTorch);
  struct Shape { int64_t b, lq, lk; bool self, flip; };
  for (Shape s : {Shape{2, 30, 30, true, false}, Shape{1, 3, 5, false, false},
                  Shape{3, 40, 12, false, true}, Shape{2, 30, 30, true, true},
                  Shape{1, 1, 1, true, false}}) {
    SCOPED_TRACE(::testing::Message() << "B=" << s.b << " Lq=" << s.lq << " Lk=" << s.lk
                                      << " self=" << s.self << " flip=" << s.flip);
    ScopedKernelSet kernels(s.flip ? !GetParam() : GetParam());
    const auto q = rng.Vector(s.b * s.lq * E);
    const auto kv = s.self ? q : rng.Vector(s.b * s.lk * E);
    std::vector<float> out(static_cast<size_t>(s.b * s.lq * E)), w1(static_cast<size_t>(s.b * H * s.lq * s.lk));
    MhaForwardArgs a;
    a.batch = s.b;
    a.lq = s.lq;
    a.lk = s.lk;
    a.query = q.data();
    a.key = a.value = s.self ? q.data() : kv.data();
    a.output = out.data();
    a.weights = w1.data();
    ASSERT_TRUE(shared->Forward(a).ok());
    auto fresh = MakeMha(E, H);
    ASSERT_NE(fresh, nullptr);
    SetWeights(*fresh, w, WeightLayout::kTorch);
    std::vector<float> out2(out.size()), w2(w1.size());
    a.output = out2.data();
    a.weights = w2.data();
    ASSERT_TRUE(fresh->Forward(a).ok());
    EXPECT_EQ(out, out2);
    EXPECT_EQ(w1, w2);
    std::vector<double> want_out, want_w;
    RefMha(s.b, s.lq, s.lk, E, H, E, E, q.data(), s.self ? q.data() : kv.data(),
           s.self ? q.data() : kv.data(), w, RefMask{}, &want_out, &want_w, nullptr);
    ExpectAllClose(out, want_out, kOutAbs, kOutRel, "output");
  }
  // Same-size calls do not grow the held memory.
  const auto q = rng.Vector(2 * 30 * E);
  std::vector<float> out(q.size());
  MhaForwardArgs a;
  a.batch = 2;
  a.lq = a.lk = 30;
  a.query = a.key = a.value = q.data();
  a.output = out.data();
  ASSERT_TRUE(shared->Forward(a).ok());
  const int64_t held = shared->HeldBytes();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(shared->Forward(a).ok());
  EXPECT_EQ(shared->HeldBytes(), held);
}

TEST_P(MhaTest, SetWeightAfterForwardRepacks) {
  const int64_t E = 12, H = 3, B = 1, L = 4;
  Rng rng(600);
  auto m = MakeMha(E, H);
  ASSERT_NE(m, nullptr);
  const auto x = rng.Vector(B * L * E);
  std::vector<float> out(x.size());
  MhaForwardArgs a;
  a.batch = B;
  a.lq = a.lk = L;
  a.query = a.key = a.value = x.data();
  a.output = out.data();
  for (int round = 0; round < 3; ++round) {
    const MhaWeights w = RandomMhaWeights(rng, E, E, E, true);
    SetWeights(*m, w, round == 1 ? WeightLayout::kKeras : WeightLayout::kTorch);
    ASSERT_TRUE(m->Forward(a).ok());
    std::vector<double> want, ww;
    RefMha(B, L, L, E, H, E, E, x.data(), x.data(), x.data(), w, RefMask{}, &want, &ww, nullptr);
    ExpectAllClose(out, want, kOutAbs, kOutRel, "round " + std::to_string(round));
  }
}

INSTANTIATE_TEST_SUITE_P(KernelSets, MhaTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return KernelSetName(info.param);
                         });

// ---------------------------------------------------------------------------
// Weight layouts and initialisation (kernel-set independent)

TEST(MhaWeights, ShapesAndSizes) {
  auto m = MakeMha(12, 3, 7, 5, true);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->config().kdim, 7);
  EXPECT_EQ(m->config().vdim, 5);
  EXPECT_EQ(m->WeightShape(WeightId::kWq, WeightLayout::kTorch), (std::vector<int64_t>{12, 12}));
  EXPECT_EQ(m->WeightShape(WeightId::kWk, WeightLayout::kTorch), (std::vector<int64_t>{12, 7}));
  EXPECT_EQ(m->WeightShape(WeightId::kWk, WeightLayout::kKeras), (std::vector<int64_t>{7, 12}));
  EXPECT_EQ(m->WeightShape(WeightId::kWv, WeightLayout::kTorch), (std::vector<int64_t>{12, 5}));
  EXPECT_EQ(m->WeightShape(WeightId::kWv, WeightLayout::kKeras), (std::vector<int64_t>{5, 12}));
  EXPECT_EQ(m->WeightShape(WeightId::kWo, WeightLayout::kKeras), (std::vector<int64_t>{12, 12}));
  EXPECT_EQ(m->WeightShape(WeightId::kBk, WeightLayout::kTorch), (std::vector<int64_t>{12}));
  EXPECT_EQ(m->WeightSize(WeightId::kWk), 84);
  EXPECT_EQ(m->WeightSize(WeightId::kWv), 60);
  EXPECT_EQ(m->WeightSize(WeightId::kBo), 12);

  // kdim/vdim 0 mean E.
  auto d = MakeMha(8, 2);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->config().kdim, 8);
  EXPECT_EQ(d->config().vdim, 8);

  auto nb = MakeMha(8, 2, 0, 0, /*bias=*/false);
  ASSERT_NE(nb, nullptr);
  for (WeightId id : {WeightId::kBq, WeightId::kBk, WeightId::kBv, WeightId::kBo}) {
    EXPECT_EQ(nb->WeightSize(id), 0);
    float dummy[8] = {};
    const Status s = nb->SetWeight(id, dummy, WeightLayout::kTorch);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message.find("bias"), std::string::npos) << s.message;
  }
}

TEST(MhaWeights, TorchKerasRoundTrip) {
  const int64_t E = 12, kdim = 7, vdim = 5;
  Rng rng(700);
  const MhaWeights w = RandomMhaWeights(rng, E, kdim, vdim, true);
  auto torch = MakeMha(E, 3, kdim, vdim);
  auto keras = MakeMha(E, 3, kdim, vdim);
  ASSERT_NE(torch, nullptr);
  ASSERT_NE(keras, nullptr);
  SetWeights(*torch, w, WeightLayout::kTorch);
  SetWeights(*keras, w, WeightLayout::kKeras);  // the transposes
  // Torch read-back is bit-exact, from either set path.
  const MhaWeights t = GetWeights(*torch), k = GetWeights(*keras);
  EXPECT_EQ(t.wq, w.wq);
  EXPECT_EQ(t.wk, w.wk);
  EXPECT_EQ(t.wv, w.wv);
  EXPECT_EQ(t.wo, w.wo);
  EXPECT_EQ(t.bq, w.bq);
  EXPECT_EQ(t.bo, w.bo);
  EXPECT_EQ(k.wq, w.wq);
  EXPECT_EQ(k.wk, w.wk);
  EXPECT_EQ(k.wv, w.wv);
  EXPECT_EQ(k.wo, w.wo);
  EXPECT_EQ(k.bv, w.bv);
  // Keras read-back is the transpose.
  std::vector<float> kk(static_cast<size_t>(kdim * E));
  ASSERT_TRUE(torch->GetWeight(WeightId::kWk, WeightLayout::kKeras, kk.data()).ok());
  EXPECT_EQ(kk, Transpose(w.wk, E, kdim));
  std::vector<float> kv(static_cast<size_t>(vdim * E));
  ASSERT_TRUE(torch->GetWeight(WeightId::kWv, WeightLayout::kKeras, kv.data()).ok());
  EXPECT_EQ(kv, Transpose(w.wv, E, vdim));
  // Both layers compute the same thing, bit for bit.
  const auto q = rng.Vector(2 * 3 * E), key = rng.Vector(2 * 4 * kdim), val = rng.Vector(2 * 4 * vdim);
  std::vector<float> o1(q.size()), o2(q.size());
  MhaForwardArgs a;
  a.batch = 2;
  a.lq = 3;
  a.lk = 4;
  a.query = q.data();
  a.key = key.data();
  a.value = val.data();
  a.output = o1.data();
  ASSERT_TRUE(torch->Forward(a).ok());
  a.output = o2.data();
  ASSERT_TRUE(keras->Forward(a).ok());
  EXPECT_EQ(o1, o2);
}

TEST(MhaWeights, SeededXavierInitIsDeterministicAndBounded) {
  const int64_t E = 64, H = 4, kdim = 32, vdim = 96;
  auto a = MakeMha(E, H, kdim, vdim, true, 42);
  auto b = MakeMha(E, H, kdim, vdim, true, 42);
  auto c = MakeMha(E, H, kdim, vdim, true, 43);
  ASSERT_TRUE(a && b && c);
  const MhaWeights wa = GetWeights(*a), wb = GetWeights(*b), wc = GetWeights(*c);
  EXPECT_EQ(wa.wq, wb.wq);
  EXPECT_EQ(wa.wk, wb.wk);
  EXPECT_EQ(wa.wv, wb.wv);
  EXPECT_EQ(wa.wo, wb.wo);
  EXPECT_NE(wa.wq, wc.wq) << "a different seed gives different weights";
  EXPECT_NE(wa.wq, wa.wk) << "the four matrices are drawn independently";
  // Biases start at zero.
  for (const auto* bias : {&wa.bq, &wa.bk, &wa.bv, &wa.bo}) {
    ASSERT_EQ(bias->size(), static_cast<size_t>(E));
    for (float x : *bias) EXPECT_EQ(x, 0.0f);
  }
  // Xavier uniform: U(-bound, bound), bound = sqrt(6 / (fan_in + fan_out)).
  struct W { const char* name; const std::vector<float>* w; int64_t fan_in; };
  for (W w : {W{"wq", &wa.wq, E}, W{"wk", &wa.wk, kdim}, W{"wv", &wa.wv, vdim}, W{"wo", &wa.wo, E}}) {
    const double bound = std::sqrt(6.0 / static_cast<double>(w.fan_in + E));
    double max_abs = 0.0, sum = 0.0, sum_sq = 0.0;
    for (float x : *w.w) {
      ASSERT_LE(std::fabs(x), bound) << w.name;
      max_abs = std::max(max_abs, static_cast<double>(std::fabs(x)));
      sum += x;
      sum_sq += static_cast<double>(x) * x;
    }
    const double n = static_cast<double>(w.w->size());
    // Spread over the whole interval: mean ~0, variance ~bound²/3 (n >= 2048).
    EXPECT_GT(max_abs, 0.95 * bound) << w.name;
    EXPECT_NEAR(sum / n, 0.0, 0.1 * bound) << w.name;
    EXPECT_NEAR(sum_sq / n, bound * bound / 3.0, 0.1 * bound * bound / 3.0) << w.name;
  }
  // The seeded layer is usable as is, identically for equal seeds.
  Rng rng(1);
  const auto x = rng.Vector(2 * 3 * E);
  std::vector<float> o1(x.size()), o2(x.size());
  MhaForwardArgs f;
  f.batch = 2;
  f.lq = f.lk = 3;
  f.query = x.data();
  const auto key = rng.Vector(2 * 3 * kdim), val = rng.Vector(2 * 3 * vdim);
  f.key = key.data();
  f.value = val.data();
  f.output = o1.data();
  ASSERT_TRUE(a->Forward(f).ok());
  f.output = o2.data();
  ASSERT_TRUE(b->Forward(f).ok());
  EXPECT_EQ(o1, o2);
  EXPECT_TRUE(AllFinite(o1.data(), static_cast<int64_t>(o1.size())));
}

}  // namespace
}  // namespace attnlab_test

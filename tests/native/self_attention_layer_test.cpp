// SelfAttentionLayer: y = LayerNorm(x + Dropout(MHA(x, x, x))) against a
// double-precision reference (RefMha + RefLayerNorm), for both kernel sets.
// Eval mode has no dropout; training mode drops element i of the flattened
// [B, L, E] MHA output when DropoutUniform(seed, i) < p (reference.h writes
// that function out independently) and scales the rest by 1/(1 - p).
//
// Tolerances (layer, inputs U(-1, 1), weights U(-0.5, 0.5)):
//   output   |got - want| <= 2e-5 + 1e-4·|want|
//            (the MHA error, ~1e-6, divided by the row's standard deviation
//            in LayerNorm and multiplied by gamma <= 2; observed ~7e-7)
//   weights  |got - want| <= 5e-6 + 5e-5·|want| (as multi_head_attention_test)
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attention_lab.h"
#include "reference.h"

namespace attnlab_test {
namespace {

using attnlab::LayerConfig;
using attnlab::LayerForwardArgs;
using attnlab::SelfAttentionLayer;
using attnlab::Status;
using attnlab::WeightId;
using attnlab::WeightLayout;

constexpr double kAbs = 2e-5, kRel = 1e-4;
constexpr double kWAbs = 5e-6, kWRel = 5e-5;

std::unique_ptr<SelfAttentionLayer> MakeLayer(int64_t e, int64_t h, float p, float eps = 1e-5f,
                                              bool bias = true) {
  LayerConfig cfg;
  cfg.mha.embed_dim = e;
  cfg.mha.num_heads = h;
  cfg.mha.bias = bias;
  cfg.mha.seed = 3;
  cfg.dropout = p;
  cfg.eps = eps;
  Status s;
  auto layer = SelfAttentionLayer::Create(cfg, &s);
  EXPECT_TRUE(s.ok()) << s.message;
  return layer;
}

struct LayerSetup {
  MhaWeights w;
  std::vector<float> gamma, beta;
};

LayerSetup Randomize(SelfAttentionLayer& layer, Rng& rng) {
  const int64_t e = layer.config().mha.embed_dim;
  LayerSetup s;
  s.w = RandomMhaWeights(rng, e, e, e, layer.config().mha.bias);
  auto& m = layer.mha();
  EXPECT_TRUE(m.SetWeight(WeightId::kWq, s.w.wq.data(), WeightLayout::kTorch).ok());
  EXPECT_TRUE(m.SetWeight(WeightId::kWk, s.w.wk.data(), WeightLayout::kTorch).ok());
  EXPECT_TRUE(m.SetWeight(WeightId::kWv, s.w.wv.data(), WeightLayout::kTorch).ok());
  EXPECT_TRUE(m.SetWeight(WeightId::kWo, s.w.wo.data(), WeightLayout::kTorch).ok());
  if (layer.config().mha.bias) {
    EXPECT_TRUE(m.SetWeight(WeightId::kBq, s.w.bq.data(), WeightLayout::kTorch).ok());
    EXPECT_TRUE(m.SetWeight(WeightId::kBk, s.w.bk.data(), WeightLayout::kTorch).ok());
    EXPECT_TRUE(m.SetWeight(WeightId::kBv, s.w.bv.data(), WeightLayout::kTorch).ok());
    EXPECT_TRUE(m.SetWeight(WeightId::kBo, s.w.bo.data(), WeightLayout::kTorch).ok());
  }
  s.gamma = rng.Vector(e, 0.5f, 2.0f);
  s.beta = rng.Vector(e);
  EXPECT_TRUE(layer.SetNorm(s.gamma.data(), s.beta.data()).ok());
  return s;
}

// Reference layer output. p < 0 means eval (no dropout).
std::vector<double> RefLayer(int64_t B, int64_t L, int64_t E, int64_t H, const std::vector<float>& x,
                             const LayerSetup& s, const RefMask& mask, float p, uint32_t seed,
                             float eps, std::vector<double>* weights, std::vector<double>* avg) {
  std::vector<double> attn;
  RefMha(B, L, L, E, H, E, E, x.data(), x.data(), x.data(), s.w, mask, &attn, weights, avg);
  if (p >= 0.0f) {
    for (size_t i = 0; i < attn.size(); ++i) {
      attn[i] = RefDropoutUniform(seed, static_cast<uint32_t>(i)) < p ? 0.0 : attn[i] / (1.0 - p);
    }
  }
  std::vector<double> sum(attn.size());
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = static_cast<double>(x[i]) + attn[i];
  return RefLayerNorm(B * L, E, sum, s.gamma.data(), s.beta.data(), eps);
}

class LayerTest : public ::testing::TestWithParam<bool> {
 protected:
  LayerTest() : kernels_(GetParam()) {}
  ScopedKernelSet kernels_;
};

TEST_P(LayerTest, EvalIsLayerNormOfResidualPlusMha) {
  uint32_t seed = 1;
  for (auto [e, h] : std::vector<std::pair<int64_t, int64_t>>{{4, 1}, {8, 2}, {16, 4}, {17, 1}, {32, 4}, {64, 8}}) {
    for (int64_t l : {1, 3, 16, 17}) {
      for (int variant = 0; variant < 3; ++variant) {
        SCOPED_TRACE(::testing::Message() << "E=" << e << " H=" << h << " L=" << l << " variant " << variant);
        Rng rng(seed++);
        auto layer = MakeLayer(e, h, 0.3f, 1e-5f, variant != 2);
        ASSERT_NE(layer, nullptr);
        const LayerSetup s = Randomize(*layer, rng);
        const int64_t B = 2;
        const auto x = rng.Vector(B * l * e);
        RefMask mask;
        if (variant == 1) {
          mask.causal = true;
          mask.lengths = {static_cast<int32_t>(l), 0};
        }
        std::vector<float> out(x.size() + 4, kSentinel), w(static_cast<size_t>(B * h * l * l));
        LayerForwardArgs a;
        a.batch = B;
        a.seq_len = l;
        a.x = x.data();
        a.mask = mask.Spec();
        a.training = false;
        a.dropout_seed = 99;
        a.output = out.data();
        a.weights = w.data();
        const Status st = layer->Forward(a);
        ASSERT_TRUE(st.ok()) << st.message;
        EXPECT_TRUE(Untouched(out.data() + x.size(), 4));
        out.resize(x.size());
        std::vector<double> want_w;
        const auto want = RefLayer(B, l, e, h, x, s, mask, -1.0f, 0, 1e-5f, &want_w, nullptr);
        ExpectAllClose(out, want, kAbs, kRel, "output");
        ExpectAllClose(w, want_w, kWAbs, kWRel, "weights");
        if (HasFailure()) return;
      }
    }
  }
}

TEST_P(LayerTest, EvalIgnoresDropoutSeed) {
  Rng rng(50);
  auto layer = MakeLayer(16, 2, 0.5f);
  ASSERT_NE(layer, nullptr);
  Randomize(*layer, rng);
  const auto x = rng.Vector(2 * 5 * 16);
  std::vector<float> o1(x.size()), o2(x.size());
  LayerForwardArgs a;
  a.batch = 2;
  a.seq_len = 5;
  a.x = x.data();
  a.output = o1.data();
  a.dropout_seed = 1;
  ASSERT_TRUE(layer->Forward(a).ok());
  a.output = o2.data();
  a.dropout_seed = 2;
  ASSERT_TRUE(layer->Forward(a).ok());
  EXPECT_EQ(o1, o2);
}

TEST_P(LayerTest, TrainingAppliesDropoutUniformMask) {
  uint32_t seed = 100;
  for (float p : {0.1f, 0.25f, 0.5f}) {
    for (uint32_t dseed : {0u, 7u, 12345u}) {
      SCOPED_TRACE(::testing::Message() << "p=" << p << " seed=" << dseed);
      Rng rng(seed++);
      const int64_t B = 2, L = 6, E = 12, H = 3;
      const float eps = 1e-3f;
      auto layer = MakeLayer(E, H, p, eps);
      ASSERT_NE(layer, nullptr);
      const LayerSetup s = Randomize(*layer, rng);
      const auto x = rng.Vector(B * L * E);
      RefMask mask;
      mask.causal = dseed == 7u;
      std::vector<float> out(x.size()), w(static_cast<size_t>(B * L * L));
      LayerForwardArgs a;
      a.batch = B;
      a.seq_len = L;
      a.x = x.data();
      a.mask = mask.Spec();
      a.training = true;
      a.dropout_seed = dseed;
      a.output = out.data();
      a.weights = w.data();
      a.average_weights = true;
      ASSERT_TRUE(layer->Forward(a).ok());
      std::vector<double> want_w, want_avg;
      const auto want = RefLayer(B, L, E, H, x, s, mask, p, dseed, eps, &want_w, &want_avg);
      ExpectAllClose(out, want, kAbs, kRel, "training output");
      ExpectAllClose(w, want_avg, kWAbs, kWRel, "averaged weights (not dropped)");
      // Same seed, same result; another seed, another result.
      std::vector<float> again(x.size()), other(x.size());
      a.output = again.data();
      ASSERT_TRUE(layer->Forward(a).ok());
      EXPECT_EQ(out, again);
      a.output = other.data();
      a.dropout_seed = dseed + 1;
      ASSERT_TRUE(layer->Forward(a).ok());
      EXPECT_NE(out, other);
    }
  }
}

TEST_P(LayerTest, TrainingWithZeroDropoutEqualsEval) {
  Rng rng(200);
  auto layer = MakeLayer(8, 2, 0.0f);
  ASSERT_NE(layer, nullptr);
  Randomize(*layer, rng);
  const auto x = rng.Vector(3 * 4 * 8);
  std::vector<float> train(x.size()), eval(x.size());
  LayerForwardArgs a;
  a.batch = 3;
  a.seq_len = 4;
  a.x = x.data();
  a.training = true;
  a.dropout_seed = 5;
  a.output = train.data();
  ASSERT_TRUE(layer->Forward(a).ok());
  a.training = false;
  a.output = eval.data();
  ASSERT_TRUE(layer->Forward(a).ok());
  EXPECT_EQ(train, eval);
}

TEST_P(LayerTest, DefaultNormIsIdentityAffine) {
  // Fresh layer: gamma = 1, beta = 0; SetNorm(null, null) keeps them; the
  // seeded MHA weights are used as they are.
  auto layer = MakeLayer(16, 4, 0.1f);
  ASSERT_NE(layer, nullptr);
  std::vector<float> g(16, -1.0f), b(16, -1.0f);
  ASSERT_TRUE(layer->GetNorm(g.data(), b.data()).ok());
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(g[static_cast<size_t>(i)], 1.0f);
    EXPECT_EQ(b[static_cast<size_t>(i)], 0.0f);
  }
  Rng rng(300);
  const auto g2 = rng.Vector(16), b2 = rng.Vector(16);
  ASSERT_TRUE(layer->SetNorm(g2.data(), nullptr).ok());
  ASSERT_TRUE(layer->GetNorm(g.data(), b.data()).ok());
  EXPECT_EQ(g, g2);
  for (float v : b) EXPECT_EQ(v, 0.0f);
  ASSERT_TRUE(layer->SetNorm(nullptr, b2.data()).ok());
  ASSERT_TRUE(layer->GetNorm(g.data(), b.data()).ok());
  EXPECT_EQ(g, g2);
  EXPECT_EQ(b, b2);

  // Output with identity affine, seeded weights read back from the layer.
  auto fresh = MakeLayer(16, 4, 0.1f);
  ASSERT_NE(fresh, nullptr);
  LayerSetup s;
  auto get = [&](WeightId id, std::vector<float>* out) {
    out->assign(static_cast<size_t>(fresh->mha().WeightSize(id)), 0.0f);
    ASSERT_TRUE(fresh->mha().GetWeight(id, WeightLayout::kTorch, out->data()).ok());
  };
  get(WeightId::kWq, &s.w.wq);
  get(WeightId::kBq, &s.w.bq);
  get(WeightId::kWk, &s.w.wk);
  get(WeightId::kBk, &s.w.bk);
  get(WeightId::kWv, &s.w.wv);
  get(WeightId::kBv, &s.w.bv);
  get(WeightId::kWo, &s.w.wo);
  get(WeightId::kBo, &s.w.bo);
  s.gamma.assign(16, 1.0f);
  s.beta.assign(16, 0.0f);
  const auto x = rng.Vector(2 * 7 * 16);
  std::vector<float> out(x.size());
  LayerForwardArgs a;
  a.batch = 2;
  a.seq_len = 7;
  a.x = x.data();
  a.output = out.data();
  ASSERT_TRUE(fresh->Forward(a).ok());
  std::vector<double> ww;
  ExpectAllClose(out, RefLayer(2, 7, 16, 4, x, s, RefMask{}, -1.0f, 0, 1e-5f, &ww, nullptr), kAbs,
                 kRel, "seeded layer output");
}

TEST_P(LayerTest, ConfigAndHeldBytes) {
  auto layer = MakeLayer(16, 4, 0.2f, 1e-6f);
  ASSERT_NE(layer, nullptr);
  EXPECT_FLOAT_EQ(layer->config().dropout, 0.2f);
  EXPECT_FLOAT_EQ(layer->config().eps, 1e-6f);
  EXPECT_EQ(layer->config().mha.kdim, 16) << "kdim 0 resolves to E";
  EXPECT_EQ(layer->config().mha.vdim, 16);
  Rng rng(400);
  const auto x = rng.Vector(2 * 9 * 16);
  std::vector<float> out(x.size());
  LayerForwardArgs a;
  a.batch = 2;
  a.seq_len = 9;
  a.x = x.data();
  a.output = out.data();
  a.training = true;
  ASSERT_TRUE(layer->Forward(a).ok());
  const int64_t held = layer->HeldBytes();
  EXPECT_GT(held, 0);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(layer->Forward(a).ok());
  EXPECT_EQ(layer->HeldBytes(), held);
}

INSTANTIATE_TEST_SUITE_P(KernelSets, LayerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return KernelSetName(info.param);
                         });

}  // namespace
}  // namespace attnlab_test

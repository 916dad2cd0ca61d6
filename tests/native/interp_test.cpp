// The block graph's interpretability calls (src/train/transformer_interp.cpp)
// on seeded pre-norm models (gpt2-like: LayerNorm, learned positions, tied
// head; llama-like: RMSNorm, RoPE, SwiGLU, GQA, untied head), checked
// against the graph's own plain calls: the lens's last row is Forward's
// logits; the attribution's parts sum to the logit difference; a zero
// ablation equals a head switched off; patching between equal inputs
// changes nothing and patching the only differing embedding row restores
// the clean run; bad arguments return Invalid statuses. The float64 checks
// against TransformerLens's definitions are tests/js/interp.test.js
// (tests/reference/interp.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "train/train.h"

namespace {

using attnlab::Status;
using attnlab::Transformer;
using attnlab::TransformerConfig;

TransformerConfig Config(bool llama) {
  TransformerConfig c;
  c.vocab_size = 23;
  c.max_length = 12;
  c.embed_dim = 16;
  c.num_heads = 4;
  c.num_layers = 3;
  c.ffn_dim = 32;
  c.causal = true;
  c.prenorm = true;
  c.seed = llama ? 5 : 3;
  c.init_std = 0.3f;
  if (llama) {
    c.norm = attnlab::NormKind::kRmsNorm;
    c.positional = attnlab::Positional::kRope;
    c.activation = attnlab::Activation::kSwiGlu;
    c.num_kv_heads = 2;
    c.qkv_bias = c.out_bias = c.ffn_bias = c.head_bias = false;
  } else {
    c.positional = attnlab::Positional::kLearned;
    c.activation = attnlab::Activation::kGeluTanh;
    c.tie_embeddings = true;
    c.head_bias = false;
  }
  return c;
}

std::unique_ptr<Transformer> Make(const TransformerConfig& c) {
  Status s;
  auto t = Transformer::Create(c, &s);
  EXPECT_TRUE(s.ok()) << s.message;
  return t;
}

const std::vector<int32_t> kIds = {1, 5, 9, 2, 5, 9, 3, 7};

class Interp : public ::testing::TestWithParam<bool> {};

TEST_P(Interp, LensLastRowIsTheForwardLogits) {
  const TransformerConfig c = Config(GetParam());
  auto t = Make(c);
  const int64_t L = static_cast<int64_t>(kIds.size()), V = c.vocab_size, N = c.num_layers, k = 4;
  std::vector<float> logits(L * V), lens((N + 1) * L * V), probs((N + 1) * L * k);
  std::vector<int32_t> top((N + 1) * L * k);
  ASSERT_TRUE(t->Forward(1, L, kIds.data(), logits.data(), nullptr).ok());
  ASSERT_TRUE(t->LogitLens(L, kIds.data(), k, top.data(), probs.data(), lens.data()).ok());
  for (int64_t i = 0; i < L * V; ++i) ASSERT_EQ(lens[N * L * V + i], logits[i]) << i;
  for (int64_t r = 0; r <= N; ++r) {
    for (int64_t p = 0; p < L; ++p) {
      const float* row = &lens[(r * L + p) * V];
      const int64_t at = (r * L + p) * k;
      const int32_t best = static_cast<int32_t>(std::max_element(row, row + V) - row);
      EXPECT_EQ(top[at], best);
      for (int64_t j = 1; j < k; ++j) EXPECT_GE(probs[at + j - 1], probs[at + j]);
      double sum = 0.0, mx = row[best];
      for (int64_t v = 0; v < V; ++v) sum += std::exp(row[v] - mx);
      EXPECT_NEAR(probs[at], 1.0 / sum, 1e-6);
    }
  }
}

TEST_P(Interp, AttributionPartsSumToTheLogitDifference) {
  const TransformerConfig c = Config(GetParam());
  auto t = Make(c);
  const int64_t L = static_cast<int64_t>(kIds.size()), N = c.num_layers, H = c.num_heads;
  std::vector<float> out(N * H + 2 * N + 3), logits(L * c.vocab_size);
  ASSERT_TRUE(t->Forward(1, L, kIds.data(), logits.data(), nullptr).ok());
  for (int64_t pos : {int64_t{2}, L - 1}) {
    ASSERT_TRUE(t->Attribute(L, kIds.data(), pos, 4, 11, out.data()).ok());
    const double sum = std::accumulate(out.begin(), out.end() - 1, 0.0);
    const float ld = logits[pos * c.vocab_size + 4] - logits[pos * c.vocab_size + 11];
    EXPECT_NEAR(out.back(), ld, 1e-5);
    EXPECT_NEAR(sum, ld, 1e-4 * std::max(1.0f, std::fabs(ld)));
  }
}

TEST_P(Interp, ZeroAblationEqualsTheHeadSwitchedOff) {
  const TransformerConfig c = Config(GetParam());
  auto t = Make(c);
  const int64_t L = static_cast<int64_t>(kIds.size()), V = c.vocab_size;
  std::vector<float> a(L * V), b(L * V), plain(L * V);
  ASSERT_TRUE(t->Forward(1, L, kIds.data(), plain.data(), nullptr).ok());
  const int32_t zero[] = {1, 2, 1};
  ASSERT_TRUE(t->SetAblations(1, zero).ok());
  ASSERT_TRUE(t->Forward(1, L, kIds.data(), a.data(), nullptr).ok());
  ASSERT_TRUE(t->SetAblations(0, nullptr).ok());
  ASSERT_TRUE(t->SetHeadEnabled(1, 2, false).ok());
  ASSERT_TRUE(t->Forward(1, L, kIds.data(), b.data(), nullptr).ok());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, plain);
  ASSERT_TRUE(t->SetHeadEnabled(1, 2, true).ok());
  // A mean over one position is that position's own z: no change.
  const int32_t mean[] = {0, 1, 2, 2, 3, 2};
  std::vector<float> one(V), one_plain(V);
  ASSERT_TRUE(t->Forward(1, 1, kIds.data(), one_plain.data(), nullptr).ok());
  ASSERT_TRUE(t->SetAblations(2, mean).ok());
  ASSERT_TRUE(t->Forward(1, 1, kIds.data(), one.data(), nullptr).ok());
  for (int64_t v = 0; v < V; ++v) EXPECT_NEAR(one[v], one_plain[v], 1e-5);
  ASSERT_TRUE(t->SetAblations(0, nullptr).ok());
  ASSERT_TRUE(t->Forward(1, L, kIds.data(), a.data(), nullptr).ok());
  EXPECT_EQ(a, plain);  // cleared
}

TEST_P(Interp, PatchingEqualInputsChangesNothingAndTheOnlyDifferenceRestoresClean) {
  const TransformerConfig c = Config(GetParam());
  auto t = Make(c);
  const int64_t L = static_cast<int64_t>(kIds.size()), N = c.num_layers, H = c.num_heads;
  std::vector<float> heads(N * H), resid(N * L);
  double ld[2];
  ASSERT_TRUE(t->Patch(L, kIds.data(), kIds.data(), 4, 11, 0, heads.data(), ld).ok());
  EXPECT_EQ(ld[0], ld[1]);
  for (float v : heads) EXPECT_NEAR(v, ld[1], 1e-5);
  std::vector<int32_t> corrupted = kIds;
  corrupted[3] = 17;
  ASSERT_TRUE(t->Patch(L, kIds.data(), corrupted.data(), 4, 11, 1, resid.data(), ld).ok());
  EXPECT_NE(ld[0], ld[1]);
  EXPECT_NEAR(resid[3], ld[0], 1e-5);  // x_0 at the only differing position: the clean run
  for (int64_t p = 0; p < 3; ++p) EXPECT_NEAR(resid[p], ld[1], 1e-5);  // before it: no effect
  // The last block's input at the last position: every other row stays corrupted.
  std::vector<float> logits(L * c.vocab_size);
  ASSERT_TRUE(t->Forward(1, L, corrupted.data(), logits.data(), nullptr).ok());
  EXPECT_NEAR(ld[1], logits[(L - 1) * c.vocab_size + 4] - logits[(L - 1) * c.vocab_size + 11], 1e-5);
}

TEST_P(Interp, BadArgumentsAreInvalid) {
  const TransformerConfig c = Config(GetParam());
  auto t = Make(c);
  const int64_t L = static_cast<int64_t>(kIds.size());
  std::vector<float> out(1024);
  std::vector<int32_t> ids(1024);
  double ld[2];
  const int32_t bad_layer[] = {3, 0, 1}, bad_head[] = {0, 4, 1}, bad_mode[] = {0, 0, 3};
  EXPECT_FALSE(t->SetAblations(1, bad_layer).ok());
  EXPECT_FALSE(t->SetAblations(1, bad_head).ok());
  EXPECT_FALSE(t->SetAblations(1, bad_mode).ok());
  EXPECT_FALSE(t->SetAblations(-1, nullptr).ok());
  EXPECT_FALSE(t->LogitLens(L, kIds.data(), 0, ids.data(), out.data(), nullptr).ok());
  EXPECT_FALSE(t->LogitLens(0, kIds.data(), 1, ids.data(), out.data(), nullptr).ok());
  EXPECT_FALSE(t->Attribute(L, kIds.data(), L, 1, 2, out.data()).ok());
  EXPECT_FALSE(t->Attribute(L, kIds.data(), 0, 23, 2, out.data()).ok());
  EXPECT_FALSE(t->Attribute(L, kIds.data(), 0, 1, -2, out.data()).ok());
  EXPECT_TRUE(t->Attribute(L, kIds.data(), 0, 1, -1, out.data()).ok());  // no baseline
  EXPECT_FALSE(t->Patch(L, kIds.data(), kIds.data(), 1, 2, 2, out.data(), ld).ok());
  std::vector<int32_t> outside = kIds;
  outside[1] = 40;
  EXPECT_FALSE(t->Patch(L, kIds.data(), outside.data(), 1, 2, 0, out.data(), ld).ok());
  TransformerConfig post = c;
  post.prenorm = false;
  post.norm = attnlab::NormKind::kLayerNorm;
  auto bert = Make(post);
  const Status s = bert->LogitLens(L, kIds.data(), 1, ids.data(), out.data(), nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("post-norm"), std::string::npos) << s.message;
  EXPECT_FALSE(bert->Attribute(L, kIds.data(), 0, 1, 2, out.data()).ok());
  EXPECT_FALSE(bert->Patch(L, kIds.data(), kIds.data(), 1, 2, 0, out.data(), ld).ok());
  const int32_t zero[] = {0, 0, 1};
  EXPECT_TRUE(bert->SetAblations(1, zero).ok());  // ablation works on every model
}

INSTANTIATE_TEST_SUITE_P(Families, Interp, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "llama" : "gpt2"; });

}  // namespace

// The shared block graph (src/train/transformer.cpp) in the architecture
// settings that web/lib/model/ maps GPT-2, Llama, BERT, the decoders of
// issue 32 and ModernBERT onto:
//   * the whole-model gradient against central differences of the loss
//     (pre-norm, final norm, RMSNorm, SwiGLU, gelu_new, tied head, GQA,
//     RoPE with another base, BERT's embedding norm, token types, MLM head);
//   * the key/value cache: prefill then one token at a time gives the
//     logits and attention rows of one full forward, also after a prefill
//     that runs the last block on its last row alone.
// The float64 checks of the same models against transformers' semantics are
// in tests/js/models.test.js (tests/reference/hf_models.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "train/train.h"

namespace {

using attnlab::Activation;
using attnlab::NormKind;
using attnlab::Positional;
using attnlab::Status;
using attnlab::TransformerConfig;

struct Arch {
  const char* name;
  TransformerConfig config;
};

TransformerConfig Base() {
  TransformerConfig c;
  c.vocab_size = 7;
  c.max_length = 9;
  c.embed_dim = 8;
  c.num_heads = 4;
  c.num_layers = 2;
  c.ffn_dim = 6;
  c.causal = true;
  c.seed = 11;
  return c;
}

std::vector<Arch> Archs() {
  std::vector<Arch> out;
  {
    TransformerConfig c = Base();  // GPT-2
    c.positional = Positional::kLearned;
    c.prenorm = true;
    c.activation = Activation::kGeluTanh;
    c.tie_embeddings = true;
    c.head_bias = false;
    c.init_std = 0.3f;
    out.push_back({"Gpt2", c});
  }
  {
    TransformerConfig c = Base();  // Llama
    c.positional = Positional::kRope;
    c.rope_theta = 500000.0;
    c.prenorm = true;
    c.norm = NormKind::kRmsNorm;
    c.activation = Activation::kSwiGlu;
    c.qkv_bias = false;
    c.out_bias = false;
    c.ffn_bias = false;
    c.head_bias = false;
    c.num_kv_heads = 2;
    c.eps = 1e-6f;
    out.push_back({"Llama", c});
  }
  {
    TransformerConfig c = Base();  // Qwen2: Llama's block with Q, K, V biases and no output bias
    c.positional = Positional::kRope;
    c.prenorm = true;
    c.norm = NormKind::kRmsNorm;
    c.activation = Activation::kSwiGlu;
    c.out_bias = false;
    c.ffn_bias = false;
    c.head_bias = false;
    c.num_kv_heads = 2;
    out.push_back({"Qwen2", c});
  }
  {
    TransformerConfig c = Base();  // BERT
    c.causal = false;
    c.positional = Positional::kLearned;
    c.type_vocab = 2;
    c.embed_norm = true;
    c.mlm_head = true;
    c.tie_embeddings = true;
    c.eps = 1e-12f;
    out.push_back({"Bert", c});
  }
  // The block graph's config fields (docs/training.md), one setting each,
  // then Gemma 2's block with all of its at once.
  auto llama = [] {
    TransformerConfig c = Base();
    c.positional = Positional::kRope;
    c.prenorm = true;
    c.norm = NormKind::kRmsNorm;
    c.activation = Activation::kSwiGlu;
    c.qkv_bias = false;
    c.out_bias = false;
    c.ffn_bias = false;
    c.head_bias = false;
    return c;
  };
  {
    TransformerConfig c = llama();  // head_dim: H·D (3·4 = 12) is not E (8), which H does not divide
    c.num_heads = 3;
    c.head_dim = 4;
    c.num_kv_heads = 1;
    c.qkv_bias = true;
    out.push_back({"HeadDim", c});
  }
  {
    TransformerConfig c = llama();  // Qwen3 / OLMo-2 style per-head q, k norms
    c.qk_norm = true;
    c.head_dim = 4;
    c.num_kv_heads = 2;
    out.push_back({"QkNorm", c});
  }
  {
    TransformerConfig c = Base();  // GPT-Neo's unscaled scores
    c.positional = Positional::kLearned;
    c.prenorm = true;
    c.attn_scale = 1.0f;
    out.push_back({"AttnScale", c});
  }
  {
    TransformerConfig c = llama();  // Mistral: every layer local
    c.sliding_window = 3;
    out.push_back({"SlidingWindow", c});
  }
  {
    TransformerConfig c = llama();  // Gemma 3: local then global layers, their own RoPE bases
    c.num_layers = 3;
    c.sliding_window = 2;
    c.layer_kinds = "lgl";
    c.rope_theta = 1000000.0;
    c.rope_local_theta = 10000.0;
    out.push_back({"LayerKinds", c});
  }
  {
    TransformerConfig c = llama();  // GPT-NeoX rotary_pct / Phi-3 partial rotary: 2 of D = 4 dims
    c.num_heads = 2;
    c.rotary_dim = 2;
    out.push_back({"RotaryDim", c});
  }
  {
    TransformerConfig c = Base();  // Gemma's normalizer, with learned positions added after it
    c.positional = Positional::kLearned;
    c.prenorm = true;
    c.embed_scale = 2.828427f;
    out.push_back({"EmbedScale", c});
  }
  {
    TransformerConfig c = llama();
    c.activation = Activation::kGeGlu;
    c.ffn_bias = true;
    out.push_back({"GeGlu", c});
  }
  {
    TransformerConfig c = llama();
    c.activation = Activation::kGeGluTanh;
    out.push_back({"GeGluTanh", c});
  }
  {
    TransformerConfig c = Base();  // T5's original MLP: W2·ReLU(W1·x), post-norm here
    c.activation = Activation::kRelu;
    out.push_back({"Relu", c});
  }
  {
    TransformerConfig c = llama();  // Marian's "swish": W2·SiLU(W1·x), not gated
    c.activation = Activation::kSilu;
    c.ffn_bias = true;
    out.push_back({"Silu", c});
  }
  {
    TransformerConfig c = Base();  // GPT-NeoX: x + Attn(LN1(x)) + MLP(LN2(x))
    c.positional = Positional::kRope;
    c.prenorm = true;
    c.parallel_residual = true;
    out.push_back({"ParallelResidual", c});
  }
  {
    TransformerConfig c = Base();  // the four norms, as LayerNorms (weights and biases)
    c.positional = Positional::kLearned;
    c.prenorm = true;
    c.sandwich_norm = true;
    out.push_back({"SandwichNorm", c});
  }
  {
    TransformerConfig c = llama();  // Gemma 2's attention and final logit soft-capping
    c.attn_softcap = 0.7f;
    c.final_softcap = 1.5f;
    out.push_back({"Softcaps", c});
  }
  {
    TransformerConfig c = llama();  // Gemma 2's block
    c.activation = Activation::kGeGluTanh;
    c.sandwich_norm = true;
    c.head_dim = 4;
    c.num_kv_heads = 2;
    c.attn_scale = 0.4f;
    c.attn_softcap = 1.0f;
    c.final_softcap = 2.0f;
    c.sliding_window = 3;
    c.layer_kinds = "lg";
    c.embed_scale = 2.828427f;
    c.tie_embeddings = true;
    out.push_back({"Gemma2", c});
  }
  {
    // ModernBERT's encoder: pre-norm with block 0's norm1 the identity,
    // LayerNorms without bias, GeGLU, a global layer then local layers with
    // a bidirectional window (|i − j| < 2) and their own RoPE base, the MLM
    // head without its dense bias, tied decoder with a bias.
    TransformerConfig c = Base();
    c.causal = false;
    c.num_layers = 3;
    c.positional = Positional::kRope;
    c.rope_theta = 160000.0;
    c.rope_local_theta = 10000.0;
    c.sliding_window = 2;
    c.layer_kinds = "gll";
    c.prenorm = true;
    c.first_norm1 = false;
    c.norm_bias = false;
    c.embed_norm = true;
    c.activation = Activation::kGeGlu;
    c.qkv_bias = false;
    c.out_bias = false;
    c.ffn_bias = false;
    c.mlm_head = true;
    c.mlm_bias = false;
    c.tie_embeddings = true;
    out.push_back({"ModernBert", c});
  }
  {
    // ModernBERT with attention_bias, mlp_bias and norm_bias: the gate's
    // bias (Wi's first half), the tanh GeGLU, every LayerNorm with its bias.
    TransformerConfig c = Base();
    c.causal = false;
    c.positional = Positional::kRope;
    c.sliding_window = 3;
    c.layer_kinds = "gl";
    c.prenorm = true;
    c.first_norm1 = false;
    c.embed_norm = true;
    c.activation = Activation::kGeGluTanh;
    c.gate_bias = true;
    c.mlm_head = true;
    c.tie_embeddings = true;
    out.push_back({"GateBias", c});
  }
  {
    // The same fields on a causal decoder, so that the key/value cache and
    // the last-row prefill run them too (a window of 3 on layer 0).
    TransformerConfig c = Base();
    c.positional = Positional::kRope;
    c.sliding_window = 3;
    c.layer_kinds = "lg";
    c.prenorm = true;
    c.first_norm1 = false;
    c.norm_bias = false;
    c.activation = Activation::kSwiGlu;
    c.gate_bias = true;
    out.push_back({"CausalModernBertFields", c});
  }
  return out;
}

void PrintTo(const Arch& a, std::ostream* os) { *os << a.name; }

class ModelTest : public ::testing::TestWithParam<Arch> {};

std::vector<float> Normal(int64_t n, uint32_t seed, float scale) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(g);
  return v;
}

TEST_P(ModelTest, GradientMatchesCentralDifferences) {
  const TransformerConfig c = GetParam().config;
  Status s;
  auto t = attnlab::Transformer::Create(c, &s);
  ASSERT_TRUE(s.ok()) << s.message;
  // Weights big enough that every path (norm scales, gates) matters.
  const int64_t n = t->ParamCount();
  std::vector<float> p0 = Normal(n, 5, 0.4f);
  for (const auto& info : t->params()) {
    if (info.name.find("norm") != std::string::npos) {
      for (int64_t i = 0; i < info.shape[0]; ++i) p0[info.offset + i] += 1.0f;
    }
  }
  ASSERT_TRUE(t->SetParams(p0.data()).ok());
  const int64_t B = 2, L = 6;
  std::vector<int32_t> tok(B * L), tgt(B * L);
  std::vector<float> m(B * L, 1.0f);
  for (int64_t i = 0; i < B * L; ++i) {
    tok[i] = static_cast<int32_t>((i * 5 + 3) % c.vocab_size);
    tgt[i] = static_cast<int32_t>((i * 3 + 1) % c.vocab_size);
  }
  m[2] = 0.0f;
  attnlab::AdamWConfig o;
  o.lr = 0.0f;
  o.weight_decay = 0.0f;
  ASSERT_TRUE(t->ConfigureOptimizer(o).ok());
  attnlab::StepResult r;
  ASSERT_TRUE(t->Step(B, L, tok.data(), tgt.data(), m.data(), &r).ok());
  std::vector<float> g(t->Gradients(), t->Gradients() + n);
  // Every parameter tensor gets a gradient (a missed path shows as zeros).
  for (const auto& info : t->params()) {
    int64_t count = 1;
    for (int64_t d : info.shape) count *= d;
    double sum = 0.0;
    for (int64_t i = 0; i < count; ++i) sum += std::fabs(g[info.offset + i]);
    if (info.name == "type.weight") continue;  // only row 0 is used
    EXPECT_GT(sum, 0.0) << info.name;
  }
  std::mt19937 rng(21);
  std::normal_distribution<double> nd(0.0, 1.0);
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<double> u(static_cast<size_t>(n));
    for (auto& x : u) x = nd(rng);
    double gu = 0.0;
    for (int64_t i = 0; i < n; ++i) gu += static_cast<double>(g[i]) * u[i];
    const double eps = 1e-3;
    auto loss_at = [&](double sign) {
      std::vector<float> p(p0);
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(p0[i] + sign * eps * u[i]);
      EXPECT_TRUE(t->SetParams(p.data()).ok());
      attnlab::StepResult e;
      EXPECT_TRUE(t->Evaluate(B, L, tok.data(), tgt.data(), m.data(), &e).ok());
      return e.loss;
    };
    const double fd = (loss_at(1.0) - loss_at(-1.0)) / (2.0 * eps);
    EXPECT_NEAR(gu, fd, 2e-2 * std::max(1.0, std::fabs(fd))) << "direction " << trial;
  }
}

// A decoding step's attention rows at [N, H, pos + 1] against row `pos` of
// a full forward's [N, H, L, L].
void ExpectAttentionRow(const std::vector<float>& at, const std::vector<float>& att, int64_t N,
                        int64_t H, int64_t L, int64_t pos) {
  for (int64_t l = 0; l < N; ++l) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t k = 0; k <= pos; ++k) {
        EXPECT_NEAR(at[(l * H + h) * (pos + 1) + k], att[((l * H + h) * L + pos) * L + k], 1e-6f)
            << "layer " << l << " head " << h << " position " << pos << " key " << k;
      }
    }
  }
}

TEST_P(ModelTest, CachedDecodingEqualsOneForward) {
  TransformerConfig c = GetParam().config;
  if (!c.causal) GTEST_SKIP() << "a bidirectional encoder has no incremental decoding";
  Status s;
  auto t = attnlab::Transformer::Create(c, &s);
  ASSERT_TRUE(s.ok()) << s.message;
  std::vector<float> p0 = Normal(t->ParamCount(), 9, 0.4f);
  ASSERT_TRUE(t->SetParams(p0.data()).ok());
  const int64_t L = 7, V = c.vocab_size, H = c.num_heads, N = c.num_layers;
  std::vector<int32_t> tok(L);
  for (int64_t i = 0; i < L; ++i) tok[i] = static_cast<int32_t>((i * 4 + 2) % V);
  std::vector<float> logits(L * V), att(N * H * L * L);
  ASSERT_TRUE(t->Forward(1, L, tok.data(), logits.data(), att.data()).ok());
  // Prefill 3, then one token at a time; then rewind to 2 and redo.
  for (int64_t rewind : {0, 2}) {
    int64_t start = rewind == 0 ? 0 : rewind;
    if (rewind == 0) {
      std::vector<float> lg(3 * V), at(N * H * 3 * 3);
      ASSERT_TRUE(t->Extend(0, 3, tok.data(), false, lg.data(), at.data(), nullptr).ok());
      for (int64_t i = 0; i < 3 * V; ++i) EXPECT_NEAR(lg[i], logits[i], 1e-5f) << i;
      start = 3;
    }
    for (int64_t pos = start; pos < L; ++pos) {
      std::vector<float> lg(V), at(N * H * (pos + 1));
      ASSERT_TRUE(t->Extend(pos, 1, tok.data() + pos, true, lg.data(), at.data(), nullptr).ok());
      EXPECT_EQ(t->Cached(), pos + 1);
      for (int64_t j = 0; j < V; ++j) EXPECT_NEAR(lg[j], logits[pos * V + j], 1e-5f) << pos << "," << j;
      ExpectAttentionRow(at, att, N, H, L, pos);
    }
  }
  int32_t bad = static_cast<int32_t>(V);
  EXPECT_FALSE(t->Extend(0, 1, &bad, true, nullptr, nullptr, nullptr).ok());
  EXPECT_FALSE(t->Extend(t->Cached() + 1, 1, tok.data(), true, nullptr, nullptr, nullptr).ok());
  EXPECT_FALSE(t->Extend(0, L + 3, std::vector<int32_t>(L + 3, 0).data(), true, nullptr, nullptr, nullptr).ok());
}

// A prefill that wants the last row's logits only (no attention, no hidden
// states) runs the last block on that row alone after caching its keys and
// values: its logits, a second such prefill on top of it (keep > 0: the
// RoPE angles and the causal frontier of a row that is not the first), and
// the decoding steps after it (which read the last block's cached K and V of
// every row) all give the full forward's. Also on a post-norm decoder.
TEST_P(ModelTest, LastRowPrefillEqualsOneForward) {
  TransformerConfig c = GetParam().config;
  if (!c.causal) {
    c.causal = true;  // BERT's post-norm block as a decoder
    c.mlm_head = false;
  }
  Status s;
  auto t = attnlab::Transformer::Create(c, &s);
  ASSERT_TRUE(s.ok()) << s.message;
  std::vector<float> p0 = Normal(t->ParamCount(), 13, 0.4f);
  ASSERT_TRUE(t->SetParams(p0.data()).ok());
  const int64_t L = 8, V = c.vocab_size, H = c.num_heads, N = c.num_layers;
  std::vector<int32_t> tok(L);
  for (int64_t i = 0; i < L; ++i) tok[i] = static_cast<int32_t>((i * 5 + 1) % V);
  std::vector<float> logits(L * V), att(N * H * L * L), lg(V);
  ASSERT_TRUE(t->Forward(1, L, tok.data(), logits.data(), att.data()).ok());
  auto expect_row = [&](int64_t pos) {
    for (int64_t j = 0; j < V; ++j) EXPECT_NEAR(lg[j], logits[pos * V + j], 1e-5f) << pos << "," << j;
  };
  ASSERT_TRUE(t->Extend(0, 4, tok.data(), true, lg.data(), nullptr, nullptr).ok());
  expect_row(3);
  ASSERT_TRUE(t->Extend(4, 3, tok.data() + 4, true, lg.data(), nullptr, nullptr).ok());
  expect_row(6);
  EXPECT_EQ(t->Cached(), 7);
  // A step after the first prefill again: every row's K and V of every block.
  ASSERT_TRUE(t->Extend(0, 4, tok.data(), true, lg.data(), nullptr, nullptr).ok());
  for (int64_t pos = 4; pos < L; ++pos) {
    std::vector<float> at(N * H * (pos + 1));
    ASSERT_TRUE(t->Extend(pos, 1, tok.data() + pos, true, lg.data(), at.data(), nullptr).ok());
    expect_row(pos);
    ExpectAttentionRow(at, att, N, H, L, pos);
  }
}

TEST_P(ModelTest, PackedWeightsGiveTheSameModel) {
  // A loaded model holds its projections packed once (packed_weights): the
  // same logits, cache and weights as the plain model it was written from,
  // row by row or transposed (Conv1D files) through WriteParam.
  TransformerConfig c = GetParam().config;
  Status s;
  auto plain = attnlab::Transformer::Create(c, &s);
  ASSERT_TRUE(s.ok()) << s.message;
  std::vector<float> p0 = Normal(plain->ParamCount(), 13, 0.4f);
  ASSERT_TRUE(plain->SetParams(p0.data()).ok());
  c.packed_weights = true;
  c.init_weights = false;
  auto packed = attnlab::Transformer::Create(c, &s);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_EQ(packed->ParamCount(), plain->ParamCount());
  const auto& infos = packed->params();
  for (size_t i = 0; i < infos.size(); ++i) {
    const auto& info = infos[i];
    const int64_t r = info.shape.size() == 2 ? info.shape[0] : 1;
    const int64_t cols = info.shape.size() == 2 ? info.shape[1] : info.shape[0];
    const float* w = p0.data() + info.offset;
    if (i % 2 == 0) {
      // row by row, in two chunks
      ASSERT_TRUE(packed->WriteParam(static_cast<int64_t>(i), 0, r / 2, w, cols, false).ok());
      ASSERT_TRUE(packed->WriteParam(static_cast<int64_t>(i), r / 2, r - r / 2, w + (r / 2) * cols, cols, false).ok());
    } else {
      std::vector<float> t(static_cast<size_t>(r * cols));
      for (int64_t a = 0; a < r; ++a) for (int64_t b = 0; b < cols; ++b) t[b * r + a] = w[a * cols + b];
      ASSERT_TRUE(packed->WriteParam(static_cast<int64_t>(i), 0, cols, t.data(), r, true).ok());
    }
  }
  ASSERT_TRUE(packed->CheckParams().ok());
  std::vector<float> back(static_cast<size_t>(packed->ParamCount()));
  packed->CopyParams(back.data());
  EXPECT_EQ(back, p0);
  const int64_t L = 6, V = c.vocab_size;
  std::vector<int32_t> tok(L);
  for (int64_t i = 0; i < L; ++i) tok[i] = static_cast<int32_t>((i * 3 + 1) % V);
  for (int64_t rows : {int64_t{1}, L}) {
    std::vector<float> a(rows * V), b(rows * V);
    ASSERT_TRUE(plain->Forward(1, rows, tok.data(), a.data(), nullptr).ok());
    ASSERT_TRUE(packed->Forward(1, rows, tok.data(), b.data(), nullptr).ok());
    for (int64_t i = 0; i < rows * V; ++i) EXPECT_NEAR(a[i], b[i], 1e-5f) << rows << ":" << i;
  }
  EXPECT_FALSE(packed->ConfigureOptimizer(attnlab::AdamWConfig()).ok());
  EXPECT_FALSE(packed->WriteParam(0, 0, c.vocab_size + 1, p0.data(), c.embed_dim, false).ok());
}

INSTANTIATE_TEST_SUITE_P(Architectures, ModelTest, ::testing::ValuesIn(Archs()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Model, QkvAndOutputBiasesAreSeparate) {
  // Qwen2 holds bq, bk, bv without bo; the parameter order stays wq bq wk bk wv bv wo bo.
  for (int mask = 0; mask < 4; ++mask) {
    TransformerConfig c = Base();
    c.num_layers = 1;
    c.qkv_bias = (mask & 1) != 0;
    c.out_bias = (mask & 2) != 0;
    Status s;
    auto t = attnlab::Transformer::Create(c, &s);
    ASSERT_TRUE(s.ok()) << s.message;
    std::string attn;
    for (const auto& info : t->params()) {
      const size_t at = info.name.find(".attn.");
      if (at != std::string::npos) attn += info.name.substr(at + 6) + " ";
    }
    std::string want = "wq ";
    want += c.qkv_bias ? "bq wk bk wv bv wo " : "wk wv wo ";
    if (c.out_bias) want += "bo ";
    EXPECT_EQ(attn, want) << mask;
  }
}

TEST(Model, NoHeadRunsHiddenStatesOnly) {
  TransformerConfig c = Base();
  c.causal = false;
  c.positional = Positional::kLearned;
  c.has_head = false;
  c.embed_norm = true;
  Status s;
  auto t = attnlab::Transformer::Create(c, &s);
  ASSERT_TRUE(s.ok()) << s.message;
  for (const auto& info : t->params()) EXPECT_EQ(info.name.find("head"), std::string::npos);
  std::vector<int32_t> tok = {1, 2, 3};
  std::vector<float> hidden(3 * c.embed_dim);
  ASSERT_TRUE(t->Forward(1, 3, tok.data(), nullptr, nullptr, hidden.data()).ok());
  // The embedding norm and the post-norm blocks leave each row normalised.
  double mean = 0.0;
  for (int64_t j = 0; j < c.embed_dim; ++j) mean += hidden[j];
  EXPECT_NEAR(mean / c.embed_dim, 0.0, 1e-5);
  EXPECT_FALSE(t->ConfigureOptimizer(attnlab::AdamWConfig()).ok());
  EXPECT_EQ(t->Gradients(), nullptr);
}

TEST(Model, RejectsBadArchitectures) {
  Status s;
  TransformerConfig c = Base();
  c.num_kv_heads = 3;
  EXPECT_EQ(attnlab::Transformer::Create(c, &s), nullptr);
  EXPECT_NE(s.message.find("numKvHeads (3) must divide numHeads (4)"), std::string::npos) << s.message;
  c = Base();
  c.norm = NormKind::kRmsNorm;
  EXPECT_EQ(attnlab::Transformer::Create(c, &s), nullptr);
  EXPECT_NE(s.message.find("rmsnorm"), std::string::npos) << s.message;
  c = Base();
  c.positional = Positional::kRope;
  c.rope_theta = 1.0;
  EXPECT_EQ(attnlab::Transformer::Create(c, &s), nullptr);
  EXPECT_NE(s.message.find("ropeTheta"), std::string::npos) << s.message;
  // The graph fields: each bad value is refused with the field's name.
  struct Bad {
    const char* want;
    void (*set)(TransformerConfig*);
  };
  const Bad bads[] = {
      {"headDim", [](TransformerConfig* t) { t->head_dim = -1; }},
      {"or headDim must be given", [](TransformerConfig* t) { t->num_heads = 3; }},
      {"rotaryDim needs positional 'rope'", [](TransformerConfig* t) { t->rotary_dim = 2; }},
      {"rotaryDim must be an even integer in [2, 2]", [](TransformerConfig* t) {
         t->positional = Positional::kRope;
         t->rotary_dim = 4;
       }},
      {"ropeLocalTheta needs positional 'rope'", [](TransformerConfig* t) { t->rope_local_theta = 10.0; }},
      {"attnScale", [](TransformerConfig* t) { t->attn_scale = -1.0f; }},
      {"attnSoftcap", [](TransformerConfig* t) { t->attn_softcap = std::nanf(""); }},
      {"finalSoftcap", [](TransformerConfig* t) { t->final_softcap = -2.0f; }},
      {"embedScale", [](TransformerConfig* t) { t->embed_scale = 0.0f; }},
      {"slidingWindow must be", [](TransformerConfig* t) { t->sliding_window = -1; }},
      {"firstNorm1 false (block 0 without norm1) needs prenorm", [](TransformerConfig* t) { t->first_norm1 = false; }},
      {"gateBias needs a gated activation", [](TransformerConfig* t) { t->gate_bias = true; }},
      {"layerKinds must hold only", [](TransformerConfig* t) {
         t->sliding_window = 2;
         t->layer_kinds = "lx";
       }},
      {"layerKinds must have numLayers (2) chars", [](TransformerConfig* t) {
         t->sliding_window = 2;
         t->layer_kinds = "lgl";
       }},
      {"needs slidingWindow > 0", [](TransformerConfig* t) { t->layer_kinds = "lg"; }},
      {"parallelResidual needs prenorm", [](TransformerConfig* t) { t->parallel_residual = true; }},
      {"sandwichNorm needs prenorm", [](TransformerConfig* t) { t->sandwich_norm = true; }},
      {"cannot both be set", [](TransformerConfig* t) {
         t->prenorm = true;
         t->sandwich_norm = t->parallel_residual = true;
       }},
      {"'relu' or 'silu'", [](TransformerConfig* t) { t->activation = static_cast<Activation>(7); }},
  };
  for (const Bad& b : bads) {
    c = Base();
    b.set(&c);
    EXPECT_EQ(attnlab::Transformer::Create(c, &s), nullptr) << b.want;
    EXPECT_NE(s.message.find(b.want), std::string::npos) << s.message;
  }
}

// The window and the layer kinds as the attention weights show them: on a
// local layer query i sees keys i − window < j <= i only, on a global one
// every j <= i; the projections have head_dim's shapes.
TEST(Model, SlidingWindowAndLayerKindsMaskTheWeights) {
  TransformerConfig c = Base();
  c.positional = Positional::kRope;
  c.prenorm = true;
  c.num_layers = 2;
  c.sliding_window = 3;
  c.layer_kinds = "lg";
  c.head_dim = 6;
  Status s;
  auto t = attnlab::Transformer::Create(c, &s);
  ASSERT_TRUE(s.ok()) << s.message;
  for (const auto& info : t->params()) {
    if (info.name == "blocks.0.attn.wq") {
      EXPECT_EQ(info.shape, (std::vector<int64_t>{24, 8}));
    }
    if (info.name == "blocks.0.attn.wk") {
      EXPECT_EQ(info.shape, (std::vector<int64_t>{24, 8}));
    }
    if (info.name == "blocks.0.attn.wo") {
      EXPECT_EQ(info.shape, (std::vector<int64_t>{8, 24}));
    }
  }
  const int64_t L = 8, H = c.num_heads;
  std::vector<int32_t> tok(L);
  for (int64_t i = 0; i < L; ++i) tok[i] = static_cast<int32_t>((i * 3 + 2) % c.vocab_size);
  std::vector<float> logits(L * c.vocab_size), att(2 * H * L * L);
  ASSERT_TRUE(t->Forward(1, L, tok.data(), logits.data(), att.data()).ok());
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < L; ++i) {
        for (int64_t j = 0; j < L; ++j) {
          const float w = att[((l * H + h) * L + i) * L + j];
          const bool seen = j <= i && (l == 1 || j > i - c.sliding_window);
          if (seen) {
            EXPECT_GT(w, 0.0f) << l << " " << h << " " << i << " " << j;
          } else {
            EXPECT_EQ(w, 0.0f) << l << " " << h << " " << i << " " << j;
          }
        }
      }
    }
  }
}

// The bidirectional window (causal false): on a local layer query i sees
// keys |i − j| < window, on a global one every key, also when the window is
// shorter than the text; firstNorm1 false leaves block 0 without norm1 and
// normBias false, mlmBias false leave the LayerNorms and the MLM dense
// without biases; gateBias adds ffn.bg.
TEST(Model, BidirectionalWindowAndModernBertFields) {
  TransformerConfig c = Base();
  c.causal = false;
  c.positional = Positional::kRope;
  c.prenorm = true;
  c.num_layers = 3;
  c.sliding_window = 3;
  c.layer_kinds = "lgl";
  c.first_norm1 = false;
  c.norm_bias = false;
  c.embed_norm = true;
  c.mlm_head = true;
  c.mlm_bias = false;
  c.tie_embeddings = true;
  c.activation = Activation::kGeGlu;
  c.gate_bias = true;
  Status s;
  auto t = attnlab::Transformer::Create(c, &s);
  ASSERT_TRUE(s.ok()) << s.message;
  std::string names;
  for (const auto& info : t->params()) names += info.name + " ";
  EXPECT_EQ(names.find("blocks.0.norm1"), std::string::npos) << names;
  EXPECT_NE(names.find("blocks.1.norm1.weight"), std::string::npos) << names;
  EXPECT_EQ(names.find(".bias "), names.find("head.bias ") + 4) << names;  // head.bias only
  EXPECT_NE(names.find("blocks.0.ffn.bg"), std::string::npos) << names;
  std::vector<float> p0 = Normal(t->ParamCount(), 3, 0.5f);
  ASSERT_TRUE(t->SetParams(p0.data()).ok());
  const int64_t L = 8, H = c.num_heads, W = c.sliding_window;
  std::vector<int32_t> tok(L);
  for (int64_t i = 0; i < L; ++i) tok[i] = static_cast<int32_t>((i * 3 + 2) % c.vocab_size);
  std::vector<float> logits(L * c.vocab_size), att(3 * H * L * L);
  ASSERT_TRUE(t->Forward(1, L, tok.data(), logits.data(), att.data()).ok());
  for (int64_t l = 0; l < 3; ++l) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < L; ++i) {
        for (int64_t j = 0; j < L; ++j) {
          const float w = att[((l * H + h) * L + i) * L + j];
          const bool seen = l == 1 || std::abs(i - j) < W;
          if (seen) {
            EXPECT_GT(w, 0.0f) << l << " " << h << " " << i << " " << j;
          } else {
            EXPECT_EQ(w, 0.0f) << l << " " << h << " " << i << " " << j;
          }
        }
      }
    }
  }
  // A local layer's row depends on no token outside its window: changing the
  // last token leaves layer 0's attention of query 0 as it was (window 3:
  // keys 0..2), while the global layer 1 sees the change.
  std::vector<int32_t> tok2(tok);
  tok2[L - 1] = static_cast<int32_t>((tok[L - 1] + 1) % c.vocab_size);
  std::vector<float> att2(3 * H * L * L);
  ASSERT_TRUE(t->Forward(1, L, tok2.data(), logits.data(), att2.data()).ok());
  bool global_changed = false;
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t j = 0; j < L; ++j) {
      EXPECT_EQ(att[(h * L + 0) * L + j], att2[(h * L + 0) * L + j]) << h << " " << j;
      global_changed = global_changed || att[((1 * H + h) * L + 0) * L + j] != att2[((1 * H + h) * L + 0) * L + j];
    }
  }
  EXPECT_TRUE(global_changed);
}

}  // namespace

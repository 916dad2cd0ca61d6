// The block graph's encoder-decoder fields (src/train/train.h): a decoder
// whose blocks read a memory through cross-attention (crossAttention,
// SetMemory), Marian's sinusoid layout (sinusoidHalves), T5's relative
// position bias (relativeBuckets), its rescaled tied head (headScale) and the
// ReLU / SiLU MLPs, each against a float64 reference written here from
// transformers' modeling_marian.py / modeling_t5.py (independent of the
// graph's code), then cached decoding (Extend, the memory's keys and values
// projected once by SetMemory) against the full forward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "train/train.h"

namespace {

using attnlab::Activation;
using attnlab::NormKind;
using attnlab::Positional;
using attnlab::Status;
using attnlab::Transformer;
using attnlab::TransformerConfig;
using Vec = std::vector<double>;

TransformerConfig MarianLike() {
  TransformerConfig c;
  c.vocab_size = 11;
  c.max_length = 9;
  c.embed_dim = 8;
  c.num_heads = 2;
  c.num_layers = 2;
  c.ffn_dim = 12;
  c.causal = true;
  c.positional = Positional::kSinusoidal;
  c.sinusoid_halves = true;
  c.embed_scale = std::sqrt(8.0f);
  c.activation = Activation::kSilu;
  c.tie_embeddings = true;
  c.head_bias = true;
  c.cross_attention = true;
  c.seed = 5;
  return c;
}

TransformerConfig T5Like(Activation act) {
  TransformerConfig c = MarianLike();
  c.positional = Positional::kNone;
  c.sinusoid_halves = false;
  c.embed_scale = 1.0f;
  c.prenorm = true;
  c.norm = NormKind::kRmsNorm;
  c.eps = 1e-6f;
  c.activation = act;
  c.qkv_bias = c.out_bias = c.ffn_bias = c.head_bias = false;
  c.attn_scale = 1.0f;
  c.relative_buckets = 8;
  c.relative_max_distance = 6;
  c.head_scale = 1.0f / std::sqrt(8.0f);
  return c;
}

// T5's _relative_position_bucket, in float64.
int64_t Bucket(int64_t rel, bool bidirectional, int64_t n, int64_t max_distance) {
  int64_t out = 0;
  if (bidirectional) {
    n /= 2;
    out += rel > 0 ? n : 0;
    rel = std::llabs(rel);
  } else {
    rel = -std::min<int64_t>(rel, 0);
  }
  const int64_t exact = n / 2;
  if (rel < exact) return out + rel;
  int64_t large = exact + static_cast<int64_t>(std::log(static_cast<double>(rel) / exact) /
                                               std::log(static_cast<double>(max_distance) / exact) * (n - exact));
  return out + std::min<int64_t>(large, n - 1);
}

// The float64 decoder: every parameter by name, the layer loop written out.
struct Ref {
  TransformerConfig c;
  std::map<std::string, Vec> p;

  Ref(const Transformer& t) : c(t.config()) {
    std::vector<float> flat(static_cast<size_t>(t.ParamCount()));
    t.CopyParams(flat.data());
    for (const auto& info : t.params()) {
      int64_t n = 1;
      for (int64_t d : info.shape) n *= d;
      p[info.name] = Vec(flat.begin() + info.offset, flat.begin() + info.offset + n);
    }
  }
  const double* W(const std::string& name) const {
    auto it = p.find(name);
    return it == p.end() ? nullptr : it->second.data();
  }
  // y [rows, out] = x·Wᵀ + b
  Vec Lin(const Vec& x, int64_t in, int64_t out, const std::string& w, const std::string& b) const {
    const int64_t rows = static_cast<int64_t>(x.size()) / in;
    const double* wp = W(w);
    const double* bp = W(b);
    Vec y(static_cast<size_t>(rows * out));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < out; ++o) {
        double s = bp ? bp[o] : 0.0;
        for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * wp[o * in + i];
        y[r * out + o] = s;
      }
    }
    return y;
  }
  Vec Norm(const Vec& x, const std::string& name) const {
    const int64_t e = c.embed_dim, rows = static_cast<int64_t>(x.size()) / e;
    const double* g = W(name + ".weight");
    const double* b = W(name + ".bias");
    Vec y(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      if (c.norm == NormKind::kLayerNorm) {
        for (int64_t j = 0; j < e; ++j) mean += x[r * e + j] / e;
      }
      for (int64_t j = 0; j < e; ++j) var += (x[r * e + j] - mean) * (x[r * e + j] - mean) / e;
      for (int64_t j = 0; j < e; ++j) {
        y[r * e + j] = (x[r * e + j] - mean) / std::sqrt(var + c.eps) * g[j] + (b ? b[j] : 0.0);
      }
    }
    return y;
  }
  // MHA over query rows xq [Lq, E] (positions pos0..) and key rows xk [Lk, E]:
  // out [Lq, E]; weights [H, Lq, Lk].
  Vec Mha(const std::string& pre, const Vec& xq, const Vec& xk, bool self, int64_t pos0, Vec* weights) const {
    const int64_t e = c.embed_dim, h = c.num_heads, d = e / h;
    const int64_t lq = static_cast<int64_t>(xq.size()) / e, lk = static_cast<int64_t>(xk.size()) / e;
    const Vec q = Lin(xq, e, e, pre + "wq", pre + "bq"), k = Lin(xk, e, e, pre + "wk", pre + "bk"),
              v = Lin(xk, e, e, pre + "wv", pre + "bv");
    const double scale = c.attn_scale > 0 ? c.attn_scale : 1.0 / std::sqrt(static_cast<double>(d));
    Vec ctx(static_cast<size_t>(lq * e));
    weights->assign(static_cast<size_t>(h * lq * lk), 0.0);
    for (int64_t hh = 0; hh < h; ++hh) {
      for (int64_t i = 0; i < lq; ++i) {
        const int64_t pi = pos0 + i;
        Vec s(static_cast<size_t>(lk));
        double mx = -1e300;
        for (int64_t j = 0; j < lk; ++j) {
          double dot = 0;
          for (int64_t t = 0; t < d; ++t) dot += q[i * e + hh * d + t] * k[j * e + hh * d + t];
          s[j] = dot * scale;
          if (self && c.relative_buckets > 0) {
            s[j] += W("rel_bias.weight")[Bucket(j - pi, !c.causal, c.relative_buckets, c.relative_max_distance) * h + hh];
          }
          if (self && c.causal && j > pi) s[j] = -1e300;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < lk; ++j) sum += s[j] = s[j] <= -1e299 ? 0.0 : std::exp(s[j] - mx);
        for (int64_t j = 0; j < lk; ++j) {
          const double a = s[j] / sum;
          (*weights)[(hh * lq + i) * lk + j] = a;
          for (int64_t t = 0; t < d; ++t) ctx[i * e + hh * d + t] += a * v[j * e + hh * d + t];
        }
      }
    }
    return Lin(ctx, e, e, pre + "wo", pre + "bo");
  }
  double Act(double x) const {
    switch (c.activation) {
      case Activation::kRelu: return x > 0 ? x : 0;
      case Activation::kSilu: return x / (1 + std::exp(-x));
      default: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));  // gelu_new
    }
  }
  Vec Mlp(const std::string& pre, const Vec& x) const {
    const int64_t e = c.embed_dim, f = c.ffn_dim;
    Vec g = Lin(x, e, f, pre + "ffn.w1", pre + "ffn.b1");
    if (c.activation == Activation::kGeGluTanh) {
      const Vec gate = Lin(x, e, f, pre + "ffn.wg", "");
      for (size_t i = 0; i < g.size(); ++i) g[i] *= Act(gate[i]);
    } else {
      for (double& v : g) v = Act(v);
    }
    return Lin(g, f, e, pre + "ffn.w2", pre + "ffn.b2");
  }
  static Vec Add(Vec a, const Vec& b) {
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
    return a;
  }
  // logits [L, V], self [N, H, L, L], cross [N, H, L, Le]
  void Forward(const std::vector<int32_t>& tok, const Vec& mem, Vec* logits, Vec* self, Vec* cross) const {
    const int64_t e = c.embed_dim, l = static_cast<int64_t>(tok.size());
    Vec x(static_cast<size_t>(l * e));
    const double* emb = W("embed.weight");
    for (int64_t i = 0; i < l; ++i) {
      for (int64_t j = 0; j < e; ++j) {
        double v = emb[tok[i] * e + j] * c.embed_scale;
        if (c.positional == Positional::kSinusoidal) {  // Marian: sin | cos halves
          const int64_t half = e / 2, pair = j < half ? j : j - half;
          const double angle = i / std::pow(10000.0, 2.0 * pair / e);
          v += j < half ? std::sin(angle) : std::cos(angle);
        }
        x[i * e + j] = v;
      }
    }
    self->clear();
    cross->clear();
    for (int64_t n = 0; n < c.num_layers; ++n) {
      const std::string b = "blocks." + std::to_string(n) + ".";
      Vec w1, w2;
      if (c.prenorm) {
        const Vec n1 = Norm(x, b + "norm1");
        Vec hh = Add(x, Mha(b + "attn.", n1, n1, true, 0, &w1));
        const Vec nx = Norm(hh, b + "norm_x");
        hh = Add(hh, Mha(b + "xattn.", nx, mem, false, 0, &w2));
        x = Add(hh, Mlp(b, Norm(hh, b + "norm2")));
      } else {
        Vec hh = Norm(Add(x, Mha(b + "attn.", x, x, true, 0, &w1)), b + "norm1");
        hh = Norm(Add(hh, Mha(b + "xattn.", hh, mem, false, 0, &w2)), b + "norm_x");
        x = Norm(Add(hh, Mlp(b, hh)), b + "norm2");
      }
      self->insert(self->end(), w1.begin(), w1.end());
      cross->insert(cross->end(), w2.begin(), w2.end());
    }
    if (c.prenorm) x = Norm(x, "final_norm");
    for (double& v : x) v *= c.head_scale;
    *logits = Lin(x, e, c.vocab_size, "embed.weight", "head.bias");
  }
};

// Random weights (norm scales near 1) written over the seeded init.
void Randomize(Transformer* t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.4f);
  std::vector<float> w(static_cast<size_t>(t->ParamCount()));
  for (const auto& info : t->params()) {
    int64_t n = 1;
    for (int64_t d : info.shape) n *= d;
    const bool norm = info.name.find("norm") != std::string::npos && info.name.find(".weight") != std::string::npos;
    for (int64_t i = 0; i < n; ++i) w[static_cast<size_t>(info.offset + i)] = (norm ? 1.0f : 0.0f) + nd(rng);
  }
  ASSERT_TRUE(t->SetParams(w.data()).ok());
}

void ExpectNear(const std::vector<float>& got, const Vec& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]) / (1e-3 + std::fabs(want[i])));
  EXPECT_LT(worst, tol) << what;
  std::printf("  %-16s max relative error %.3g\n", what, worst);
}

struct Case {
  const char* name;
  TransformerConfig config;
};

std::vector<Case> Cases() {
  return {{"MarianPostLn", MarianLike()},
          {"T5PreRmsRelu", T5Like(Activation::kRelu)},
          {"T5PreRmsGatedGelu", T5Like(Activation::kGeGluTanh)}};
}

constexpr int64_t kLe = 5;

Vec Memory(std::vector<float>* as_float, int64_t batch, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  as_float->resize(static_cast<size_t>(batch * kLe * 8));
  for (float& v : *as_float) v = nd(rng);
  return Vec(as_float->begin(), as_float->end());
}

TEST(EncDec, CrossAttentionMatchesTheFloat64Reference) {
  for (const Case& cs : Cases()) {
    SCOPED_TRACE(cs.name);
    Status s;
    auto t = Transformer::Create(cs.config, &s);
    ASSERT_TRUE(s.ok()) << s.message;
    Randomize(t.get(), 3);
    std::vector<float> memf;
    const Vec mem = Memory(&memf, 1, 9);
    ASSERT_TRUE(t->SetMemory(1, kLe, memf.data()).ok());
    const std::vector<int32_t> tok = {3, 0, 7, 10, 2, 5, 1};
    const int64_t l = static_cast<int64_t>(tok.size()), v = cs.config.vocab_size, h = cs.config.num_heads,
                  n = cs.config.num_layers;
    std::vector<float> logits(l * v), self(n * h * l * l), cross(n * h * l * kLe);
    ASSERT_TRUE(t->Forward(1, l, tok.data(), logits.data(), self.data(), nullptr, cross.data()).ok());
    Ref ref(*t);
    Vec rl, rs, rc;
    ref.Forward(tok, mem, &rl, &rs, &rc);
    ExpectNear(logits, rl, 1e-4, "logits");
    ExpectNear(self, rs, 1e-4, "self-attention");
    ExpectNear(cross, rc, 1e-4, "cross-attention");
  }
}

TEST(EncDec, CachedDecodingEqualsTheFullForward) {
  for (const Case& cs : Cases()) {
    SCOPED_TRACE(cs.name);
    TransformerConfig c = cs.config;
    c.packed_weights = true;  // as loadModel runs them
    c.init_weights = true;
    Status s;
    auto full = Transformer::Create(cs.config, &s);
    ASSERT_TRUE(s.ok()) << s.message;
    Randomize(full.get(), 4);
    std::vector<float> w(static_cast<size_t>(full->ParamCount()));
    full->CopyParams(w.data());
    auto packed = Transformer::Create(c, &s);
    ASSERT_TRUE(s.ok()) << s.message;
    for (size_t i = 0; i < packed->params().size(); ++i) {
      const auto& info = packed->params()[i];
      const int64_t rows = info.shape.size() == 1 ? 1 : info.shape[0];
      const int64_t cols = info.shape.size() == 1 ? info.shape[0] : info.shape[1];
      ASSERT_TRUE(packed->WriteParam(static_cast<int64_t>(i), 0, rows, w.data() + info.offset, cols, false).ok());
    }
    std::vector<float> memf;
    Memory(&memf, 1, 10);
    ASSERT_TRUE(full->SetMemory(1, kLe, memf.data()).ok());
    ASSERT_TRUE(packed->SetMemory(1, kLe, memf.data()).ok());
    const std::vector<int32_t> tok = {0, 4, 4, 9, 1, 6};
    const int64_t l = static_cast<int64_t>(tok.size()), v = c.vocab_size, h = c.num_heads, n = c.num_layers;
    std::vector<float> logits(l * v), self(n * h * l * l), cross(n * h * l * kLe);
    ASSERT_TRUE(full->Forward(1, l, tok.data(), logits.data(), self.data(), nullptr, cross.data()).ok());
    // A prefill of 2 (last row only), then one token at a time with weights.
    std::vector<float> lg(v);
    ASSERT_TRUE(packed->Extend(0, 2, tok.data(), true, lg.data(), nullptr, nullptr).ok());
    for (int64_t j = 0; j < v; ++j) EXPECT_NEAR(lg[j], logits[1 * v + j], 1e-4);
    for (int64_t pos = 2; pos < l; ++pos) {
      std::vector<float> at(n * h * (pos + 1)), xa(n * h * kLe);
      ASSERT_TRUE(packed->Extend(pos, 1, tok.data() + pos, true, lg.data(), at.data(), nullptr, xa.data()).ok());
      for (int64_t j = 0; j < v; ++j) EXPECT_NEAR(lg[j], logits[pos * v + j], 1e-4) << "pos " << pos;
      for (int64_t ly = 0; ly < n; ++ly) {
        for (int64_t hh = 0; hh < h; ++hh) {
          for (int64_t k = 0; k <= pos; ++k) {
            EXPECT_NEAR(at[(ly * h + hh) * (pos + 1) + k], self[((ly * h + hh) * l + pos) * l + k], 1e-5);
          }
          for (int64_t k = 0; k < kLe; ++k) {
            EXPECT_NEAR(xa[(ly * h + hh) * kLe + k], cross[((ly * h + hh) * l + pos) * kLe + k], 1e-5);
          }
        }
      }
    }
  }
}

TEST(EncDec, ABatchOfMemoriesEqualsEachAlone) {
  Status s;
  auto t = Transformer::Create(MarianLike(), &s);
  ASSERT_TRUE(s.ok());
  Randomize(t.get(), 6);
  std::vector<float> memf;
  Memory(&memf, 2, 11);
  const std::vector<int32_t> tok = {1, 2, 3, 4, 5, 6, 7, 8};  // 2 × 4
  const int64_t v = 11;
  std::vector<float> both(8 * v), one(4 * v);
  ASSERT_TRUE(t->SetMemory(2, kLe, memf.data()).ok());
  ASSERT_TRUE(t->Forward(2, 4, tok.data(), both.data(), nullptr).ok());
  for (int64_t b = 0; b < 2; ++b) {
    ASSERT_TRUE(t->SetMemory(1, kLe, memf.data() + b * kLe * 8).ok());
    ASSERT_TRUE(t->Forward(1, 4, tok.data() + b * 4, one.data(), nullptr).ok());
    for (int64_t i = 0; i < 4 * v; ++i) EXPECT_NEAR(one[i], both[b * 4 * v + i], 1e-5);
  }
}

TEST(EncDec, RefusesWhatItCannotRun) {
  Status s;
  auto t = Transformer::Create(MarianLike(), &s);
  ASSERT_TRUE(s.ok());
  std::vector<int32_t> tok = {1, 2};
  std::vector<float> lg(2 * 11), mem(kLe * 8, 0.5f);
  Status r = t->Forward(1, 2, tok.data(), lg.data(), nullptr);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("setMemory"), std::string::npos) << r.message;
  ASSERT_TRUE(t->SetMemory(1, kLe, mem.data()).ok());
  EXPECT_FALSE(t->Forward(2, 1, tok.data(), lg.data(), nullptr).ok());  // memory of 1 sequence
  attnlab::StepResult res;
  r = t->Step(1, 2, tok.data(), tok.data(), nullptr, &res);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("crossAttention"), std::string::npos) << r.message;
  mem[3] = NAN;
  EXPECT_FALSE(t->SetMemory(1, kLe, mem.data()).ok());
  // A weight write drops the projected memory.
  ASSERT_TRUE(t->SetMemory(1, kLe, std::vector<float>(kLe * 8, 0.1f).data()).ok());
  EXPECT_EQ(t->MemoryLength(), kLe);
  ASSERT_TRUE(t->WriteParam(0, 0, 1, std::vector<float>(8, 0.2f).data(), 8, false).ok());
  EXPECT_EQ(t->MemoryLength(), 0);

  TransformerConfig enc = MarianLike();
  enc.cross_attention = false;
  auto e = Transformer::Create(enc, &s);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(e->SetMemory(1, kLe, mem.data()).ok());
  std::vector<float> xa(2 * 2 * 2 * kLe);
  EXPECT_FALSE(e->Forward(1, 2, tok.data(), lg.data(), nullptr, nullptr, xa.data()).ok());

  TransformerConfig bad = MarianLike();
  bad.causal = false;
  EXPECT_EQ(Transformer::Create(bad, &s), nullptr);
  bad = T5Like(Activation::kRelu);
  bad.relative_max_distance = 2;  // not above the 2 exact buckets
  EXPECT_EQ(Transformer::Create(bad, &s), nullptr);
  EXPECT_NE(s.message.find("relativeMaxDistance"), std::string::npos) << s.message;
  bad = MarianLike();
  bad.positional = Positional::kLearned;  // sinusoidHalves without the sinusoid
  EXPECT_EQ(Transformer::Create(bad, &s), nullptr);
}

}  // namespace

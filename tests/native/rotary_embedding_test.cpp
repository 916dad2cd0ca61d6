// RotaryEmbedding / RotaryCache against the float64 reference (RefRotate),
// and MultiHeadAttention with numKvHeads (GQA/MQA) and rope, with and without
// a KV cache, against a float64 MHA written here from the documented rules.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention_lab.h"
#include "reference.h"

namespace attnlab_test {
namespace {

using attnlab::RotaryArgs;
using attnlab::Status;

struct RopeCase {
  int64_t b, h, l, d, r;
  bool seq_major, interleaved;
  int mode;  // 0: computed from base; 1: tables + positionIds; 2: per-token tables
};

void CheckRope(const RopeCase& c, uint32_t seed) {
  Rng rng(seed);
  const int64_t n = c.b * c.h * c.l * c.d, half = c.r / 2, max_pos = 37;
  const auto x = rng.Vector(n);
  std::vector<int32_t> pos(static_cast<size_t>(c.b * c.l));
  for (auto& p : pos) p = static_cast<int32_t>(rng.Int(0, max_pos - 1));
  std::vector<float> cos_t, sin_t;
  std::vector<double> cd(static_cast<size_t>(half)), sd(static_cast<size_t>(half));
  RotaryArgs a;
  a.batch = c.b;
  a.heads = c.h;
  a.seq_len = c.l;
  a.head_dim = c.d;
  a.seq_major = c.seq_major;
  a.rotary_dim = c.r;
  a.interleaved = c.interleaved;
  a.x = x.data();
  a.base = 500.0;
  if (c.mode == 1) {
    cos_t.resize(static_cast<size_t>(max_pos * half));
    sin_t.resize(cos_t.size());
    for (auto& v : cos_t) v = rng.Uniform();
    for (auto& v : sin_t) v = rng.Uniform();
    a.cos = cos_t.data();
    a.sin = sin_t.data();
    a.max_position = max_pos;
    a.position_ids = pos.data();
  } else if (c.mode == 2) {
    cos_t.resize(static_cast<size_t>(c.b * c.l * half));
    sin_t.resize(cos_t.size());
    for (auto& v : cos_t) v = rng.Uniform();
    for (auto& v : sin_t) v = rng.Uniform();
    a.cos = cos_t.data();
    a.sin = sin_t.data();
  } else if (seed % 2 == 0) {
    a.position_ids = pos.data();
  }
  std::vector<float> out(static_cast<size_t>(n), kSentinel);
  a.out = out.data();
  const Status s = attnlab::RotaryEmbedding(a);
  ASSERT_TRUE(s.ok()) << s.message;
  std::vector<double> want(static_cast<size_t>(n));
  std::vector<double> row(static_cast<size_t>(c.d));
  for (int64_t b = 0; b < c.b; ++b) {
    for (int64_t l = 0; l < c.l; ++l) {
      const int64_t tok = b * c.l + l;
      for (int64_t i = 0; i < half; ++i) {
        if (c.mode == 1) {
          cd[i] = cos_t[pos[tok] * half + i];
          sd[i] = sin_t[pos[tok] * half + i];
        } else if (c.mode == 2) {
          cd[i] = cos_t[tok * half + i];
          sd[i] = sin_t[tok * half + i];
        }
      }
      if (c.mode == 0) {
        RefRopeAngles(a.position_ids ? pos[tok] : l, c.r, 500.0, cd.data(), sd.data());
      }
      for (int64_t h = 0; h < c.h; ++h) {
        const int64_t at = c.seq_major ? ((b * c.l + l) * c.h + h) * c.d
                                       : ((b * c.h + h) * c.l + l) * c.d;
        for (int64_t k = 0; k < c.d; ++k) row[k] = x[at + k];
        const auto y = RefRotate(row.data(), c.d, c.r, c.interleaved, cd.data(), sd.data());
        for (int64_t k = 0; k < c.d; ++k) want[at + k] = y[k];
      }
    }
  }
  ExpectAllClose(out, want, 1e-6, 1e-5, "rope mode " + std::to_string(c.mode));
  // In place gives the same.
  std::vector<float> inplace = x;
  a.x = inplace.data();
  a.out = inplace.data();
  ASSERT_TRUE(attnlab::RotaryEmbedding(a).ok());
  EXPECT_EQ(inplace, out);
}

TEST(RotaryEmbedding, MatchesReference) {
  uint32_t seed = 1;
  for (int mode : {0, 1, 2}) {
    for (bool seq_major : {false, true}) {
      for (bool inter : {false, true}) {
        CheckRope({2, 3, 5, 10, 10, seq_major, inter, mode}, seed++);
        CheckRope({1, 2, 7, 9, 4, seq_major, inter, mode}, seed++);  // partial, odd D
      }
    }
  }
}

TEST(RotaryEmbedding, CacheMatchesDoubleAngles) {
  const int64_t P = 50, R = 12;
  std::vector<float> c(P * R / 2), s(P * R / 2);
  ASSERT_TRUE(attnlab::RotaryCache(P, R, 10000.0, c.data(), s.data()).ok());
  std::vector<double> cd(R / 2), sd(R / 2), wc, ws;
  for (int64_t p = 0; p < P; ++p) {
    RefRopeAngles(static_cast<double>(p), R, 10000.0, cd.data(), sd.data());
    wc.insert(wc.end(), cd.begin(), cd.end());
    ws.insert(ws.end(), sd.begin(), sd.end());
  }
  ExpectAllClose(c.data(), wc.data(), P * R / 2, 1e-7, 1e-6, "cos");
  ExpectAllClose(s.data(), ws.data(), P * R / 2, 1e-7, 1e-6, "sin");
}

// q·k after RoPE depends only on the offset between the positions.
TEST(RotaryEmbedding, DotProductDependsOnlyOnOffset) {
  const int64_t D = 8;
  Rng rng(3);
  const auto q = rng.Vector(D), k = rng.Vector(D);
  auto rot = [&](const std::vector<float>& x, int32_t p) {
    std::vector<float> y(D);
    RotaryArgs a;
    a.seq_len = 1;
    a.head_dim = D;
    a.x = x.data();
    a.out = y.data();
    a.position_ids = &p;
    EXPECT_TRUE(attnlab::RotaryEmbedding(a).ok());
    return y;
  };
  auto dot = [&](const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (int64_t i = 0; i < D; ++i) s += static_cast<double>(a[i]) * b[i];
    return s;
  };
  const double d0 = dot(rot(q, 3), rot(k, 1));
  EXPECT_NEAR(dot(rot(q, 12), rot(k, 10)), d0, 1e-5);
  EXPECT_NEAR(dot(rot(q, 100), rot(k, 98)), d0, 1e-5);
}

TEST(RotaryEmbedding, RejectsBadArguments) {
  std::vector<float> x(64), out(64), tab(16);
  RotaryArgs a;
  a.seq_len = 2;
  a.head_dim = 8;
  a.x = x.data();
  a.out = out.data();
  a.rotary_dim = 5;
  Status s = attnlab::RotaryEmbedding(a);
  EXPECT_NE(s.message.find("rotaryDim"), std::string::npos) << s.message;
  a.rotary_dim = 10;
  EXPECT_FALSE(attnlab::RotaryEmbedding(a).ok());
  a.rotary_dim = 4;
  int32_t pos[2] = {0, 4};
  a.position_ids = pos;
  a.cos = tab.data();
  a.sin = tab.data();
  a.max_position = 4;
  s = attnlab::RotaryEmbedding(a);
  EXPECT_NE(s.message.find("positionIds[0][1] = 4"), std::string::npos) << s.message;
  pos[1] = 3;
  EXPECT_TRUE(attnlab::RotaryEmbedding(a).ok());
  a.cos = nullptr;
  a.sin = nullptr;
  a.base = 1.0;
  s = attnlab::RotaryEmbedding(a);
  EXPECT_NE(s.message.find("base"), std::string::npos) << s.message;
}

// ---------------------------------------------------------------------------
// MHA with numKvHeads and rope.

struct MhaRef {
  int64_t E, H, Hkv;
  bool rope;
  int64_t R;
  bool interleaved;
};

// Float64 MHA: torch-layout weights; K/V project to Hkv·D; RoPE on Q and K
// at positions pos0 + l; causal bottom-right over Lk keys.
std::vector<double> RefMhaModern(const MhaRef& c, int64_t B, int64_t Lq, int64_t Lk,
                                 const float* query, const float* key,
                                 const std::vector<float>* w, bool causal) {
  const int64_t D = c.E / c.H, Ekv = c.Hkv * D;
  auto lin = [&](const float* x, int64_t rows, int64_t in, int64_t out, int id) {
    const auto xd = ToDouble(x, rows * in);
    return RefLinearTorch(rows, in, out, xd.data(), w[id].data(), w[id + 1].data());
  };
  auto Q = lin(query, B * Lq, c.E, c.E, 0);
  auto K = lin(key, B * Lk, c.E, Ekv, 2);
  auto V = lin(key, B * Lk, c.E, Ekv, 4);
  std::vector<double> cd(static_cast<size_t>(D)), sd(static_cast<size_t>(D));
  auto rope = [&](std::vector<double>& X, int64_t L, int64_t heads, int64_t pos0) {
    if (!c.rope) return;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t l = 0; l < L; ++l) {
        RefRopeAngles(static_cast<double>(pos0 + l), c.R, 10000.0, cd.data(), sd.data());
        for (int64_t h = 0; h < heads; ++h) {
          double* row = X.data() + (b * L + l) * heads * D + h * D;
          const auto y = RefRotate(row, D, c.R, c.interleaved, cd.data(), sd.data());
          std::copy(y.begin(), y.end(), row);
        }
      }
  };
  rope(Q, Lq, c.H, Lk - Lq);
  rope(K, Lk, c.Hkv, 0);
  // To [B, heads, L, D] floats for RefSdpaModern (which reads float inputs):
  // keep double precision by scaling into float only here (the tolerance of
  // the comparison covers it).
  auto split = [&](const std::vector<double>& X, int64_t L, int64_t heads) {
    std::vector<float> y(X.size());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t l = 0; l < L; ++l)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t d = 0; d < D; ++d)
            y[((b * heads + h) * L + l) * D + d] =
                static_cast<float>(X[(b * L + l) * heads * D + h * D + d]);
    return y;
  };
  const auto Qh = split(Q, Lq, c.H), Kh = split(K, Lk, c.Hkv), Vh = split(V, Lk, c.Hkv);
  RefModern m;
  m.kv_heads = c.Hkv;
  m.causal = causal;
  m.causal_bottom_right = true;
  std::vector<double> ctx_h, wts;
  RefSdpaModern(B, c.H, Lq, Lk, D, D, Qh.data(), Kh.data(), Vh.data(),
                1.0 / std::sqrt(static_cast<double>(D)), m, &ctx_h, &wts);
  std::vector<double> ctx(static_cast<size_t>(B * Lq * c.E));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t l = 0; l < Lq; ++l)
        for (int64_t d = 0; d < D; ++d)
          ctx[(b * Lq + l) * c.E + h * D + d] = ctx_h[((b * c.H + h) * Lq + l) * D + d];
  return RefLinearTorch(B * Lq, c.E, c.E, ctx.data(), w[6].data(), w[7].data());
}

std::unique_ptr<attnlab::MultiHeadAttention> MakeMha(const MhaRef& c, std::vector<float>* w,
                                                     uint32_t seed) {
  attnlab::MhaConfig cfg;
  cfg.embed_dim = c.E;
  cfg.num_heads = c.H;
  cfg.num_kv_heads = c.Hkv;
  cfg.rope = c.rope;
  cfg.rope_dim = c.R;
  cfg.rope_interleaved = c.interleaved;
  Status s;
  auto mha = attnlab::MultiHeadAttention::Create(cfg, &s);
  EXPECT_TRUE(s.ok()) << s.message;
  if (!mha) return nullptr;
  Rng rng(seed);
  for (int id = 0; id < 8; ++id) {
    const auto wid = static_cast<attnlab::WeightId>(id);
    w[id] = rng.Vector(mha->WeightSize(wid), -0.4f, 0.4f);
    EXPECT_TRUE(mha->SetWeight(wid, w[id].data(), attnlab::WeightLayout::kTorch).ok());
  }
  return mha;
}

TEST(MhaModern, GqaAndRopeMatchReference) {
  const MhaRef cases[] = {
      {12, 6, 2, false, 0, false}, {12, 6, 3, true, 2, false},
      {16, 4, 1, true, 4, true},   {10, 2, 2, true, 4, false},
  };
  uint32_t seed = 1;
  for (const MhaRef& c : cases) {
    for (bool scalar : {false, true}) {
      ScopedKernelSet set(scalar);
      std::vector<float> w[8];
      auto mha = MakeMha(c, w, seed);
      ASSERT_TRUE(mha);
      const int64_t D = c.E / c.H;
      EXPECT_EQ(mha->WeightShape(attnlab::WeightId::kWk, attnlab::WeightLayout::kTorch),
                (std::vector<int64_t>{c.Hkv * D, c.E}));
      Rng rng(seed + 100);
      const int64_t B = 2, L = 9;
      const auto x = rng.Vector(B * L * c.E);
      for (bool self : {true, false}) {  // fused QKV and separate projections
        const auto xk = self ? x : rng.Vector(B * L * c.E);
        std::vector<float> out(static_cast<size_t>(B * L * c.E));
        attnlab::MhaForwardArgs a;
        a.batch = B;
        a.lq = L;
        a.lk = L;
        a.query = x.data();
        a.key = xk.data();
        a.value = xk.data();
        a.mask.causal = true;
        a.output = out.data();
        const Status s = mha->Forward(a);
        ASSERT_TRUE(s.ok()) << s.message;
        // value == key in both calls: the reference projects `key` for V.
        const auto want = RefMhaModern(c, B, L, L, x.data(), xk.data(), w, true);
        ExpectAllClose(out, want, 2e-5, 2e-4,
                       KernelSetName(scalar) + (self ? " fused" : " separate") +
                           " H" + std::to_string(c.H) + "/" + std::to_string(c.Hkv));
      }
    }
    ++seed;
  }
}

// Decoding token by token through a KV cache (positions continue from the
// cache length) equals one causal forward; the cache holds Hkv heads.
TEST(MhaModern, KvCacheDecodeWithGqaAndRope) {
  const MhaRef c{16, 8, 2, true, 2, false};
  std::vector<float> w[8];
  auto mha = MakeMha(c, w, 9);
  ASSERT_TRUE(mha);
  const int64_t B = 2, L = 7, D = c.E / c.H;
  Status s;
  auto cache = mha->CreateKvCache(B, 16, &s);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(cache->HeldBytes(), 2 * B * 16 * c.Hkv * D * 4);
  Rng rng(4);
  const auto x = rng.Vector(B * L * c.E);
  const auto want = RefMhaModern(c, B, L, L, x.data(), x.data(), w, true);
  // Prompt of 3 tokens (fused path), then one token at a time.
  std::vector<float> got(static_cast<size_t>(B * L * c.E));
  int64_t t = 0;
  for (int64_t step : {3, 1, 1, 1, 1}) {
    std::vector<float> xin(static_cast<size_t>(B * step * c.E)), out(xin.size());
    for (int64_t b = 0; b < B; ++b)
      std::copy(x.begin() + (b * L + t) * c.E, x.begin() + (b * L + t + step) * c.E,
                xin.begin() + b * step * c.E);
    attnlab::MhaForwardArgs a;
    a.batch = B;
    a.lq = a.lk = step;
    const std::vector<float> kin = xin;  // odd steps: separate projections
    a.query = xin.data();
    a.key = a.value = (t % 2 == 1) ? kin.data() : xin.data();
    a.mask.causal = true;
    a.output = out.data();
    a.cache = cache.get();
    ASSERT_TRUE(mha->Forward(a).ok());
    for (int64_t b = 0; b < B; ++b)
      std::copy(out.begin() + b * step * c.E, out.begin() + (b + 1) * step * c.E,
                got.begin() + (b * L + t) * c.E);
    t += step;
  }
  EXPECT_EQ(cache->length(), L);
  ExpectAllClose(got, want, 2e-5, 2e-4, "decoded");
}

TEST(MhaModern, RejectsBadConfig) {
  attnlab::MhaConfig cfg;
  cfg.embed_dim = 12;
  cfg.num_heads = 6;
  cfg.num_kv_heads = 4;
  Status s;
  EXPECT_FALSE(attnlab::MultiHeadAttention::Create(cfg, &s));
  EXPECT_NE(s.message.find("numKvHeads"), std::string::npos) << s.message;
  cfg.num_kv_heads = 3;
  cfg.rope = true;
  cfg.rope_dim = 3;
  EXPECT_FALSE(attnlab::MultiHeadAttention::Create(cfg, &s));
  EXPECT_NE(s.message.find("rotaryDim"), std::string::npos) << s.message;
}

}  // namespace
}  // namespace attnlab_test

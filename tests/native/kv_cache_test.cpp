// KvCache: incremental decoding with MultiHeadAttention, against the
// double-precision reference (reference.h) of the whole sequence at once.
//
// A sequence fed in chunks (a prefill, then single tokens, then a chunk
// again) through a cache must give, for each chunk, the rows of a causal
// forward over the whole sequence, and weights equal to those rows' first
// Lk_total columns. Cross attention (kdim/vdim != E, no mask) over cached keys
// must equal attention over all keys seen so far. Both kernel sets; the fused
// (query == key == value) and unfused projection paths; a long cache (the
// tiled online-softmax path with the causal offset).
// Tolerances as in multi_head_attention_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "attention_lab.h"
#include "reference.h"

namespace attnlab_test {
namespace {

using attnlab::KvCache;
using attnlab::MhaConfig;
using attnlab::MhaForwardArgs;
using attnlab::MultiHeadAttention;
using attnlab::Status;
using attnlab::StatusCode;
using attnlab::WeightId;
using attnlab::WeightLayout;

constexpr double kOutAbs = 1e-5, kOutRel = 5e-5;
constexpr double kWAbs = 5e-6, kWRel = 5e-5;

std::unique_ptr<MultiHeadAttention> MakeMha(int64_t e, int64_t h, int64_t kdim,
                                            int64_t vdim, const MhaWeights& w) {
  MhaConfig cfg;
  cfg.embed_dim = e;
  cfg.num_heads = h;
  cfg.kdim = kdim;
  cfg.vdim = vdim;
  Status s;
  auto m = MultiHeadAttention::Create(cfg, &s);
  EXPECT_TRUE(s.ok()) << s.message;
  if (!m) return m;
  EXPECT_TRUE(m->SetWeight(WeightId::kWq, w.wq.data(), WeightLayout::kTorch).ok());
  EXPECT_TRUE(m->SetWeight(WeightId::kWk, w.wk.data(), WeightLayout::kTorch).ok());
  EXPECT_TRUE(m->SetWeight(WeightId::kWv, w.wv.data(), WeightLayout::kTorch).ok());
  EXPECT_TRUE(m->SetWeight(WeightId::kWo, w.wo.data(), WeightLayout::kTorch).ok());
  EXPECT_TRUE(m->SetWeight(WeightId::kBq, w.bq.data(), WeightLayout::kTorch).ok());
  EXPECT_TRUE(m->SetWeight(WeightId::kBk, w.bk.data(), WeightLayout::kTorch).ok());
  EXPECT_TRUE(m->SetWeight(WeightId::kBv, w.bv.data(), WeightLayout::kTorch).ok());
  EXPECT_TRUE(m->SetWeight(WeightId::kBo, w.bo.data(), WeightLayout::kTorch).ok());
  return m;
}

std::unique_ptr<KvCache> MakeCache(const MultiHeadAttention& m, int64_t b, int64_t max_len) {
  Status s;
  auto c = m.CreateKvCache(b, max_len, &s);
  EXPECT_TRUE(s.ok()) << s.message;
  return c;
}

// Rows [t0, t0 + n) of x [B, L, w] as a [B, n, w] tensor.
std::vector<float> Rows(const std::vector<float>& x, int64_t B, int64_t L, int64_t w,
                        int64_t t0, int64_t n) {
  std::vector<float> y(static_cast<size_t>(B * n * w));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < n; ++t)
      for (int64_t i = 0; i < w; ++i)
        y[static_cast<size_t>((b * n + t) * w + i)] = x[static_cast<size_t>((b * L + t0 + t) * w + i)];
  return y;
}

class KvCacheTest : public ::testing::TestWithParam<bool> {
 protected:
  KvCacheTest() : kernels_(GetParam()) {}
  ScopedKernelSet kernels_;
};

// Self-attention decoding: chunks through the cache == causal forward of the
// whole sequence (its rows, and its weights' first Lk_total columns).
TEST_P(KvCacheTest, ChunkedCausalDecodingMatchesWholeSequence) {
  struct Dims { int64_t B, E, H; std::vector<int64_t> chunks; };
  uint32_t seed = 500;
  for (const Dims& d : {Dims{2, 16, 4, {3, 1, 1, 4, 1, 1}}, Dims{1, 24, 3, {1, 1, 1, 9, 1}},
                        Dims{3, 8, 2, {5, 5, 1}}}) {
    for (bool same_pointer : {true, false}) {
      SCOPED_TRACE(testing::Message() << "B=" << d.B << " E=" << d.E << " H=" << d.H
                                      << " fused=" << same_pointer);
      Rng rng(seed++);
      int64_t L = 0;
      for (int64_t n : d.chunks) L += n;
      const MhaWeights w = RandomMhaWeights(rng, d.E, d.E, d.E, true);
      auto m = MakeMha(d.E, d.H, 0, 0, w);
      auto cache = MakeCache(*m, d.B, L + 2);
      ASSERT_TRUE(m && cache);
      const std::vector<float> x = rng.Vector(d.B * L * d.E);
      RefMask causal;
      causal.causal = true;
      std::vector<double> want, want_w, want_avg;
      RefMha(d.B, L, L, d.E, d.H, d.E, d.E, x.data(), x.data(), x.data(), w, causal, &want,
             &want_w, &want_avg);

      int64_t t0 = 0;
      for (int64_t n : d.chunks) {
        const int64_t total = t0 + n;
        const std::vector<float> xq = Rows(x, d.B, L, d.E, t0, n);
        const std::vector<float> xkv = xq;  // same values, another pointer
        std::vector<float> out(static_cast<size_t>(d.B * n * d.E), std::nanf(""));
        std::vector<float> weights(static_cast<size_t>(d.B * d.H * n * total), std::nanf(""));
        MhaForwardArgs a;
        a.batch = d.B;
        a.lq = n;
        a.lk = n;
        a.query = xq.data();
        a.key = same_pointer ? xq.data() : xkv.data();
        a.value = same_pointer ? xq.data() : xkv.data();
        a.mask.causal = true;
        a.output = out.data();
        a.weights = weights.data();
        a.cache = cache.get();
        const Status s = m->Forward(a);
        ASSERT_TRUE(s.ok()) << s.message;
        EXPECT_EQ(cache->length(), total);
        // Reference rows [t0, total) of the output; weights columns [0, total).
        std::vector<double> want_rows(out.size()), want_wrows(weights.size());
        for (int64_t b = 0; b < d.B; ++b) {
          for (int64_t t = 0; t < n; ++t) {
            for (int64_t i = 0; i < d.E; ++i) {
              want_rows[static_cast<size_t>((b * n + t) * d.E + i)] =
                  want[static_cast<size_t>((b * L + t0 + t) * d.E + i)];
            }
            for (int64_t h = 0; h < d.H; ++h) {
              for (int64_t j = 0; j < total; ++j) {
                want_wrows[static_cast<size_t>(((b * d.H + h) * n + t) * total + j)] =
                    want_w[static_cast<size_t>(((b * d.H + h) * L + t0 + t) * L + j)];
              }
            }
          }
        }
        SCOPED_TRACE(testing::Message() << "chunk at " << t0 << " of " << n);
        ExpectAllClose(out, want_rows, kOutAbs, kOutRel, "output");
        ExpectAllClose(weights, want_wrows, kWAbs, kWRel, "weights");
        t0 = total;
      }
      // Reset starts a new sequence in the same memory.
      cache->Reset();
      EXPECT_EQ(cache->length(), 0);
    }
  }
}

// Cross attention (kdim/vdim != E, no mask): each query chunk attends over all
// key/value rows appended so far.
TEST_P(KvCacheTest, CrossAttentionOverCachedKeys) {
  Rng rng(600);
  const int64_t B = 2, E = 12, H = 3, kdim = 7, vdim = 5;
  const MhaWeights w = RandomMhaWeights(rng, E, kdim, vdim, true);
  auto m = MakeMha(E, H, kdim, vdim, w);
  auto cache = MakeCache(*m, B, 20);
  ASSERT_TRUE(m && cache);
  const int64_t LK = 13;
  const std::vector<float> key = rng.Vector(B * LK * kdim), value = rng.Vector(B * LK * vdim);
  int64_t seen = 0;
  for (int64_t step : {4, 1, 8}) {
    const int64_t lq = 3;
    const std::vector<float> query = rng.Vector(B * lq * E);
    const std::vector<float> k_new = Rows(key, B, LK, kdim, seen, step);
    const std::vector<float> v_new = Rows(value, B, LK, vdim, seen, step);
    seen += step;
    std::vector<float> out(static_cast<size_t>(B * lq * E), std::nanf(""));
    MhaForwardArgs a;
    a.batch = B;
    a.lq = lq;
    a.lk = step;
    a.query = query.data();
    a.key = k_new.data();
    a.value = v_new.data();
    a.output = out.data();
    a.cache = cache.get();
    const Status s = m->Forward(a);
    ASSERT_TRUE(s.ok()) << s.message;
    const std::vector<float> k_all = Rows(key, B, LK, kdim, 0, seen);
    const std::vector<float> v_all = Rows(value, B, LK, vdim, 0, seen);
    std::vector<double> want, want_w, want_avg;
    RefMha(B, lq, seen, E, H, kdim, vdim, query.data(), k_all.data(), v_all.data(), w, RefMask{},
           &want, &want_w, &want_avg);
    SCOPED_TRACE(testing::Message() << "keys seen " << seen);
    ExpectAllClose(out, want, kOutAbs, kOutRel, "output");
  }
}

// A long cache without weights: a 560-token prefill (tiled online softmax),
// a 40-token chunk whose causal limit is offset by 560, then single steps.
TEST_P(KvCacheTest, LongCacheWithoutWeights) {
  Rng rng(700);
  const int64_t B = 1, E = 16, H = 2, L = 603;
  const MhaWeights w = RandomMhaWeights(rng, E, E, E, true, 0.3f);
  auto m = MakeMha(E, H, 0, 0, w);
  auto cache = MakeCache(*m, B, L);
  ASSERT_TRUE(m && cache);
  const std::vector<float> x = rng.Vector(B * L * E);
  RefMask causal;
  causal.causal = true;
  std::vector<double> want, want_w, want_avg;
  RefMha(B, L, L, E, H, E, E, x.data(), x.data(), x.data(), w, causal, &want, &want_w, &want_avg);
  int64_t t0 = 0;
  for (int64_t n : {560, 40, 1, 1, 1}) {
    const std::vector<float> xq = Rows(x, B, L, E, t0, n);
    std::vector<float> out(static_cast<size_t>(B * n * E), std::nanf(""));
    MhaForwardArgs a;
    a.batch = B;
    a.lq = n;
    a.lk = n;
    a.query = a.key = a.value = xq.data();
    a.mask.causal = true;
    a.output = out.data();
    a.cache = cache.get();
    const Status s = m->Forward(a);
    ASSERT_TRUE(s.ok()) << s.message;
    std::vector<double> want_rows(want.begin() + t0 * E, want.begin() + (t0 + n) * E);
    SCOPED_TRACE(testing::Message() << "chunk at " << t0 << " of " << n);
    ExpectAllClose(out, want_rows, kOutAbs, kOutRel, "output");
    t0 += n;
  }
  EXPECT_EQ(cache->length(), L);
}

TEST(KvCacheErrors, RefusedCallsLeaveTheCacheUnchanged) {
  Rng rng(800);
  const int64_t E = 8, H = 2;
  const MhaWeights w = RandomMhaWeights(rng, E, E, E, true);
  auto m = MakeMha(E, H, 0, 0, w);
  auto other = MakeMha(E, H, 0, 0, w);
  auto cache = MakeCache(*m, 2, 5);
  ASSERT_TRUE(m && other && cache);
  EXPECT_EQ(cache->batch(), 2);
  EXPECT_EQ(cache->max_length(), 5);
  EXPECT_EQ(cache->HeldBytes(), 2 * 2 * 5 * E * 4);
  const std::vector<float> x = rng.Vector(2 * 4 * E);
  std::vector<float> out(x.size());
  MhaForwardArgs a;
  a.batch = 2;
  a.lq = a.lk = 4;
  a.query = a.key = a.value = x.data();
  a.output = out.data();
  a.cache = cache.get();
  ASSERT_TRUE(m->Forward(a).ok());
  EXPECT_EQ(cache->length(), 4);

  // 4 more do not fit in 5.
  Status s = m->Forward(a);
  EXPECT_EQ(s.code, StatusCode::kInvalidArgument);
  EXPECT_NE(s.message.find("do not fit"), std::string::npos) << s.message;
  EXPECT_EQ(cache->length(), 4);

  // Another layer's cache.
  s = other->Forward(a);
  EXPECT_EQ(s.code, StatusCode::kInvalidArgument);
  EXPECT_NE(s.message.find("another"), std::string::npos) << s.message;

  // Batch mismatch.
  a.batch = 1;
  a.lq = a.lk = 1;
  s = m->Forward(a);
  EXPECT_EQ(s.code, StatusCode::kInvalidArgument);
  EXPECT_NE(s.message.find("batch"), std::string::npos) << s.message;
  EXPECT_EQ(cache->length(), 4);

  // Sizes.
  Status cs;
  EXPECT_EQ(m->CreateKvCache(0, 5, &cs), nullptr);
  EXPECT_EQ(cs.code, StatusCode::kInvalidArgument);
  EXPECT_EQ(m->CreateKvCache(1, 0, &cs), nullptr);
  EXPECT_EQ(cs.code, StatusCode::kInvalidArgument);
  EXPECT_EQ(m->CreateKvCache(1 << 20, 1 << 20, &cs), nullptr);
  EXPECT_NE(cs.code, StatusCode::kOk);

  // Truncate within [0, length] only.
  EXPECT_EQ(cache->Truncate(5).code, StatusCode::kInvalidArgument);
  EXPECT_EQ(cache->Truncate(-1).code, StatusCode::kInvalidArgument);
  EXPECT_TRUE(cache->Truncate(2).ok());
  EXPECT_EQ(cache->length(), 2);

  cache->Reset();
  EXPECT_EQ(cache->length(), 0);
}

// Truncate back to a prompt, then continue with other tokens: the result is
// that of the prompt followed by the new tokens.
TEST_P(KvCacheTest, TruncateToPromptThenContinue) {
  Rng rng(900);
  const int64_t B = 1, E = 16, H = 4, P = 5, N = 3;
  const MhaWeights w = RandomMhaWeights(rng, E, E, E, true);
  auto m = MakeMha(E, H, 0, 0, w);
  auto cache = MakeCache(*m, B, P + N);
  ASSERT_TRUE(m && cache);
  const std::vector<float> prompt = rng.Vector(P * E), first = rng.Vector(N * E),
                           second = rng.Vector(N * E);
  auto step = [&](const std::vector<float>& x, int64_t n, std::vector<float>* out) {
    out->assign(static_cast<size_t>(n * E), std::nanf(""));
    MhaForwardArgs a;
    a.lq = a.lk = n;
    a.query = a.key = a.value = x.data();
    a.mask.causal = true;
    a.output = out->data();
    a.cache = cache.get();
    const Status s = m->Forward(a);
    EXPECT_TRUE(s.ok()) << s.message;
  };
  std::vector<float> out;
  step(prompt, P, &out);
  step(first, N, &out);
  ASSERT_TRUE(cache->Truncate(P).ok());
  step(second, N, &out);
  std::vector<float> seq(prompt);
  seq.insert(seq.end(), second.begin(), second.end());
  RefMask causal;
  causal.causal = true;
  std::vector<double> want, want_w, want_avg;
  RefMha(B, P + N, P + N, E, H, E, E, seq.data(), seq.data(), seq.data(), w, causal, &want,
         &want_w, &want_avg);
  ExpectAllClose(out, std::vector<double>(want.begin() + P * E, want.end()), kOutAbs, kOutRel,
                 "output after truncate");
}

INSTANTIATE_TEST_SUITE_P(KernelSets, KvCacheTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return KernelSetName(info.param);
                         });

}  // namespace
}  // namespace attnlab_test

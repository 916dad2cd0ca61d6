// The thread pool (src/thread_pool.h) and the deterministic splits of the
// kernels: the GEMM by row blocks × panel pairs, the GEMVs by output ranges,
// the attention core by (batch, head, query block). Results with 2, 3 and 4 threads must be
// bit-identical (memcmp) to one thread on odd sizes, on both kernel sets; one
// multi-threaded case is also checked against the double reference (the
// single-threaded results are checked by the other suites).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "attention_lab.h"
#include "kernels/kernels.h"
#include "reference.h"
#include "thread_pool.h"

namespace attnlab_test {
namespace {

namespace k = attnlab::kernels;
using attnlab::MaskKind;
using attnlab::Status;

// Sets the pool size for a scope and restores one thread.
class ScopedThreads {
 public:
  explicit ScopedThreads(int n) { EXPECT_TRUE(attnlab::SetThreadCount(n).ok()); }
  ~ScopedThreads() { EXPECT_TRUE(attnlab::SetThreadCount(1).ok()); }
};

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp may not be given the null data() of an empty vector (UBSan).
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST(ThreadPool, RejectsCountsOutOfRange) {
  for (int n : {0, -1, attnlab::kMaxThreads + 1}) {
    const Status s = attnlab::SetThreadCount(n);
    EXPECT_FALSE(s.ok()) << n;
    EXPECT_NE(s.message.find("threads must be an integer in [1, 16]"), std::string::npos) << s.message;
  }
  EXPECT_EQ(attnlab::ThreadCount(), 1);
}

TEST(ThreadPool, RunsEveryTaskOnceOnDistinctWorkers) {
  for (int threads : {1, 2, 3, 4}) {
    ScopedThreads pool(threads);
    EXPECT_EQ(attnlab::ThreadCount(), threads);
    for (int64_t tasks : {1, 2, 7, 100}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(tasks));
      std::vector<std::atomic<int>> busy(static_cast<size_t>(threads));
      std::atomic<bool> clash{false}, bad_worker{false};
      auto fn = [&](int64_t t, int w) {
        if (w < 0 || w >= threads) {
          bad_worker = true;
          return;
        }
        if (busy[static_cast<size_t>(w)].fetch_add(1) != 0) clash = true;
        hits[static_cast<size_t>(t)].fetch_add(1);
        // Nested calls from a pool task run inline on the same worker. (A
        // batch of one task runs inline on the caller, outside the pool: its
        // nested calls may use the pool.)
        std::atomic<int> inner{0};
        const bool in_pool = tasks > 1 && threads > 1;
        auto nested = [&](int64_t, int w2) {
          if (in_pool && w2 != w) bad_worker = true;
          ++inner;
        };
        attnlab::internal::ParallelFor(3, nested);
        if (inner != 3) bad_worker = true;
        busy[static_cast<size_t>(w)].fetch_sub(1);
      };
      attnlab::internal::ParallelFor(tasks, fn);
      for (int64_t t = 0; t < tasks; ++t) EXPECT_EQ(hits[static_cast<size_t>(t)].load(), 1);
      EXPECT_FALSE(clash.load());
      EXPECT_FALSE(bad_worker.load());
    }
  }
}

TEST(ThreadPool, ResizesRepeatedly) {
  for (int round = 0; round < 20; ++round) {
    const int n = 1 + round % 4;
    ASSERT_TRUE(attnlab::SetThreadCount(n).ok());
    std::atomic<int64_t> sum{0};
    auto fn = [&](int64_t t, int) { sum += t; };
    attnlab::internal::ParallelFor(50, fn);
    EXPECT_EQ(sum.load(), 50 * 49 / 2);
  }
  ASSERT_TRUE(attnlab::SetThreadCount(1).ok());
}

// StartTasks returns while the workers take the tasks; JoinTasks finishes the
// batch on the calling thread; a later batch (or a resize) joins it first.
TEST(ThreadPool, StartedBatchFinishesOnJoin) {
  attnlab::JoinTasks();  // nothing started: a no-op
  for (int threads : {1, 2, 4}) {
    ASSERT_TRUE(attnlab::SetThreadCount(threads).ok());
    struct Ctx {
      std::atomic<int64_t> sum{0}, count{0};
    } ctx;
    auto fn = [](void* c, int64_t t, int) {
      auto* x = static_cast<Ctx*>(c);
      x->sum += t;
      x->count += 1;
    };
    attnlab::internal::StartTasks(300, fn, &ctx);
    attnlab::JoinTasks();
    EXPECT_EQ(ctx.count.load(), 300) << threads;
    EXPECT_EQ(ctx.sum.load(), 300 * 299 / 2) << threads;
    attnlab::JoinTasks();  // already joined: a no-op

    ctx.count = 0;
    attnlab::internal::StartTasks(300, fn, &ctx);
    std::atomic<int64_t> seen_before{-1};
    auto next = [&](int64_t t, int) {
      if (t == 0) seen_before = ctx.count.load();
    };
    attnlab::internal::ParallelFor(8, next);  // joins the started batch first
    EXPECT_EQ(seen_before.load(), 300) << threads;

    attnlab::internal::StartTasks(50, fn, &ctx);
    ASSERT_TRUE(attnlab::SetThreadCount(threads == 4 ? 2 : threads + 1).ok());  // joins too
    EXPECT_EQ(ctx.count.load(), 350) << threads;
  }
  ASSERT_TRUE(attnlab::SetThreadCount(1).ok());
}

class ThreadsBitIdentical : public ::testing::TestWithParam<bool> {
 protected:
  ThreadsBitIdentical() : kernels_(GetParam()) {}
  ScopedKernelSet kernels_;
};

// C for threads = 1..4, on odd shapes (M tails, N not a panel multiple).
TEST_P(ThreadsBitIdentical, Gemm) {
  struct Case { int64_t m, n, kk; bool bias; };
  // (259 × 1600: three row blocks and three depth blocks of the A packed
  // once for all the tasks.)
  for (const Case& c : {Case{131, 197, 67, true}, Case{2, 1001, 300, false},
                        Case{10, 1536, 512, true}, Case{67, 45, 601, true},
                        Case{259, 70, 1600, true}}) {
    SCOPED_TRACE(::testing::Message() << "M=" << c.m << " N=" << c.n << " K=" << c.kk);
    Rng rng(17);
    const std::vector<float> a = rng.Vector(c.m * c.kk), b = rng.Vector(c.kk * c.n),
                             bias = rng.Vector(c.n);
    AlignedFloats packed(static_cast<size_t>(k::PackedFloats(c.kk, c.n)));
    const k::PackedB pb = k::PackB(c.kk, c.n, b.data(), c.n, 1, packed.data());
    std::vector<float> one;
    for (int threads : {1, 2, 3, 4}) {
      ScopedThreads pool(threads);
      std::vector<float> out(static_cast<size_t>(c.m * c.n), -7.0f);
      k::Gemm(c.m, c.n, c.kk, a.data(), c.kk, pb, c.bias ? bias.data() : nullptr,
              out.data(), c.n);
      if (threads == 1) {
        one = out;
      } else {
        EXPECT_TRUE(SameBits(one, out)) << threads << " threads";
      }
    }
  }
}

// The same over 16-bit (BF16) panels: column chunks, each widened once, over
// the A packed once.
TEST_P(ThreadsBitIdentical, GemmHalfPanels) {
  const int64_t m = 150, n = 300, kk = 900;
  Rng rng(23);
  const std::vector<float> a = rng.Vector(m * kk), w = rng.Vector(kk * n), bias = rng.Vector(n);
  const int64_t nr = k::GemmNr(n), stride = kk * nr;
  std::vector<uint16_t> half(static_cast<size_t>(k::PackedFloats(kk, n)) + 16, 0);
  uint16_t* h = reinterpret_cast<uint16_t*>((reinterpret_cast<uintptr_t>(half.data()) + 31) & ~uintptr_t{31});
  const k::PackedB pb{nullptr, nr, stride, h, k::HalfKind::kBF16};
  for (int64_t q = 0; q < kk; ++q) {
    for (int64_t j = 0; j < n; ++j) {
      uint32_t bits;
      std::memcpy(&bits, &w[q * n + j], 4);
      h[k::HalfOffset(pb, q, j)] = static_cast<uint16_t>(bits >> 16);
    }
  }
  std::vector<float> one;
  for (int threads : {1, 2, 3, 4}) {
    ScopedThreads pool(threads);
    std::vector<float> out(static_cast<size_t>(m * n), -7.0f);
    k::Gemm(m, n, kk, a.data(), kk, pb, bias.data(), out.data(), n);
    if (threads == 1) {
      one = out;
    } else {
      EXPECT_TRUE(SameBits(one, out)) << threads << " threads";
    }
  }
}

// The decoding GEMVs: torch-layout rows (GemvT) and packed panels
// (GemvPacked), m = 1 and 3, over N with every remainder of the four-row
// (four-panel) blocks and the long ranges each thread takes: one chain an
// output, so the same bits on any thread count.
TEST_P(ThreadsBitIdentical, Gemv) {
  const int64_t kk = 200;
  for (int64_t n : {int64_t{4001}, int64_t{4002}, int64_t{4003}, int64_t{4004}}) {
    for (int64_t m : {int64_t{1}, int64_t{3}}) {
      SCOPED_TRACE(::testing::Message() << "M=" << m << " N=" << n);
      Rng rng(31);
      const std::vector<float> x = rng.Vector(m * kk), w = rng.Vector(n * kk), bias = rng.Vector(n);
      AlignedFloats packed(static_cast<size_t>(k::PackedFloats(kk, n)));
      const k::PackedB pb = k::PackB(kk, n, w.data(), 1, kk, packed.data());  // B(k, n) = W[n, k]
      std::vector<float> one[2];
      for (int threads : {1, 2, 3, 4}) {
        ScopedThreads pool(threads);
        std::vector<float> rows(static_cast<size_t>(m * n), -7.0f), panels(rows);
        k::GemvT(m, n, kk, x.data(), kk, w.data(), kk, bias.data(), rows.data(), n);
        k::GemvPacked(m, n, kk, x.data(), kk, pb, bias.data(), panels.data(), n);
        if (threads == 1) {
          one[0] = rows;
          one[1] = panels;
        } else {
          EXPECT_TRUE(SameBits(one[0], rows)) << "GemvT, " << threads << " threads";
          EXPECT_TRUE(SameBits(one[1], panels)) << "GemvPacked, " << threads << " threads";
        }
      }
    }
  }
}

// The MLP activations in chunks on the pool (n not a multiple of a chunk or
// of the vector width): the same bits on any thread count.
TEST_P(ThreadsBitIdentical, Activations) {
  const int64_t n = 100003;
  Rng rng(29);
  const std::vector<float> x = rng.Vector(n), up = rng.Vector(n);
  std::vector<float> one[3];
  for (int threads : {1, 2, 3, 4}) {
    ScopedThreads pool(threads);
    std::vector<float> out[3];
    for (auto& o : out) o.assign(static_cast<size_t>(n), -7.0f);
    k::GeluTanh(n, x.data(), out[0].data());
    k::Gelu(n, x.data(), out[1].data());
    k::SwiGlu(n, x.data(), up.data(), out[2].data());
    for (int f = 0; f < 3; ++f) {
      if (threads == 1) {
        one[f] = out[f];
      } else {
        EXPECT_TRUE(SameBits(one[f], out[f])) << "activation " << f << ", " << threads << " threads";
      }
    }
  }
}

struct SdpaCase {
  int64_t B, H, Lq, Lk, D, Dv;
  bool causal = false;
  bool weights = false;
  bool padding = false;
  bool additive_mask = false;
};

std::vector<float> RunSdpa(const SdpaCase& c, std::vector<float>* weights) {
  Rng rng(5);
  const std::vector<float> q = rng.Vector(c.B * c.H * c.Lq * c.D),
                           kk = rng.Vector(c.B * c.H * c.Lk * c.D),
                           v = rng.Vector(c.B * c.H * c.Lk * c.Dv);
  std::vector<int32_t> lengths;
  for (int64_t b = 0; b < c.B; ++b) lengths.push_back(static_cast<int32_t>(c.Lk - 3 * b - 1));
  const std::vector<float> mask = rng.Vector(c.Lq * c.Lk, -2.0f, 2.0f);
  attnlab::SdpaArgs a;
  a.batch = c.B;
  a.heads = c.H;
  a.lq = c.Lq;
  a.lk = c.Lk;
  a.d = c.D;
  a.dv = c.Dv;
  a.q = q.data();
  a.k = kk.data();
  a.v = v.data();
  a.mask.causal = c.causal;
  if (c.padding) a.mask.lengths = lengths.data();
  if (c.additive_mask) {
    a.mask.kind = MaskKind::kAdditive;
    a.mask.data = mask.data();
    a.mask.shape[2] = c.Lq;
    a.mask.shape[3] = c.Lk;
  }
  std::vector<float> out(static_cast<size_t>(c.B * c.H * c.Lq * c.Dv));
  if (c.weights) {
    weights->assign(static_cast<size_t>(c.B * c.H * c.Lq * c.Lk), 0.0f);
    a.weights = weights->data();
  }
  a.output = out.data();
  const Status s = attnlab::ScaledDotProductAttention(a);
  EXPECT_TRUE(s.ok()) << s.message;
  return out;
}

TEST_P(ThreadsBitIdentical, ScaledDotProductAttention) {
  std::vector<SdpaCase> cases = {
      {2, 3, 77, 131, 24, 24},                        // dense blocks
      {1, 3, 200, 150, 40, 17, true, true, true},     // causal + padding, weights
      {2, 2, 71, 600, 32, 32, true},                  // flash (Lk >= 512)
      {1, 2, 70, 700, 16, 16, false, false, true, true},  // flash, padding + additive
      {3, 5, 5, 301, 64, 64, true},                   // rowwise (few queries)
      {1, 1, 333, 257, 48, 48, true, true},           // one head: query blocks only
  };
  for (const SdpaCase& c : cases) {
    SCOPED_TRACE(::testing::Message() << "B=" << c.B << " H=" << c.H << " Lq=" << c.Lq
                                      << " Lk=" << c.Lk << " D=" << c.D << " Dv=" << c.Dv);
    std::vector<float> one, one_w;
    for (int threads : {1, 2, 3, 4}) {
      ScopedThreads pool(threads);
      std::vector<float> w;
      const std::vector<float> out = RunSdpa(c, &w);
      if (threads == 1) {
        one = out;
        one_w = w;
      } else {
        EXPECT_TRUE(SameBits(one, out)) << threads << " threads: output";
        EXPECT_TRUE(SameBits(one_w, w)) << threads << " threads: weights";
      }
    }
  }
}

// One multi-threaded call against the double reference.
TEST_P(ThreadsBitIdentical, SdpaMatchesReferenceWithThreeThreads) {
  ScopedThreads pool(3);
  const SdpaCase c{2, 3, 97, 140, 32, 24, true, true};
  std::vector<float> w;
  const std::vector<float> out = RunSdpa(c, &w);
  Rng rng(5);
  const std::vector<float> q = rng.Vector(c.B * c.H * c.Lq * c.D),
                           kk = rng.Vector(c.B * c.H * c.Lk * c.D),
                           v = rng.Vector(c.B * c.H * c.Lk * c.Dv);
  RefMask mask;
  mask.causal = true;
  std::vector<double> want, want_w;
  const std::vector<double> qd = ToDouble(q.data(), static_cast<int64_t>(q.size())),
                            kd = ToDouble(kk.data(), static_cast<int64_t>(kk.size())),
                            vd = ToDouble(v.data(), static_cast<int64_t>(v.size()));
  RefSdpa(c.B, c.H, c.Lq, c.Lk, c.D, c.Dv, qd.data(), kd.data(), vd.data(),
          1.0 / std::sqrt(static_cast<double>(c.D)), mask, &want, &want_w);
  EXPECT_TRUE(ExpectAllClose(out, want, 5e-6, 5e-5, "output"));
  EXPECT_TRUE(ExpectAllClose(w, want_w, 5e-6, 5e-5, "weights"));
}

// Multi-head attention: fused and separate projections, averaged and per-head
// weights, and a key/value cache filled over two calls.
TEST_P(ThreadsBitIdentical, MultiHeadAttention) {
  struct Case { int64_t B, Lq, Lk, E, H; bool self; bool average; bool cache; };
  for (const Case& c : {Case{2, 37, 37, 96, 4, true, false, false},
                        Case{1, 129, 129, 120, 5, true, true, false},
                        Case{2, 41, 53, 64, 8, false, false, false},
                        Case{2, 5, 5, 512, 8, true, false, false},
                        Case{1, 67, 67, 64, 4, false, true, true}}) {
    SCOPED_TRACE(::testing::Message() << "B=" << c.B << " Lq=" << c.Lq << " Lk=" << c.Lk
                                      << " E=" << c.E << " H=" << c.H);
    Rng rng(9);
    const std::vector<float> x = rng.Vector(c.B * c.Lq * c.E), kv = rng.Vector(c.B * c.Lk * c.E);
    std::vector<float> one, one_w;
    for (int threads : {1, 2, 3, 4}) {
      ScopedThreads pool(threads);
      attnlab::MhaConfig cfg;
      cfg.embed_dim = c.E;
      cfg.num_heads = c.H;
      cfg.seed = 3;
      Status s;
      auto mha = attnlab::MultiHeadAttention::Create(cfg, &s);
      ASSERT_TRUE(s.ok()) << s.message;
      std::unique_ptr<attnlab::KvCache> cache;
      if (c.cache) cache = mha->CreateKvCache(c.B, 2 * c.Lk, &s);
      std::vector<float> out(static_cast<size_t>(c.B * c.Lq * c.E));
      std::vector<float> w(static_cast<size_t>(c.B * (c.average ? 1 : c.H) * c.Lq * c.Lk * (c.cache ? 2 : 1)));
      attnlab::MhaForwardArgs a;
      a.batch = c.B;
      a.lq = c.Lq;
      a.lk = c.Lk;
      a.query = x.data();
      a.key = c.self ? x.data() : kv.data();
      a.value = c.self ? x.data() : kv.data();
      a.mask.causal = true;
      a.output = out.data();
      a.weights = w.data();
      a.average_weights = c.average;
      a.cache = cache.get();
      for (int call = 0; call < (c.cache ? 2 : 1); ++call) {
        s = mha->Forward(a);
        ASSERT_TRUE(s.ok()) << s.message;
      }
      if (threads == 1) {
        one = out;
        one_w = w;
      } else {
        EXPECT_TRUE(SameBits(one, out)) << threads << " threads: output";
        EXPECT_TRUE(SameBits(one_w, w)) << threads << " threads: weights";
      }
    }
  }
}

// start_output_only: Forward returns while the workers may still compute the
// output projection; after JoinTasks the output equals one thread's.
TEST_P(ThreadsBitIdentical, MultiHeadAttentionStartedOutput) {
  const int64_t B = 1, L = 131, E = 120, H = 5;
  Rng rng(21);
  const std::vector<float> x = rng.Vector(B * L * E);
  std::vector<float> one;
  for (int threads : {1, 2, 3, 4}) {
    ScopedThreads pool(threads);
    attnlab::MhaConfig cfg;
    cfg.embed_dim = E;
    cfg.num_heads = H;
    cfg.seed = 5;
    Status s;
    auto mha = attnlab::MultiHeadAttention::Create(cfg, &s);
    ASSERT_TRUE(s.ok()) << s.message;
    std::vector<float> out(static_cast<size_t>(B * L * E), -1.0f);
    attnlab::MhaForwardArgs a;
    a.batch = B;
    a.lq = a.lk = L;
    a.query = a.key = a.value = x.data();
    a.mask.causal = true;
    a.output = out.data();
    a.start_output_only = threads > 1;
    for (int call = 0; call < 3; ++call) {  // also: a started batch, then a new forward
      s = mha->Forward(a);
      ASSERT_TRUE(s.ok()) << s.message;
    }
    attnlab::JoinTasks();
    if (threads == 1) {
      one = out;
    } else {
      EXPECT_TRUE(SameBits(one, out)) << threads << " threads";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(KernelSets, ThreadsBitIdentical, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return KernelSetName(info.param);
                         });

}  // namespace
}  // namespace attnlab_test

// Attention as today's models use it: GQA/MQA, softcap, maskFill = -inf,
// bottom-right causal, sliding windows and ALiBi in ScaledDotProductAttention,
// checked against the float64 reference (RefSdpaModern) on odd sizes, through
// the dense, flash (Lk >= 512, no weights) and few-query (Lq < 8) paths, with
// the SIMD and the scalar kernel sets; and SIMD against scalar.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attention_lab.h"
#include "reference.h"
#include "thread_pool.h"

namespace attnlab_test {
namespace {

using attnlab::SdpaArgs;
using attnlab::Status;

struct Shape {
  int64_t b, h, hkv, lq, lk, d, dv;
};

struct Result {
  std::vector<float> out, weights, out_nw;
  std::vector<double> want_out, want_w;
};

Result RunSdpa(const Shape& sh, const RefModern& m, uint32_t seed, bool scalar,
           float qk_range = 1.0f) {
  Rng rng(seed);
  const auto q = rng.Vector(sh.b * sh.h * sh.lq * sh.d, -qk_range, qk_range);
  const auto k = rng.Vector(sh.b * sh.hkv * sh.lk * sh.d, -qk_range, qk_range);
  const auto v = rng.Vector(sh.b * sh.hkv * sh.lk * sh.dv);
  Result r;
  r.out.assign(static_cast<size_t>(sh.b * sh.h * sh.lq * sh.dv), kSentinel);
  r.out_nw = r.out;
  r.weights.assign(static_cast<size_t>(sh.b * sh.h * sh.lq * sh.lk), kSentinel);
  ScopedKernelSet set(scalar);
  SdpaArgs a;
  a.batch = sh.b;
  a.heads = sh.h;
  a.kv_heads = sh.hkv;
  a.lq = sh.lq;
  a.lk = sh.lk;
  a.d = sh.d;
  a.dv = sh.dv;
  a.q = q.data();
  a.k = k.data();
  a.v = v.data();
  if (m.softcap > 0.0) {
    a.has_softcap = true;
    a.softcap = static_cast<float>(m.softcap);
  }
  a.mask = m.Spec();
  a.output = r.out.data();
  a.weights = r.weights.data();
  Status s = attnlab::ScaledDotProductAttention(a);
  EXPECT_TRUE(s.ok()) << s.message;
  a.weights = nullptr;
  a.output = r.out_nw.data();
  s = attnlab::ScaledDotProductAttention(a);
  EXPECT_TRUE(s.ok()) << s.message;
  RefSdpaModern(sh.b, sh.h, sh.lq, sh.lk, sh.d, sh.dv, q.data(), k.data(), v.data(),
                1.0 / std::sqrt(static_cast<double>(sh.d)), m, &r.want_out, &r.want_w);
  return r;
}

void Check(const Shape& sh, const RefModern& m, uint32_t seed) {
  for (bool scalar : {false, true}) {
    const std::string what = KernelSetName(scalar) + " " + m.Describe() + " B" +
                             std::to_string(sh.b) + " H" + std::to_string(sh.h) + "/" +
                             std::to_string(sh.hkv) + " Lq" + std::to_string(sh.lq) +
                             " Lk" + std::to_string(sh.lk) + " D" + std::to_string(sh.d);
    Result r = RunSdpa(sh, m, seed, scalar);
    ExpectAllClose(r.out, r.want_out, 2e-5, 2e-4, what + " output");
    ExpectAllClose(r.weights, r.want_w, 1e-6, 2e-4, what + " weights");
    ExpectAllClose(r.out_nw, r.want_out, 2e-5, 2e-4, what + " output (no weights)");
  }
}

const Shape kShapes[] = {
    {2, 6, 2, 5, 13, 9, 7},     // GQA, few-query path
    {2, 6, 3, 37, 41, 13, 11},  // dense
    {1, 4, 1, 70, 67, 8, 5},    // MQA
    {2, 3, 3, 40, 600, 7, 9},   // flash (no weights), Lk >= 512
    {1, 8, 2, 1, 523, 16, 16},  // decode step
};

TEST(ModernAttention, GqaMatchesReference) {
  RefModern m;
  uint32_t seed = 1;
  for (const Shape& sh : kShapes) {
    m.kv_heads = sh.hkv;
    Check(sh, m, seed++);
  }
}

TEST(ModernAttention, SoftcapMatchesReference) {
  RefModern m;
  m.softcap = 1.5;  // scores of up to ~±3 saturate visibly
  uint32_t seed = 10;
  for (const Shape& sh : kShapes) {
    m.kv_heads = sh.hkv;
    Check(sh, m, seed++);
  }
}

TEST(ModernAttention, CausalAlignAndLengthsWithBothFills) {
  uint32_t seed = 20;
  for (const Shape& sh : kShapes) {
    for (bool br : {false, true}) {
      for (double fill : {kFill, -kInf}) {
        for (bool pad : {false, true}) {
          RefModern m;
          m.kv_heads = sh.hkv;
          m.causal = true;
          m.causal_bottom_right = br;
          m.fill = fill;
          if (pad) {
            for (int64_t b = 0; b < sh.b; ++b) {
              m.lengths.push_back(static_cast<int32_t>(b == 0 ? sh.lk : (sh.lk * 2) / 3));
            }
          }
          Check(sh, m, seed++);
        }
      }
    }
  }
}

// Top-left alignment with an offset (ONNX: the past length of a cache).
TEST(ModernAttention, OffsetsMatchReference) {
  uint32_t seed = 300;
  for (const Shape& sh : kShapes) {
    for (int64_t off : {-2, 3, 8}) {
      RefModern m;
      m.kv_heads = sh.hkv;
      m.causal = true;
      m.causal_offset = off;
      m.window = true;
      m.left = 2;
      m.window_offset = off;
      m.fill = -kInf;
      Check(sh, m, seed++);
    }
  }
}

TEST(ModernAttention, WindowsMatchReference) {
  uint32_t seed = 40;
  const int64_t sides[][2] = {{3, 0}, {0, 2}, {5, 5}, {-1, 4}, {7, -1}, {0, 0}};
  for (const Shape& sh : kShapes) {
    for (const auto& lr : sides) {
      for (bool causal : {false, true}) {
        RefModern m;
        m.kv_heads = sh.hkv;
        m.window = true;
        m.left = lr[0];
        m.right = lr[1];
        m.window_bottom_right = (seed % 2) == 0;
        m.causal = causal;
        m.causal_bottom_right = m.window_bottom_right;
        m.fill = (seed % 3) == 0 ? -kInf : kFill;
        if (seed % 4 == 1) {
          for (int64_t b = 0; b < sh.b; ++b) {
            m.lengths.push_back(static_cast<int32_t>(sh.lk - b));
          }
        }
        Check(sh, m, seed++);
      }
    }
  }
}

TEST(ModernAttention, AlibiMatchesReference) {
  uint32_t seed = 80;
  for (const Shape& sh : kShapes) {
    for (bool causal : {false, true}) {
      RefModern m;
      m.kv_heads = sh.hkv;
      m.causal = causal;
      m.causal_bottom_right = true;
      for (double x : RefAlibiSlopes(sh.h)) m.slopes.push_back(static_cast<float>(x));
      Check(sh, m, seed++);
    }
  }
}

TEST(ModernAttention, DefaultAlibiSlopesFollowThePaper) {
  for (int64_t H : {1, 2, 3, 5, 6, 8, 12, 16, 24}) {
    std::vector<float> got(static_cast<size_t>(H));
    ASSERT_TRUE(attnlab::AlibiSlopes(H, got.data()).ok());
    const std::vector<double> want = RefAlibiSlopes(H);
    ExpectAllClose(got.data(), want.data(), H, 0.0, 1e-7, "slopes H=" + std::to_string(H));
  }
  // Powers of two: 2^(-8(h+1)/H).
  std::vector<float> s8(8);
  ASSERT_TRUE(attnlab::AlibiSlopes(8, s8.data()).ok());
  for (int h = 0; h < 8; ++h) EXPECT_EQ(s8[h], std::ldexp(1.0f, -(h + 1)));
  // A null slopes pointer means the default slopes.
  Shape sh{1, 6, 2, 9, 15, 5, 4};
  RefModern m;
  m.kv_heads = 2;
  for (double x : RefAlibiSlopes(6)) m.slopes.push_back(static_cast<float>(x));
  Rng rng(5);
  const auto q = rng.Vector(sh.b * sh.h * sh.lq * sh.d);
  const auto k = rng.Vector(sh.b * sh.hkv * sh.lk * sh.d);
  const auto v = rng.Vector(sh.b * sh.hkv * sh.lk * sh.dv);
  std::vector<float> out(static_cast<size_t>(sh.h * sh.lq * sh.dv));
  SdpaArgs a;
  a.heads = 6;
  a.kv_heads = 2;
  a.lq = sh.lq;
  a.lk = sh.lk;
  a.d = sh.d;
  a.dv = sh.dv;
  a.q = q.data();
  a.k = k.data();
  a.v = v.data();
  a.mask.alibi = true;
  a.output = out.data();
  ASSERT_TRUE(attnlab::ScaledDotProductAttention(a).ok());
  std::vector<double> want, ww;
  RefSdpaModern(1, 6, sh.lq, sh.lk, sh.d, sh.dv, q.data(), k.data(), v.data(),
                1.0 / std::sqrt(5.0), m, &want, &ww);
  ExpectAllClose(out, want, 2e-5, 2e-4, "default slopes");
}

TEST(ModernAttention, TensorMasksWithInfiniteFill) {
  uint32_t seed = 100;
  for (const Shape& sh : kShapes) {
    for (MaskKind kind : {MaskKind::kKeep, MaskKind::kBlock, MaskKind::kAdditive}) {
      RefModern m;
      m.kv_heads = sh.hkv;
      m.fill = -kInf;
      m.softcap = 2.0;
      Rng rng(seed);
      FillTensorMask(&m.tensor, kind, sh.b, 1, sh.lq, sh.lk, rng);
      Check(sh, m, seed++);
    }
  }
}

// A fully masked row gives zero weights and a zero output with fill = -inf,
// never NaN, on every path (dense, flash, few-query).
TEST(ModernAttention, FullyMaskedRowsAreZeroWithInfiniteFill) {
  for (const Shape& sh : kShapes) {
    for (bool scalar : {false, true}) {
      RefModern m;
      m.kv_heads = sh.hkv;
      m.fill = -kInf;
      m.causal = true;
      m.causal_bottom_right = true;
      // Row i sees keys j <= i + len - Lq: the first rows see nothing when
      // len < Lq; batch 0 has no keys at all.
      for (int64_t b = 0; b < sh.b; ++b) {
        m.lengths.push_back(static_cast<int32_t>(b == 0 ? 0 : std::max<int64_t>(1, sh.lq / 2)));
      }
      Result r = RunSdpa(sh, m, 7, scalar);
      EXPECT_TRUE(AllFinite(r.out.data(), static_cast<int64_t>(r.out.size())));
      EXPECT_TRUE(AllFinite(r.out_nw.data(), static_cast<int64_t>(r.out_nw.size())));
      EXPECT_TRUE(AllFinite(r.weights.data(), static_cast<int64_t>(r.weights.size())));
      for (int64_t h = 0; h < sh.h; ++h) {  // batch 0: all zeros
        for (int64_t t = 0; t < sh.lq * sh.dv; ++t) {
          ASSERT_EQ(r.out[static_cast<size_t>(h * sh.lq * sh.dv + t)], 0.0f);
          ASSERT_EQ(r.out_nw[static_cast<size_t>(h * sh.lq * sh.dv + t)], 0.0f);
        }
      }
      ExpectAllClose(r.out, r.want_out, 2e-5, 2e-4, "output");
      ExpectAllClose(r.out_nw, r.want_out, 2e-5, 2e-4, "output (no weights)");
      ExpectAllClose(r.weights, r.want_w, 1e-6, 2e-4, "weights");
    }
  }
}

// With the default fill a fully masked row stays uniform (the tutorials'
// behaviour), also when the masking comes from a window.
TEST(ModernAttention, FullyMaskedRowsAreUniformWithFiniteFill) {
  Shape sh{1, 2, 1, 6, 9, 4, 3};
  RefModern m;
  m.kv_heads = 1;
  m.window = true;
  m.left = 0;
  m.right = 0;
  m.lengths = {3};  // rows 3.. see nothing
  Check(sh, m, 3);
}

TEST(ModernAttention, SimdMatchesScalarOnOddSizes) {
  uint32_t seed = 200;
  for (const Shape& sh : kShapes) {
    RefModern m;
    m.kv_heads = sh.hkv;
    m.softcap = 3.0;
    m.causal = true;
    m.causal_bottom_right = true;
    m.window = true;
    m.left = 9;
    m.right = -1;
    for (double x : RefAlibiSlopes(sh.h)) m.slopes.push_back(static_cast<float>(x));
    m.fill = -kInf;
    Result a = RunSdpa(sh, m, seed, false);
    Result b = RunSdpa(sh, m, seed, true);
    std::vector<double> bd(b.out.begin(), b.out.end()), bw(b.weights.begin(), b.weights.end());
    ExpectAllClose(a.out, bd, 1e-5, 1e-4, "simd vs scalar output");
    ExpectAllClose(a.weights, bw, 1e-6, 1e-4, "simd vs scalar weights");
    ++seed;
  }
}

// Every variant at once gives bit-identical results on 1 and 3 threads.
TEST(ModernAttention, ThreadsAreBitIdentical) {
  for (const Shape& sh : kShapes) {
    RefModern m;
    m.kv_heads = sh.hkv;
    m.softcap = 2.5;
    m.causal = true;
    m.causal_bottom_right = true;
    m.window = true;
    m.left = 7;
    for (double x : RefAlibiSlopes(sh.h)) m.slopes.push_back(static_cast<float>(x));
    m.fill = -kInf;
    ASSERT_TRUE(attnlab::SetThreadCount(1).ok());
    Result one = RunSdpa(sh, m, 77, false);
    ASSERT_TRUE(attnlab::SetThreadCount(3).ok());
    Result three = RunSdpa(sh, m, 77, false);
    ASSERT_TRUE(attnlab::SetThreadCount(1).ok());
    EXPECT_EQ(one.out, three.out);
    EXPECT_EQ(one.out_nw, three.out_nw);
    EXPECT_EQ(one.weights, three.weights);
  }
}

// A window over a long sequence: the answer is right (the cost is measured by
// the bench, not here).
TEST(ModernAttention, LongSequenceWindow) {
  Shape sh{1, 2, 1, 700, 1500, 8, 8};
  RefModern m;
  m.kv_heads = 1;
  m.window = true;
  m.left = 64;
  m.right = 0;
  m.fill = -kInf;
  m.window_bottom_right = true;
  for (bool scalar : {false, true}) {
    Result r = RunSdpa(sh, m, 11, scalar);
    ExpectAllClose(r.out_nw, r.want_out, 2e-5, 2e-4, KernelSetName(scalar) + " window output");
  }
}

TEST(ModernAttention, RejectsBadArguments) {
  std::vector<float> buf(4096, 0.5f), out(4096);
  SdpaArgs a;
  a.heads = 6;
  a.kv_heads = 4;
  a.lq = 2;
  a.lk = 3;
  a.d = 4;
  a.dv = 4;
  a.q = a.k = a.v = buf.data();
  a.output = out.data();
  Status s = attnlab::ScaledDotProductAttention(a);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("multiple"), std::string::npos) << s.message;
  a.kv_heads = 3;
  a.has_softcap = true;
  a.softcap = 0.0f;
  s = attnlab::ScaledDotProductAttention(a);
  EXPECT_NE(s.message.find("softcap"), std::string::npos) << s.message;
  a.softcap = -1.0f;
  EXPECT_FALSE(attnlab::ScaledDotProductAttention(a).ok());
  a.has_softcap = false;
  a.mask.window = true;
  a.mask.window_left = -2;
  s = attnlab::ScaledDotProductAttention(a);
  EXPECT_NE(s.message.find("window left"), std::string::npos) << s.message;
  a.mask.window_left = 1;
  a.mask.fill = std::numeric_limits<float>::quiet_NaN();
  s = attnlab::ScaledDotProductAttention(a);
  EXPECT_NE(s.message.find("maskFill"), std::string::npos) << s.message;
  a.mask.fill = -std::numeric_limits<float>::infinity();
  EXPECT_TRUE(attnlab::ScaledDotProductAttention(a).ok());
}

}  // namespace
}  // namespace attnlab_test

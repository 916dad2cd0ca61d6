// The K-quants kept as blocks (src/kernels/quant.cpp: Q4_K, Q6_K):
//   * DequantizeRow against this file's own double reading of ggml-common.h
//     block_q4_K / block_q6_K and dequantize_row_q4_K / dequantize_row_q6_K
//     (llama.cpp ggml/src/ggml-quants.c), within float32 rounding (the
//     library's values are two float32 products away from the quants);
//   * GemvQuant (M 1..4) and GemmQuant (M 1, 5, 128) on both kernel sets
//     against a double reference over those values, within 1e-5 of Σ|x·w|:
//     K of 1, 2, 3 and 6 super-blocks, N leaving every remainder of the
//     four-row blocks, rows strided, with and without a bias;
//   * the SIMD set against the scalar one;
//   * the weight store keeps them (WriteQuant), refuses a row that is not
//     whole super-blocks and a non-finite d or dmin, and a tiny model from
//     Q4_K / Q6_K rows equals the model from their dequantized floats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "internal.h"
#include "kernels/kernels.h"
#include "train/train.h"

namespace {

namespace k = attnlab::kernels;

double HalfValue(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
double Half(const uint8_t* p) { return HalfValue(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

int Bytes(k::QuantKind kind) { return kind == k::QuantKind::kQ4_K ? 144 : 210; }

// Value i (0..255) of a super-block, in double.
double RefValue(k::QuantKind kind, const uint8_t* b, int i) {
  if (kind == k::QuantKind::kQ4_K) {
    const int s = i / 32;       // sub-block
    const int g = s / 2;        // its 32 bytes of nibbles
    const uint8_t byte = b[16 + 32 * g + i % 32];
    const int q = s % 2 == 0 ? (byte & 15) : (byte >> 4);
    const uint8_t* sc = b + 4;
    int scale, min;
    if (s < 4) {
      scale = sc[s] & 63;
      min = sc[s + 4] & 63;
    } else {
      scale = (sc[s + 4] & 15) | ((sc[s - 4] >> 6) << 4);
      min = (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4);
    }
    return Half(b) * scale * q - Half(b + 2) * min;
  }
  const int n = i / 128, r = i % 128, quarter = r / 32, l = r % 32;
  const uint8_t* ql = b + 64 * n;
  const uint8_t* qh = b + 128 + 32 * n;
  const uint8_t lo = quarter % 2 == 0 ? ql[l] : ql[l + 32];
  const int low = quarter < 2 ? (lo & 15) : (lo >> 4);
  const int high = (qh[l] >> (2 * quarter)) & 3;
  const int scale = static_cast<int8_t>(b[192 + i / 16]);
  return Half(b + 208) * scale * ((low | (high << 4)) - 32);
}

std::vector<double> RefRows(k::QuantKind kind, const uint8_t* w, int64_t ld, int64_t n, int64_t kk) {
  std::vector<double> out(static_cast<size_t>(n * kk));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t p = 0; p < kk; ++p) out[j * kk + p] = RefValue(kind, w + j * ld + (p / 256) * Bytes(kind), static_cast<int>(p % 256));
  }
  return out;
}

// Random super-blocks: random bytes, the F16 d (and dmin) random finite
// halves of magnitude 2^-9 .. 2^-5 (Q4_K's of either sign).
std::vector<uint8_t> RandomRows(k::QuantKind kind, int64_t n, int64_t kk, int64_t ld, std::mt19937* g) {
  std::vector<uint8_t> w(static_cast<size_t>(n * ld), 0xA5);
  std::uniform_int_distribution<int> byte(0, 255), mant(0, 1023), ex(6, 10), sign(0, 1);
  const int bb = Bytes(kind);
  auto half = [&](uint8_t* p) {
    const uint16_t d = static_cast<uint16_t>((sign(*g) << 15) | (ex(*g) << 10) | mant(*g));
    p[0] = static_cast<uint8_t>(d & 255);
    p[1] = static_cast<uint8_t>(d >> 8);
  };
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t b = 0; b < kk / 256; ++b) {
      uint8_t* block = w.data() + j * ld + b * bb;
      for (int i = 0; i < bb; ++i) block[i] = static_cast<uint8_t>(byte(*g));
      if (kind == k::QuantKind::kQ4_K) {
        half(block);
        half(block + 2);
      } else {
        half(block + 208);
      }
    }
  }
  return w;
}

const k::QuantKind kKinds[] = {k::QuantKind::kQ4_K, k::QuantKind::kQ6_K};

struct Scratch {
  attnlab::internal::AlignedBuffer buf;
  float* Get(int64_t floats) { return buf.Reserve(std::max<int64_t>(floats, 1)) ? buf.data() : nullptr; }
};

void ExpectNearReference(const std::string& what, int64_t m, int64_t n, int64_t kk, const std::vector<float>& x,
                         int64_t ldx, const std::vector<double>& w, const float* bias, const std::vector<float>& y,
                         int64_t ldy) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = bias ? bias[j] : 0.0, mag = bias ? std::fabs(bias[j]) : 0.0;
      for (int64_t p = 0; p < kk; ++p) {
        const double t = static_cast<double>(x[i * ldx + p]) * w[j * kk + p];
        s += t;
        mag += std::fabs(t);
      }
      ASSERT_NEAR(y[i * ldy + j], s, 1e-5 * mag + 1e-30) << what << " m=" << m << " n=" << n << " k=" << kk << " ("
                                                         << i << "," << j << ")";
    }
  }
}

TEST(QuantK, DequantizeRowMatchesTheReference) {
  std::mt19937 g(12);
  for (auto kind : kKinds) {
    const int64_t n = 5, kk = 768, ld = kk / 256 * Bytes(kind);
    const std::vector<uint8_t> w = RandomRows(kind, n, kk, ld, &g);
    const std::vector<double> ref = RefRows(kind, w.data(), ld, n, kk);
    std::vector<float> row(kk);
    for (int64_t j = 0; j < n; ++j) {
      k::DequantizeRow(kind, w.data() + j * ld, kk, row.data());
      double big = 0.0;
      for (int64_t p = 0; p < kk; ++p) big = std::max(big, std::fabs(ref[j * kk + p]));
      for (int64_t p = 0; p < kk; ++p) {
        // A few float32 roundings (the scale products, the value).
        ASSERT_NEAR(row[p], ref[j * kk + p], 1e-6 * big) << k::QuantKindName(kind) << " row " << j << " value " << p;
      }
    }
  }
}

TEST(QuantK, GemvMatchesADoubleReferenceOnBothKernelSets) {
  std::mt19937 g(36);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (bool scalar : {false, true}) {
    const bool before = k::UseScalarKernels(scalar);
    for (auto kind : kKinds) {
      for (int64_t kk : {256, 512, 768, 1536}) {
        for (int64_t n : {1, 3, 4, 5, 13}) {
          for (int64_t m : {1, 2, 3, 4}) {
            const bool with_bias = (n + m) % 2 == 0;
            const int64_t ld = kk / 256 * Bytes(kind) + 5;  // rows strided, unaligned
            const std::vector<uint8_t> w = RandomRows(kind, n, kk, ld, &g);
            const std::vector<double> wd = RefRows(kind, w.data(), ld, n, kk);
            const int64_t ldx = kk + 3, ldy = n + 2;
            std::vector<float> x(m * ldx), b(n), y(m * ldy, 7.0f);
            for (auto& v : x) v = u(g);
            for (auto& v : b) v = u(g);
            Scratch s;
            k::GemvQuant(m, n, kk, x.data(), ldx, k::QuantMatrix{w.data(), ld, kind}, with_bias ? b.data() : nullptr,
                         y.data(), ldy, s.Get(k::QuantGemvScratchFloats(m, kk)));
            ExpectNearReference(std::string(scalar ? "scalar " : "simd ") + k::QuantKindName(kind), m, n, kk, x, ldx, wd,
                                with_bias ? b.data() : nullptr, y, ldy);
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t j = n; j < ldy; ++j) ASSERT_EQ(y[i * ldy + j], 7.0f) << "wrote past n";
            }
          }
        }
      }
    }
    k::UseScalarKernels(before);
  }
}

TEST(QuantK, GemmMatchesADoubleReferenceOnBothKernelSets) {
  std::mt19937 g(37);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 13, 256}, {5, 67, 512}, {7, 300, 768}, {128, 67, 256}};
  for (bool scalar : {false, true}) {
    const bool before = k::UseScalarKernels(scalar);
    for (auto kind : kKinds) {
      for (const Shape& sh : shapes) {
        const int64_t ld = sh.k / 256 * Bytes(kind);
        const std::vector<uint8_t> w = RandomRows(kind, sh.n, sh.k, ld, &g);
        const std::vector<double> wd = RefRows(kind, w.data(), ld, sh.n, sh.k);
        const int64_t lda = sh.k + 1, ldc = sh.n + 3;
        std::vector<float> a(sh.m * lda), b(sh.n), c(sh.m * ldc, 7.0f);
        for (auto& v : a) v = u(g);
        for (auto& v : b) v = u(g);
        Scratch s;
        k::GemmQuant(sh.m, sh.n, sh.k, a.data(), lda, k::QuantMatrix{w.data(), ld, kind}, b.data(), c.data(), ldc,
                     s.Get(k::QuantGemmScratchFloats(sh.k, sh.n)));
        ExpectNearReference(std::string(scalar ? "scalar " : "simd ") + k::QuantKindName(kind) + " gemm", sh.m, sh.n,
                            sh.k, a, lda, wd, b.data(), c, ldc);
      }
    }
    k::UseScalarKernels(before);
  }
}

TEST(QuantK, SimdMatchesScalar) {
  std::mt19937 g(38);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto kind : kKinds) {
    for (int64_t m : {1, 3, 7}) {
      const int64_t n = 77, kk = 512, ld = kk / 256 * Bytes(kind);
      const std::vector<uint8_t> w = RandomRows(kind, n, kk, ld, &g);
      const std::vector<double> wd = RefRows(kind, w.data(), ld, n, kk);
      std::vector<float> x(m * kk), ys(m * n), yr(m * n);
      for (auto& v : x) v = u(g);
      k::PackedB pb;
      pb.quant = k::QuantMatrix{w.data(), ld, kind};
      for (bool scalar : {false, true}) {
        const bool before = k::UseScalarKernels(scalar);
        attnlab::internal::LinearPackedDriver(m, kk, n, x.data(), pb, nullptr, scalar ? yr.data() : ys.data());
        k::UseScalarKernels(before);
      }
      for (int64_t i = 0; i < m * n; ++i) {
        double mag = 0.0;
        for (int64_t p = 0; p < kk; ++p) mag += std::fabs(x[(i / n) * kk + p] * wd[(i % n) * kk + p]);
        ASSERT_NEAR(ys[i], yr[i], 2e-5 * mag) << k::QuantKindName(kind) << " m=" << m << " output " << i;
      }
    }
  }
}

TEST(QuantK, ModelFromSuperBlocksEqualsModelFromTheirFloats) {
  std::mt19937 g(39);
  for (auto kind : kKinds) {
    attnlab::TransformerConfig c;
    c.vocab_size = 11;
    c.max_length = 8;
    c.embed_dim = 256;
    c.num_heads = 4;
    c.num_layers = 1;
    c.ffn_dim = 512;
    c.causal = true;
    c.prenorm = true;
    c.init_weights = true;
    c.seed = 3;
    attnlab::Status st;
    auto plain = attnlab::Transformer::Create(c, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    c.init_weights = false;
    c.packed_weights = true;
    auto blocks = attnlab::Transformer::Create(c, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    std::vector<float> flat(static_cast<size_t>(plain->ParamCount()));
    plain->CopyParams(flat.data());
    // Every matrix whose rows are whole super-blocks as random blocks in
    // both models (the plain one from their dequantized floats); the rest
    // copied.
    for (size_t i = 0; i < blocks->params().size(); ++i) {
      const attnlab::ParamInfo& info = blocks->params()[i];
      const int64_t r = info.shape.size() == 2 ? info.shape[0] : 1;
      const int64_t cols = info.shape.size() == 2 ? info.shape[1] : info.shape[0];
      float* dst = flat.data() + info.offset;
      if (info.shape.size() == 2 && cols % 256 == 0) {
        const int64_t ld = cols / 256 * Bytes(kind);
        const std::vector<uint8_t> w = RandomRows(kind, r, cols, ld, &g);
        ASSERT_TRUE(blocks->WriteParamQuant(static_cast<int64_t>(i), 0, r, static_cast<int32_t>(kind), w.data(),
                                            static_cast<int64_t>(w.size())).ok());
        for (int64_t j = 0; j < r; ++j) k::DequantizeRow(kind, w.data() + j * ld, cols, dst + j * cols);
        EXPECT_EQ(blocks->ParamQuantKind(static_cast<int64_t>(i)), static_cast<int32_t>(kind)) << info.name;
        // The blocks read back as written (model.save's format 'gguf').
        std::vector<uint8_t> back(w.size() + 1);
        EXPECT_EQ(blocks->CopyParamBlocks(static_cast<int64_t>(i), back.data(), static_cast<int64_t>(w.size()) - 1), 0);
        ASSERT_EQ(blocks->CopyParamBlocks(static_cast<int64_t>(i), back.data(), static_cast<int64_t>(back.size())),
                  static_cast<int64_t>(w.size()));
        EXPECT_EQ(std::memcmp(back.data(), w.data(), w.size()), 0) << info.name;
      } else {
        ASSERT_TRUE(blocks->WriteParam(static_cast<int64_t>(i), 0, r, dst, cols, false).ok());
      }
    }
    ASSERT_TRUE(plain->SetParams(flat.data()).ok());
    std::vector<float> back(flat.size());
    blocks->CopyParams(back.data());
    for (size_t i = 0; i < flat.size(); ++i) ASSERT_EQ(back[i], flat[i]) << "CopyParams " << i;
    const int32_t tokens[6] = {1, 4, 2, 9, 0, 7};
    for (int64_t len : {2, 6}) {
      std::vector<float> a(static_cast<size_t>(len * c.vocab_size)), b(a.size());
      ASSERT_TRUE(plain->Forward(1, len, tokens, a.data(), nullptr).ok());
      ASSERT_TRUE(blocks->Forward(1, len, tokens, b.data(), nullptr).ok());
      float mag = 0.0f;
      for (float v : a) mag = std::max(mag, std::fabs(v));
      for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(b[i], a[i], 1e-5f * std::max(1.0f, mag)) << k::QuantKindName(kind);
    }
  }
}

TEST(QuantK, WriteQuantRefusesBadSuperBlocks) {
  attnlab::TransformerConfig c;
  c.vocab_size = 11;
  c.max_length = 8;
  c.embed_dim = 64;  // rows of 64: not whole super-blocks
  c.num_heads = 4;
  c.num_layers = 1;
  c.ffn_dim = 256;
  c.packed_weights = true;
  c.init_weights = false;
  attnlab::Status st;
  auto t = attnlab::Transformer::Create(c, &st);
  ASSERT_TRUE(st.ok());
  int64_t wq = -1, w2 = -1;
  for (size_t i = 0; i < t->params().size(); ++i) {
    if (t->params()[i].name.find("attn.wq") != std::string::npos) wq = static_cast<int64_t>(i);
    if (t->params()[i].name.find("ffn.w2") != std::string::npos) w2 = static_cast<int64_t>(i);
  }
  std::vector<uint8_t> w(64 * 210, 0);
  st = t->WriteParamQuant(wq, 0, 64, 14, w.data(), 64 * 210);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message.find("not a multiple of 256 (a Q6_K block)"), std::string::npos) << st.message;
  // ffn.w2 [64, 256]: one super-block a row; a dmin of Inf refused.
  std::vector<uint8_t> q(64 * 144, 0);
  q[144 * 3 + 3] = 0x7c;
  st = t->WriteParamQuant(w2, 0, 64, 12, q.data(), 64 * 144);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message.find("super-block 3"), std::string::npos) << st.message;
  q[144 * 3 + 3] = 0;
  EXPECT_TRUE(t->WriteParamQuant(w2, 0, 64, 12, q.data(), 64 * 144).ok());
  EXPECT_EQ(t->ParamQuantKind(w2), 12);
}

}  // namespace

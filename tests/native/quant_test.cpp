// Weights kept as GGML blocks (src/kernels/quant.cpp, train::WeightStore):
//   * DequantizeRow against numpy's dequantization of Q8_0 and Q4_0 blocks
//     (tests/golden/quant/, tests/reference/quant_fixtures.py), bit for bit,
//     over hand-picked scales (±0, a subnormal, 65504, ...) and random quants;
//   * GemvQuant and GemmQuant on both kernel sets against a double reference
//     over the dequantized weights (this file's own dequantization), within
//     1e-5 of Σ|x·w|: K of 1 to 24 blocks (odd block counts: Q4_0 on AVX2
//     reads blocks in pairs), N leaving every remainder of the four-row
//     blocks and several GEMM chunks, M = 1, 2, 3, 4 (GEMV) and 1, 2, 5, 7,
//     128 (GEMM), rows strided, with and without a bias;
//   * the SIMD set against the scalar one;
//   * the linear driver over a quantized packed B for 1 to 9 rows;
//   * whole tiny models written from Q8_0 / Q4_0 rows against the same models
//     written from the dequantized floats: logits of a full forward and of
//     cached decoding within 1e-5, CopyParams the dequantized values exactly;
//   * the store's refusals (wrong byte count, rows not a multiple of 32,
//     unknown kind, mixed kinds, non-finite scales, float writes over
//     blocks, setWeights).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "internal.h"
#include "kernels/kernels.h"
#include "train/train.h"

#ifndef ATTNLAB_GOLDEN_DIR
#define ATTNLAB_GOLDEN_DIR "tests/golden"
#endif

namespace {

namespace k = attnlab::kernels;
using attnlab::Status;
using attnlab::TransformerConfig;

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::vector<uint8_t> out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  uint8_t buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
  std::fclose(f);
  return out;
}

// This test's own reading of ggml-common.h / dequantize_row_*: value i of a
// block of 32 as a double.
double HalfValue(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
int BlockBytes(k::QuantKind kind) { return kind == k::QuantKind::kQ8_0 ? 34 : 18; }
double RefValue(k::QuantKind kind, const uint8_t* block, int i) {
  const double d = HalfValue(static_cast<uint16_t>(block[0] | (block[1] << 8)));
  const uint8_t* q = block + 2;
  int v;
  if (kind == k::QuantKind::kQ8_0) {
    v = static_cast<int8_t>(q[i]);
  } else {
    v = i < 16 ? (q[i] & 15) - 8 : (q[i - 16] >> 4) - 8;
  }
  return d * v;
}
std::vector<double> RefRows(k::QuantKind kind, const uint8_t* w, int64_t ld, int64_t n, int64_t kk) {
  std::vector<double> out(static_cast<size_t>(n * kk));
  const int bb = BlockBytes(kind);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t p = 0; p < kk; ++p) out[j * kk + p] = RefValue(kind, w + j * ld + (p / 32) * bb, static_cast<int>(p % 32));
  }
  return out;
}

// Random blocks: random quants, scales random finite halves of magnitude
// 2^(e0-15) .. 2^(e1-14) of either sign (every byte pattern is a valid block).
std::vector<uint8_t> RandomRows(k::QuantKind kind, int64_t n, int64_t kk, int64_t ld, std::mt19937* g,
                                int e0 = 6, int e1 = 10) {
  std::vector<uint8_t> w(static_cast<size_t>(n * ld), 0xA5);
  std::uniform_int_distribution<int> byte(0, 255), mant(0, 1023), ex(e0, e1), sign(0, 1);
  const int bb = BlockBytes(kind);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t b = 0; b < kk / 32; ++b) {
      uint8_t* block = w.data() + j * ld + b * bb;
      const uint16_t d = static_cast<uint16_t>((sign(*g) << 15) | (ex(*g) << 10) | mant(*g));
      block[0] = static_cast<uint8_t>(d & 255);
      block[1] = static_cast<uint8_t>(d >> 8);
      for (int i = 2; i < bb; ++i) block[i] = static_cast<uint8_t>(byte(*g));
    }
  }
  return w;
}

const k::QuantKind kKinds[] = {k::QuantKind::kQ8_0, k::QuantKind::kQ4_0};
const char* Name(k::QuantKind kind) { return k::QuantKindName(kind); }

// The kernels' scratch, 64-byte aligned.
struct Scratch {
  attnlab::internal::AlignedBuffer buf;
  float* Get(int64_t floats) { return buf.Reserve(std::max<int64_t>(floats, 1)) ? buf.data() : nullptr; }
};

TEST(Quant, DequantizeRowMatchesNumpyBitForBit) {
  for (auto kind : kKinds) {
    const std::string base = std::string(ATTNLAB_GOLDEN_DIR) + "/quant/" + (kind == k::QuantKind::kQ8_0 ? "q8_0" : "q4_0");
    const std::vector<uint8_t> raw = ReadFile(base + ".bin"), ref = ReadFile(base + ".f32");
    const int64_t n = 3, kk = 96;
    ASSERT_EQ(raw.size(), static_cast<size_t>(n * kk / 32 * BlockBytes(kind))) << base;
    ASSERT_EQ(ref.size(), static_cast<size_t>(n * kk * 4)) << base;
    const int64_t ld = kk / 32 * BlockBytes(kind);
    for (int64_t j = 0; j < n; ++j) {
      std::vector<float> row(kk);
      k::DequantizeRow(kind, raw.data() + j * ld, kk, row.data());
      for (int64_t p = 0; p < kk; ++p) {
        float want;
        std::memcpy(&want, ref.data() + (j * kk + p) * 4, 4);
        uint32_t a, b;
        std::memcpy(&a, &row[p], 4);
        std::memcpy(&b, &want, 4);
        ASSERT_EQ(a, b) << Name(kind) << " row " << j << " value " << p << ": " << row[p] << " vs numpy " << want;
        // and this file's reference agrees with numpy (it is the GEMV oracle)
        ASSERT_EQ(RefValue(kind, raw.data() + j * ld + (p / 32) * BlockBytes(kind), static_cast<int>(p % 32)),
                  static_cast<double>(want));
      }
    }
  }
}

// y [m, n] (ldy) against Σ x·w in double, within 1e-5 of Σ|x·w| (+ |b|).
void ExpectNearReference(const char* what, int64_t m, int64_t n, int64_t kk, const std::vector<float>& x,
                         int64_t ldx, const std::vector<double>& w, const float* bias,
                         const std::vector<float>& y, int64_t ldy) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = bias ? bias[j] : 0.0, mag = bias ? std::fabs(bias[j]) : 0.0;
      for (int64_t p = 0; p < kk; ++p) {
        const double t = static_cast<double>(x[i * ldx + p]) * w[j * kk + p];
        s += t;
        mag += std::fabs(t);
      }
      ASSERT_NEAR(y[i * ldy + j], s, 1e-5 * mag + 1e-30) << what << " m=" << m << " n=" << n << " k=" << kk
                                                         << " (" << i << "," << j << ")";
    }
  }
}

TEST(Quant, GemvMatchesADoubleReferenceOnBothKernelSets) {
  std::mt19937 g(36);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (bool scalar : {false, true}) {
    const bool before = k::UseScalarKernels(scalar);
    for (auto kind : kKinds) {
      for (int64_t kk : {32, 64, 96, 160, 768}) {
        for (int64_t n : {1, 3, 4, 5, 13, 67}) {
          for (int64_t m : {1, 2, 3, 4}) {
            for (bool with_bias : {false, true}) {
              const int64_t ld = kk / 32 * BlockBytes(kind) + 7;  // rows strided, unaligned
              const std::vector<uint8_t> w = RandomRows(kind, n, kk, ld, &g);
              const std::vector<double> wd = RefRows(kind, w.data(), ld, n, kk);
              const int64_t ldx = kk + 3, ldy = n + 2;
              std::vector<float> x(m * ldx), b(n), y(m * ldy, 7.0f);
              for (auto& v : x) v = u(g);
              for (auto& v : b) v = u(g);
              Scratch s;
              k::GemvQuant(m, n, kk, x.data(), ldx, k::QuantMatrix{w.data(), ld, kind},
                           with_bias ? b.data() : nullptr, y.data(), ldy, s.Get(k::QuantGemvScratchFloats(m, kk)));
              const std::string what = std::string(scalar ? "scalar " : "simd ") + Name(kind);
              ExpectNearReference(what.c_str(), m, n, kk, x, ldx, wd, with_bias ? b.data() : nullptr, y, ldy);
              for (int64_t i = 0; i < m; ++i) {
                for (int64_t j = n; j < ldy; ++j) ASSERT_EQ(y[i * ldy + j], 7.0f) << "wrote past n";
              }
            }
          }
        }
      }
    }
    k::UseScalarKernels(before);
  }
}

TEST(Quant, GemvWithoutScratchRunsThePlainLoop) {
  std::mt19937 g(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto kind : kKinds) {
    const int64_t n = 9, kk = 96, ld = kk / 32 * BlockBytes(kind);
    const std::vector<uint8_t> w = RandomRows(kind, n, kk, ld, &g);
    std::vector<float> x(2 * kk), y(2 * n);
    for (auto& v : x) v = u(g);
    k::GemvQuant(2, n, kk, x.data(), kk, k::QuantMatrix{w.data(), ld, kind}, nullptr, y.data(), n, nullptr);
    ExpectNearReference(Name(kind), 2, n, kk, x, kk, RefRows(kind, w.data(), ld, n, kk), nullptr, y, n);
  }
}

TEST(Quant, GemmMatchesADoubleReferenceOnBothKernelSets) {
  std::mt19937 g(37);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  struct Shape {
    int64_t m, n, k;
  };
  // (k 768: chunks of 128 columns, so n 300 is three chunks, the last short)
  const Shape shapes[] = {{1, 67, 96}, {2, 5, 32}, {5, 13, 160}, {7, 67, 96}, {7, 300, 768}, {128, 67, 160},
                          {128, 300, 768}};
  for (bool scalar : {false, true}) {
    const bool before = k::UseScalarKernels(scalar);
    for (auto kind : kKinds) {
      for (const Shape& sh : shapes) {
        const int64_t ld = sh.k / 32 * BlockBytes(kind);
        const std::vector<uint8_t> w = RandomRows(kind, sh.n, sh.k, ld, &g);
        const std::vector<double> wd = RefRows(kind, w.data(), ld, sh.n, sh.k);
        const int64_t lda = sh.k + 1, ldc = sh.n + 3;
        std::vector<float> a(sh.m * lda), b(sh.n), c(sh.m * ldc, 7.0f);
        for (auto& v : a) v = u(g);
        for (auto& v : b) v = u(g);
        Scratch s;
        k::GemmQuant(sh.m, sh.n, sh.k, a.data(), lda, k::QuantMatrix{w.data(), ld, kind}, b.data(), c.data(), ldc,
                     s.Get(k::QuantGemmScratchFloats(sh.k, sh.n)));
        const std::string what = std::string(scalar ? "scalar " : "simd ") + Name(kind) + " gemm";
        ExpectNearReference(what.c_str(), sh.m, sh.n, sh.k, a, lda, wd, b.data(), c, ldc);
      }
    }
    k::UseScalarKernels(before);
  }
}

TEST(Quant, SimdMatchesScalar) {
  std::mt19937 g(38);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto kind : kKinds) {
    for (int64_t m : {1, 2, 7, 128}) {
      const int64_t n = 77, kk = 224, ld = kk / 32 * BlockBytes(kind);
      const std::vector<uint8_t> w = RandomRows(kind, n, kk, ld, &g);
      std::vector<float> x(m * kk), ys(m * n), yr(m * n);
      for (auto& v : x) v = u(g);
      for (bool scalar : {false, true}) {
        const bool before = k::UseScalarKernels(scalar);
        attnlab::internal::LinearPackedDriver(m, kk, n, x.data(), [&] {
          k::PackedB pb;
          pb.quant = k::QuantMatrix{w.data(), ld, kind};
          return pb;
        }(), nullptr, scalar ? yr.data() : ys.data());
        k::UseScalarKernels(before);
      }
      for (int64_t i = 0; i < m * n; ++i) {
        double mag = 0.0;
        const int64_t r = i / n, j = i % n;
        for (int64_t p = 0; p < kk; ++p) {
          mag += std::fabs(x[r * kk + p] * RefValue(kind, w.data() + j * ld + (p / 32) * BlockBytes(kind), p % 32));
        }
        ASSERT_NEAR(ys[i], yr[i], 2e-5 * mag) << Name(kind) << " m=" << m << " output " << i;
      }
    }
  }
}

TEST(Quant, LinearDriverOverQuantizedWeights) {
  // 1..4 rows: the GEMV; 5..9: the GEMM over dequantized chunks.
  std::mt19937 g(39);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto kind : kKinds) {
    const int64_t n = 45, kk = 128, ld = kk / 32 * BlockBytes(kind);
    const std::vector<uint8_t> w = RandomRows(kind, n, kk, ld, &g);
    const std::vector<double> wd = RefRows(kind, w.data(), ld, n, kk);
    k::PackedB pb;
    pb.quant = k::QuantMatrix{w.data(), ld, kind};
    for (int64_t rows = 1; rows <= 9; ++rows) {
      std::vector<float> x(rows * kk), b(n), y(rows * n);
      for (auto& v : x) v = u(g);
      for (auto& v : b) v = u(g);
      attnlab::internal::LinearPackedDriver(rows, kk, n, x.data(), pb, b.data(), y.data());
      ExpectNearReference(Name(kind), rows, n, kk, x, kk, wd, b.data(), y, n);
    }
  }
}

// ---------------------------------------------------------------------------
// Whole models.

TransformerConfig TinyGpt2() {
  TransformerConfig c;
  c.vocab_size = 11;
  c.max_length = 12;
  c.embed_dim = 64;
  c.num_heads = 4;
  c.num_layers = 2;
  c.ffn_dim = 96;
  c.causal = true;
  c.positional = attnlab::Positional::kLearned;
  c.prenorm = true;
  c.activation = attnlab::Activation::kGeluTanh;
  c.tie_embeddings = true;
  c.head_bias = false;
  return c;
}
TransformerConfig TinyLlama() {
  TransformerConfig c = TinyGpt2();
  c.positional = attnlab::Positional::kRope;
  c.norm = attnlab::NormKind::kRmsNorm;
  c.activation = attnlab::Activation::kSwiGlu;
  c.qkv_bias = false;
  c.out_bias = false;
  c.ffn_bias = false;
  c.num_kv_heads = 2;
  c.tie_embeddings = false;
  return c;
}

// Writes every parameter of `q` (a packed_weights model) and `f` (the same
// config, float): the 2-D ones with rows a multiple of 32 from random blocks
// of `kind` (q: WriteParamQuant, f: the dequantized floats), the rest from
// the same random floats. Returns the flat dequantized parameters.
std::vector<float> WriteBoth(attnlab::Transformer* q, attnlab::Transformer* f, k::QuantKind kind, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, 0.3f);
  std::vector<float> flat(static_cast<size_t>(q->ParamCount()));
  const auto& infos = q->params();
  for (size_t i = 0; i < infos.size(); ++i) {
    const auto& info = infos[i];
    const int64_t r = info.shape.size() == 2 ? info.shape[0] : 1;
    const int64_t cols = info.shape.size() == 2 ? info.shape[1] : info.shape[0];
    float* dst = flat.data() + info.offset;
    const bool quant = info.shape.size() == 2 && cols % 32 == 0;
    if (quant) {
      const int64_t ld = cols / 32 * BlockBytes(kind);
      // |w| up to about 0.25 (the size of a trained model's weights)
      const std::vector<uint8_t> w = kind == k::QuantKind::kQ8_0 ? RandomRows(kind, r, cols, ld, &g, 3, 5)
                                                                 : RandomRows(kind, r, cols, ld, &g, 7, 9);
      const std::vector<double> wd = RefRows(kind, w.data(), ld, r, cols);
      for (int64_t e = 0; e < r * cols; ++e) dst[e] = static_cast<float>(wd[e]);
      // in two calls, rows [0, r/2) and [r/2, r)
      Status s = q->WriteParamQuant(static_cast<int64_t>(i), 0, r / 2, static_cast<int32_t>(kind), w.data(), r / 2 * ld);
      EXPECT_TRUE(s.ok()) << info.name << ": " << s.message;
      s = q->WriteParamQuant(static_cast<int64_t>(i), r / 2, r - r / 2, static_cast<int32_t>(kind),
                             w.data() + r / 2 * ld, (r - r / 2) * ld);
      EXPECT_TRUE(s.ok()) << info.name << ": " << s.message;
    } else {
      for (int64_t e = 0; e < r * cols; ++e) dst[e] = info.name.find("norm") != std::string::npos ? 1.0f + nd(g) : nd(g);
      EXPECT_TRUE(q->WriteParam(static_cast<int64_t>(i), 0, r, dst, cols, false).ok());
    }
    EXPECT_TRUE(f->WriteParam(static_cast<int64_t>(i), 0, r, dst, cols, false).ok()) << info.name;
  }
  return flat;
}

void ExpectSameLogits(attnlab::Transformer* a, attnlab::Transformer* b, int64_t V, const char* what) {
  const int64_t L = 7;
  std::vector<int32_t> tok(L);
  for (int64_t i = 0; i < L; ++i) tok[i] = static_cast<int32_t>((i * 5 + 2) % V);
  for (int64_t rows : {int64_t{1}, int64_t{2}, L}) {  // GEMV, GEMV, GEMM
    std::vector<float> x(rows * V), y(rows * V);
    ASSERT_TRUE(a->Forward(1, rows, tok.data(), x.data(), nullptr).ok());
    ASSERT_TRUE(b->Forward(1, rows, tok.data(), y.data(), nullptr).ok());
    for (int64_t i = 0; i < rows * V; ++i) {
      ASSERT_NEAR(x[i], y[i], 1e-5 * std::max(1.0f, std::fabs(x[i]))) << what << " rows " << rows << " logit " << i;
    }
  }
  // cached decoding: a prefill of 4, then one token at a time
  std::vector<float> x(V), y(V);
  ASSERT_TRUE(a->Extend(0, 4, tok.data(), true, x.data(), nullptr, nullptr).ok());
  ASSERT_TRUE(b->Extend(0, 4, tok.data(), true, y.data(), nullptr, nullptr).ok());
  for (int64_t t = 4; t < L; ++t) {
    ASSERT_TRUE(a->Extend(t, 1, tok.data() + t, true, x.data(), nullptr, nullptr).ok());
    ASSERT_TRUE(b->Extend(t, 1, tok.data() + t, true, y.data(), nullptr, nullptr).ok());
    for (int64_t i = 0; i < V; ++i) ASSERT_NEAR(x[i], y[i], 1e-5 * std::max(1.0f, std::fabs(x[i]))) << what << " step " << t;
  }
}

TEST(Quant, ModelFromBlocksEqualsModelFromTheirFloats) {
  for (bool scalar : {false, true}) {
    const bool before = k::UseScalarKernels(scalar);
    for (auto kind : kKinds) {
      for (const TransformerConfig& base : {TinyGpt2(), TinyLlama()}) {
        TransformerConfig c = base;
        c.init_weights = false;
        Status s;
        auto plain = attnlab::Transformer::Create(c, &s);
        ASSERT_TRUE(s.ok()) << s.message;
        c.packed_weights = true;
        auto quant = attnlab::Transformer::Create(c, &s);
        ASSERT_TRUE(s.ok()) << s.message;
        const int64_t before_bytes = quant->HeldBytes();
        const std::vector<float> flat = WriteBoth(quant.get(), plain.get(), kind, 7);
        ASSERT_TRUE(quant->CheckParams().ok());
        std::vector<float> back(flat.size());
        quant->CopyParams(back.data());
        EXPECT_EQ(back, flat) << "CopyParams gives the dequantized values";
        // the blocks are what is held: Q8_0 34 and Q4_0 18 bytes a 32 values
        const int64_t held = quant->HeldBytes() - before_bytes;
        int64_t quant_values = 0;
        for (const auto& info : quant->params()) {
          if (info.packed && info.shape[1] % 32 == 0) quant_values += info.shape[0] * info.shape[1];
        }
        EXPECT_GE(held, quant_values / 32 * BlockBytes(kind));
        EXPECT_LT(held, quant_values / 32 * BlockBytes(kind) + 64 * 64);
        const std::string what = std::string(scalar ? "scalar " : "simd ") + Name(kind) + (c.tie_embeddings ? " gpt2" : " llama");
        ExpectSameLogits(plain.get(), quant.get(), c.vocab_size, what.c_str());
        EXPECT_FALSE(quant->SetParams(flat.data()).ok()) << "setWeights over blocks";
      }
    }
    k::UseScalarKernels(before);
  }
}

TEST(Quant, WriteParamQuantRefusesBadInput) {
  TransformerConfig c = TinyLlama();
  c.init_weights = false;
  c.packed_weights = true;
  c.ffn_dim = 80;  // w2 [64, 80]: rows of 80 values
  Status s;
  auto t = attnlab::Transformer::Create(c, &s);
  ASSERT_TRUE(s.ok()) << s.message;
  int64_t wq = -1, w2 = -1, norm = -1;
  for (size_t i = 0; i < t->params().size(); ++i) {
    const std::string& n = t->params()[i].name;
    if (wq < 0 && n.find("attn.wq") != std::string::npos) wq = static_cast<int64_t>(i);
    if (w2 < 0 && n.find("ffn.w2") != std::string::npos) w2 = static_cast<int64_t>(i);
    if (norm < 0 && n.find("norm") != std::string::npos) norm = static_cast<int64_t>(i);
  }
  ASSERT_GE(wq, 0);
  ASSERT_GE(w2, 0);
  std::mt19937 g(1);
  const int64_t ld8 = 2 * 34, ld4 = 2 * 18;  // a row of 64 values
  std::vector<uint8_t> q8 = RandomRows(k::QuantKind::kQ8_0, 64, 64, ld8, &g);
  std::vector<uint8_t> q4 = RandomRows(k::QuantKind::kQ4_0, 64, 64, ld4, &g);
  auto bad = [&](const Status& st, const char* has) {
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message.find(has), std::string::npos) << st.message;
  };
  bad(t->WriteParamQuant(wq, 0, 2, 8, q8.data(), 2 * ld8 - 1), "bytes");
  bad(t->WriteParamQuant(wq, 0, 2, 3, q8.data(), 2 * ld8), "kind must be 8 (Q8_0), 2 (Q4_0), 12 (Q4_K) or 14 (Q6_K)");
  bad(t->WriteParamQuant(wq, 63, 2, 8, q8.data(), 2 * ld8), "do not fit");
  bad(t->WriteParamQuant(w2, 0, 1, 8, q8.data(), 85), "not a multiple of 32");
  bad(t->WriteParamQuant(999, 0, 1, 8, q8.data(), ld8), "no parameter 999");
  std::vector<uint8_t> inf = q8;
  inf[ld8 + 34] = 0x00;
  inf[ld8 + 35] = 0x7c;  // row 1, block 1: d = +Inf
  bad(t->WriteParamQuant(wq, 0, 2, 8, inf.data(), 2 * ld8), "finite");
  ASSERT_TRUE(t->WriteParamQuant(wq, 0, 2, 8, q8.data(), 2 * ld8).ok());
  bad(t->WriteParamQuant(wq, 2, 2, 2, q4.data(), 2 * ld4), "one kind");
  std::vector<float> row(64, 0.5f);
  bad(t->WriteParam(wq, 3, 1, row.data(), 64, false), "writeParamQuant");
  // all rows at once: the projection changes kind (Q8_0 → Q4_0)
  ASSERT_TRUE(t->WriteParamQuant(wq, 0, 64, 2, q4.data(), 64 * ld4).ok());
  {
    std::vector<float> flat(static_cast<size_t>(t->ParamCount()));
    t->CopyParams(flat.data());
    const std::vector<double> ref = RefRows(k::QuantKind::kQ4_0, q4.data(), ld4, 64, 64);
    for (int64_t p = 0; p < 64 * 64; ++p) ASSERT_EQ(flat[t->params()[wq].offset + p], static_cast<float>(ref[p]));
  }
  // a parameter held as floats takes the dequantized values
  ASSERT_GE(norm, 0);
  ASSERT_TRUE(t->WriteParamQuant(norm, 0, 1, 8, q8.data(), ld8).ok());
  std::vector<float> flat(static_cast<size_t>(t->ParamCount()));
  t->CopyParams(flat.data());
  const std::vector<double> ref = RefRows(k::QuantKind::kQ8_0, q8.data(), ld8, 1, 64);
  for (int64_t p = 0; p < 64; ++p) EXPECT_EQ(flat[t->params()[norm].offset + p], static_cast<float>(ref[p]));
}

}  // namespace

// 16-bit packed weights (PackedB::half, src/kernels/kernels.h): HalfToFloat
// on every finite F16 and BF16 bit pattern against a decoding written from
// the formats' definitions (sign · 2^(e - bias) · 1.m, subnormals 0.m); and
// GemvPacked / Gemm over 16-bit panels on both kernel sets: within rounding
// of a double reference, and (SIMD) equal bit for bit to the same products
// over float32 panels of the widened values, so a 16-bit checkpoint kept in
// 16 bits computes what its float32 conversion computes. Sizes below,
// at and above the panel width, the 4-panel block of the GEMV, the GEMM's
// row block (128) and its column slices (GemmBlockHalf).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "internal.h"
#include "kernels/kernels.h"

namespace {

namespace k = attnlab::kernels;
using k::HalfKind;

// The formats' definitions, in double.
double DecodeF16(uint16_t h) {
  const int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}
double DecodeBF16(uint16_t h) {
  const int sign = h >> 15, e = (h >> 7) & 255, m = h & 127;
  const double v = e == 0 ? std::ldexp(m, -133) : std::ldexp(128 + m, e - 134);
  return sign ? -v : v;
}

TEST(HalfToFloat, EveryFiniteF16AndBF16PatternExactly) {
  int f16 = 0, bf16 = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto v = static_cast<uint16_t>(h);
    if (k::IsHalfFinite(v, HalfKind::kF16)) {
      ++f16;
      ASSERT_EQ(static_cast<double>(k::HalfToFloat(v, HalfKind::kF16)), DecodeF16(v)) << "F16 0x" << std::hex << h;
      ASSERT_EQ(std::signbit(k::HalfToFloat(v, HalfKind::kF16)), (h >> 15) != 0) << "F16 sign 0x" << std::hex << h;
    }
    if (k::IsHalfFinite(v, HalfKind::kBF16)) {
      ++bf16;
      ASSERT_EQ(static_cast<double>(k::HalfToFloat(v, HalfKind::kBF16)), DecodeBF16(v)) << "BF16 0x" << std::hex << h;
    }
  }
  EXPECT_EQ(f16, 65536 - 2048);   // exponent 31: Inf and NaN
  EXPECT_EQ(bf16, 65536 - 256);   // exponent 255
}

// A random finite 16-bit value: F16 over its whole range (subnormals and
// signed zeros included); BF16 with exponents near 1 (no float overflow).
uint16_t RandomHalf(std::mt19937& g, HalfKind kind) {
  for (;;) {
    const auto h = static_cast<uint16_t>(g());
    if (kind == HalfKind::kF16) {
      if (k::IsHalfFinite(h, kind)) return h;
    } else {
      const int e = (h >> 7) & 255;
      if (e == 0 || (e > 110 && e < 135)) return h;
    }
  }
}

struct HalfPanels {
  std::vector<uint16_t> store;
  k::PackedB b;
};

// W [n, k] (torch layout) of 16-bit values packed as B [k, n] in this kernel
// set's panels (GemmNr), in HalfLane order, 64-byte aligned.
HalfPanels PackHalf(const std::vector<uint16_t>& w, int64_t n, int64_t kk, HalfKind kind) {
  HalfPanels p;
  const int64_t nr = k::GemmNr(n), elems = k::PackedFloats(kk, n);
  p.store.assign(static_cast<size_t>(elems + 64), 0);
  auto base = reinterpret_cast<uintptr_t>(p.store.data());
  auto* data = reinterpret_cast<uint16_t*>((base + 63) & ~uintptr_t{63});
  p.b = k::PackedB{nullptr, nr, kk * nr, data, kind};
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t q = 0; q < kk; ++q) data[k::HalfOffset(p.b, q, j)] = w[j * kk + q];
  }
  return p;
}

struct Case {
  std::vector<float> x, bias, wf;  // wf: the 16-bit weights widened, [n, k]
  std::vector<uint16_t> w;
};

Case MakeCase(std::mt19937& g, int64_t m, int64_t n, int64_t kk, HalfKind kind) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Case c;
  c.x.resize(m * kk);
  c.bias.resize(n);
  c.w.resize(n * kk);
  c.wf.resize(n * kk);
  for (auto& v : c.x) v = u(g);
  for (auto& v : c.bias) v = u(g);
  for (size_t i = 0; i < c.w.size(); ++i) {
    c.w[i] = RandomHalf(g, kind);
    c.wf[i] = static_cast<float>(kind == HalfKind::kF16 ? DecodeF16(c.w[i]) : DecodeBF16(c.w[i]));
  }
  return c;
}

// y from the float32 panels of the widened weights (the reference path).
std::vector<float> FloatProduct(const Case& c, int64_t m, int64_t n, int64_t kk, bool gemv) {
  attnlab::internal::AlignedBuffer pack;
  EXPECT_TRUE(pack.Reserve(k::PackedFloats(kk, n)));
  const k::PackedB pb = k::PackB(kk, n, c.wf.data(), 1, kk, pack.data());
  std::vector<float> y(m * n);
  if (gemv) {
    k::GemvPacked(m, n, kk, c.x.data(), kk, pb, c.bias.data(), y.data(), n);
  } else {
    k::Gemm(m, n, kk, c.x.data(), kk, pb, c.bias.data(), y.data(), n);
  }
  return y;
}

void CheckAgainstDouble(const Case& c, const std::vector<float>& y, int64_t m, int64_t n, int64_t kk,
                        const char* what) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = c.bias[j], mag = std::fabs(c.bias[j]);
      for (int64_t q = 0; q < kk; ++q) {
        s += static_cast<double>(c.x[i * kk + q]) * c.wf[j * kk + q];
        mag += std::fabs(static_cast<double>(c.x[i * kk + q]) * c.wf[j * kk + q]);
      }
      ASSERT_NEAR(y[i * n + j], s, 2e-6 * mag + 1e-30) << what << " (" << i << "," << j << ")";
    }
  }
}

void RunHalfProducts(bool gemv, std::initializer_list<int64_t> ms, std::initializer_list<int64_t> ns,
                     std::initializer_list<int64_t> ks) {
  std::mt19937 g(gemv ? 11 : 13);
  for (bool scalar : {false, true}) {
    const bool before = k::UseScalarKernels(scalar);
    for (HalfKind kind : {HalfKind::kF16, HalfKind::kBF16}) {
      for (int64_t m : ms) {
        for (int64_t n : ns) {
          for (int64_t kk : ks) {
            const Case c = MakeCase(g, m, n, kk, kind);
            const HalfPanels hp = PackHalf(c.w, n, kk, kind);
            std::vector<float> y(m * n, 7.0f);
            if (gemv) {
              k::GemvPacked(m, n, kk, c.x.data(), kk, hp.b, c.bias.data(), y.data(), n);
            } else {
              k::Gemm(m, n, kk, c.x.data(), kk, hp.b, c.bias.data(), y.data(), n);
            }
            const std::vector<float> ref = FloatProduct(c, m, n, kk, gemv);
            const std::string what = std::string(scalar ? "scalar" : "simd") + (kind == HalfKind::kF16 ? " F16" : " BF16") +
                                     " m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(kk);
            // The SIMD kernels: the same vector expressions over the widened
            // values, so the same bits. (The scalar loops are left to the
            // compiler, which may contract them into FMAs differently
            // natively; wasm has no FMA, and Jest checks the bits there.)
            if (!scalar) {
              ASSERT_EQ(0, std::memcmp(y.data(), ref.data(), y.size() * sizeof(float)))
                  << what << ": not the bits of the float32 panels";
            }
            CheckAgainstDouble(c, y, m, n, kk, what.c_str());
          }
        }
      }
    }
    k::UseScalarKernels(before);
  }
}

TEST(GemvPackedHalf, EqualsTheFloatPanelsBitForBit) {
  RunHalfProducts(true, {1, 2, 3, 4}, {1, 7, 8, 9, 33, 70}, {1, 3, 64, 97});
}

TEST(GemmHalf, EqualsTheFloatPanelsBitForBit) {
  // n 200 with k 3000 runs GemmBlockHalf over several column slices.
  RunHalfProducts(false, {5, 64, 130}, {1, 17, 200}, {3, 97, 3000});
}

// GemvTHalf (a tied LM head kept in 16 bits): W [n, k] in rows of the
// active set's HalfRowGroup order; the same bits as GemvT over the widened
// values in torch layout, on both kernel sets (the SIMD set: its lane
// chains and horizontal sums; the scalar set: the plain k-order dot product),
// for row blocks of 4 and their tail, one to four x rows, with and without
// a bias.
TEST(GemvTHalf, EqualsGemvTOverTheWidenedRowsBitForBit) {
  std::mt19937 g(17);
  for (bool scalar : {false, true}) {
    const bool before = k::UseScalarKernels(scalar);
    const int64_t group = k::HalfRowGroup();
    for (HalfKind kind : {HalfKind::kF16, HalfKind::kBF16}) {
      for (int64_t m : {1, 2, 3, 4}) {
        for (int64_t n : {1, 3, 4, 9, 70}) {
          for (int64_t kk : {group, 4 * group, 48 * group}) {
            const Case c = MakeCase(g, m, n, kk, kind);
            attnlab::internal::AlignedBuffer buf;
            ASSERT_TRUE(buf.Reserve((n * kk + 1) / 2));
            uint16_t* rows = reinterpret_cast<uint16_t*>(buf.data());
            const k::HalfMatrix w{rows, kk, group, kind};
            for (int64_t j = 0; j < n; ++j) {
              for (int64_t q = 0; q < kk; ++q) rows[j * kk + k::HalfRowOffset(w, q)] = c.w[j * kk + q];
            }
            for (bool bias : {false, true}) {
              const float* b = bias ? c.bias.data() : nullptr;
              std::vector<float> y(m * n, 7.0f), ref(m * n, 9.0f);
              k::GemvTHalf(m, n, kk, c.x.data(), kk, w, b, y.data(), n);
              k::GemvT(m, n, kk, c.x.data(), kk, c.wf.data(), kk, b, ref.data(), n);
              const std::string what = std::string(scalar ? "scalar" : "simd") +
                                       (kind == HalfKind::kF16 ? " F16" : " BF16") + " m=" + std::to_string(m) +
                                       " n=" + std::to_string(n) + " k=" + std::to_string(kk);
              if (!scalar) {  // (the scalar loops: see RunHalfProducts)
                ASSERT_EQ(0, std::memcmp(y.data(), ref.data(), y.size() * sizeof(float)))
                    << what << ": not the bits of GemvT";
              }
              if (bias) CheckAgainstDouble(c, y, m, n, kk, what.c_str());
            }
          }
        }
      }
    }
    k::UseScalarKernels(before);
  }
}

TEST(HalfLane, PairsColumnsHalfAPanelApart) {
  EXPECT_EQ(k::HalfLane(8, 0), 0);
  EXPECT_EQ(k::HalfLane(8, 4), 1);
  EXPECT_EQ(k::HalfLane(8, 3), 6);
  EXPECT_EQ(k::HalfLane(8, 7), 7);
  EXPECT_EQ(k::HalfLane(5, 3), 3);  // odd widths keep their order
  std::vector<int> seen(16, 0);
  for (int c = 0; c < 16; ++c) ++seen[static_cast<size_t>(k::HalfLane(16, c))];
  for (int s : seen) EXPECT_EQ(s, 1);
}

}  // namespace

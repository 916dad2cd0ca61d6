// Argument validation of every entry point: each invalid argument returns a
// non-OK Status (kInvalidArgument, or kOutOfMemory for sizes) whose message
// names the argument, nothing is written to the outputs, and no memory is
// kept. Sizes whose element count overflows int64 or whose tensor would
// exceed kMaxBufferBytes are refused before any allocation.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "attention_lab.h"
#include "reference.h"

namespace attnlab_test {
namespace {

using attnlab::LayerConfig;
using attnlab::LayerForwardArgs;
using attnlab::MaskKind;
using attnlab::MhaConfig;
using attnlab::MhaForwardArgs;
using attnlab::MultiHeadAttention;
using attnlab::SdpaArgs;
using attnlab::SelfAttentionLayer;
using attnlab::Status;
using attnlab::StatusCode;
using attnlab::WeightId;
using attnlab::WeightLayout;

constexpr StatusCode kInvalid = StatusCode::kInvalidArgument;
constexpr StatusCode kOom = StatusCode::kOutOfMemory;
constexpr int64_t kHuge = int64_t{1} << 40;
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInfF = std::numeric_limits<float>::infinity();

bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// `name` occurs in `msg` as a whole word (not inside a longer identifier).
bool NamesArgument(const std::string& msg, const std::string& name) {
  for (size_t pos = msg.find(name); pos != std::string::npos; pos = msg.find(name, pos + 1)) {
    const bool left = pos == 0 || !IsIdent(msg[pos - 1]) || !IsIdent(name.front());
    const size_t end = pos + name.size();
    const bool right = end == msg.size() || !IsIdent(msg[end]) || !IsIdent(name.back());
    if (left && right) return true;
  }
  return false;
}

// `names` lists acceptable argument names separated by '|'.
::testing::AssertionResult IsError(const Status& s, StatusCode code, const std::string& names) {
  if (s.ok()) return ::testing::AssertionFailure() << "returned OK, expected an error naming '" << names << "'";
  if (s.code != code) {
    return ::testing::AssertionFailure() << "code " << static_cast<int>(s.code) << ", expected "
                                         << static_cast<int>(code) << " (message: " << s.message << ")";
  }
  size_t start = 0;
  while (true) {
    const size_t bar = names.find('|', start);
    const std::string name = names.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    if (NamesArgument(s.message, name)) return ::testing::AssertionSuccess() << s.message;
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return ::testing::AssertionFailure() << "message \"" << s.message << "\" does not name '" << names << "'";
}

// ---------------------------------------------------------------------------
// ScaledDotProductAttention

struct SdpaFixture {
  static constexpr int64_t B = 2, H = 1, Lq = 3, Lk = 4, D = 2, Dv = 2;
  std::vector<float> q = std::vector<float>(B * H * Lq * D, 0.5f);
  std::vector<float> k = std::vector<float>(B * H * Lk * D, 0.25f);
  std::vector<float> v = std::vector<float>(B * H * Lk * Dv, 1.0f);
  std::vector<float> out = std::vector<float>(B * H * Lq * Dv, kSentinel);
  std::vector<float> w = std::vector<float>(B * H * Lq * Lk, kSentinel);
  SdpaArgs Args() {
    SdpaArgs a;
    a.batch = B;
    a.heads = H;
    a.lq = Lq;
    a.lk = Lk;
    a.d = D;
    a.dv = Dv;
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.output = out.data();
    a.weights = w.data();
    return a;
  }
};

TEST(Validation, ScaledDotProductAttention) {
  SdpaFixture f;
  const int32_t neg_len[2] = {-1, 2};
  const int32_t long_len[2] = {4, 5};
  const float mask4[4] = {1, 1, 0, 1};
  struct Case {
    const char* what;
    std::function<void(SdpaArgs&)> mutate;
    StatusCode code;
    const char* name;
  };
  const std::vector<Case> cases = {
      {"batch 0", [](SdpaArgs& a) { a.batch = 0; }, kInvalid, "batch"},
      {"batch -3", [](SdpaArgs& a) { a.batch = -3; }, kInvalid, "batch"},
      {"heads 0", [](SdpaArgs& a) { a.heads = 0; }, kInvalid, "heads"},
      {"lq 0", [](SdpaArgs& a) { a.lq = 0; }, kInvalid, "Lq"},
      {"lk 0", [](SdpaArgs& a) { a.lk = 0; }, kInvalid, "Lk"},
      {"d 0", [](SdpaArgs& a) { a.d = 0; }, kInvalid, "D"},
      {"dv -1", [](SdpaArgs& a) { a.dv = -1; }, kInvalid, "Dv"},
      {"q null", [](SdpaArgs& a) { a.q = nullptr; }, kInvalid, "q"},
      {"k null", [](SdpaArgs& a) { a.k = nullptr; }, kInvalid, "k"},
      {"v null", [](SdpaArgs& a) { a.v = nullptr; }, kInvalid, "v"},
      {"output null", [](SdpaArgs& a) { a.output = nullptr; }, kInvalid, "output"},
      {"scale NaN", [](SdpaArgs& a) { a.has_scale = true; a.scale = kNaN; }, kInvalid, "scale"},
      {"scale inf", [](SdpaArgs& a) { a.has_scale = true; a.scale = kInfF; }, kInvalid, "scale"},
      {"length -1", [&](SdpaArgs& a) { a.mask.lengths = neg_len; }, kInvalid, "mask.lengths[0]"},
      {"length > Lk", [&](SdpaArgs& a) { a.mask.lengths = long_len; }, kInvalid, "mask.lengths[1]"},
      {"mask kind 7", [&](SdpaArgs& a) { a.mask.kind = static_cast<MaskKind>(7); a.mask.data = mask4; a.mask.shape[3] = 4; }, kInvalid, "mask.kind"},
      {"mask kind -1", [&](SdpaArgs& a) { a.mask.kind = static_cast<MaskKind>(-1); a.mask.data = mask4; a.mask.shape[3] = 4; }, kInvalid, "mask.kind"},
      {"mask data null", [](SdpaArgs& a) { a.mask.kind = MaskKind::kKeep; a.mask.shape[3] = 4; }, kInvalid, "mask.data"},
      {"mask Lk mismatch", [&](SdpaArgs& a) { a.mask.kind = MaskKind::kBlock; a.mask.data = mask4; a.mask.shape[3] = 5; }, kInvalid, "mask"},
      {"mask B mismatch", [&](SdpaArgs& a) { a.mask.kind = MaskKind::kKeep; a.mask.data = mask4; a.mask.shape[0] = 3; a.mask.shape[3] = 4; }, kInvalid, "mask"},
      {"mask Lq mismatch", [&](SdpaArgs& a) { a.mask.kind = MaskKind::kAdditive; a.mask.data = mask4; a.mask.shape[2] = 2; a.mask.shape[3] = 2; }, kInvalid, "mask"},
      {"mask dim 0", [&](SdpaArgs& a) { a.mask.kind = MaskKind::kAdditive; a.mask.data = mask4; a.mask.shape[1] = 0; }, kInvalid, "mask"},
      {"mask dim -1", [&](SdpaArgs& a) { a.mask.kind = MaskKind::kAdditive; a.mask.data = mask4; a.mask.shape[3] = -1; }, kInvalid, "mask"},
      // Sizes: int64 overflow and > kMaxBufferBytes, refused before any work.
      {"q overflows", [](SdpaArgs& a) { a.lq = kHuge; a.d = kHuge; }, kOom, "q"},
      {"B*H overflows", [](SdpaArgs& a) { a.batch = int64_t{1} << 62; a.heads = 8; }, kOom, "q"},
      {"q > 1 GiB", [](SdpaArgs& a) { a.lq = int64_t{1} << 15; a.d = (int64_t{1} << 13) + 1; }, kOom, "q"},
      {"k > 1 GiB", [](SdpaArgs& a) { a.lk = int64_t{1} << 20; a.d = 1 << 9; }, kOom, "k"},
      {"v > 1 GiB", [](SdpaArgs& a) { a.lk = int64_t{1} << 20; a.dv = 1 << 9; }, kOom, "v"},
      {"output > 1 GiB", [](SdpaArgs& a) { a.lq = int64_t{1} << 20; a.dv = 1 << 9; }, kOom, "output"},
      {"weights > 1 GiB", [](SdpaArgs& a) { a.lq = int64_t{1} << 15; a.lk = int64_t{1} << 14; }, kOom, "weights"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    SdpaArgs a = f.Args();
    c.mutate(a);
    EXPECT_TRUE(IsError(attnlab::ScaledDotProductAttention(a), c.code, c.name));
    EXPECT_TRUE(Untouched(f.out.data(), static_cast<int64_t>(f.out.size()))) << "output written";
    EXPECT_TRUE(Untouched(f.w.data(), static_cast<int64_t>(f.w.size()))) << "weights written";
  }
  // The fixture itself is valid.
  SdpaArgs a = f.Args();
  EXPECT_TRUE(attnlab::ScaledDotProductAttention(a).ok());
}

// ---------------------------------------------------------------------------
// MultiHeadAttention

TEST(Validation, MhaCreate) {
  struct Case {
    const char* what;
    MhaConfig cfg;
    StatusCode code;
    const char* name;
  };
  auto cfg = [](int64_t e, int64_t h, int64_t kd = 0, int64_t vd = 0) {
    MhaConfig c;
    c.embed_dim = e;
    c.num_heads = h;
    c.kdim = kd;
    c.vdim = vd;
    return c;
  };
  const std::vector<Case> cases = {
      {"E 0", cfg(0, 1), kInvalid, "embedDim"},
      {"E -4", cfg(-4, 1), kInvalid, "embedDim"},
      {"H 0", cfg(8, 0), kInvalid, "numHeads"},
      {"H -2", cfg(8, -2), kInvalid, "numHeads"},
      {"E % H", cfg(10, 4), kInvalid, "numHeads"},
      {"H > E", cfg(4, 8), kInvalid, "embedDim"},
      {"kdim -1", cfg(8, 2, -1), kInvalid, "kdim"},
      {"vdim -1", cfg(8, 2, 0, -1), kInvalid, "vdim"},
      // Sizes: one weight over kMaxBufferBytes, an overflowing dim, and (E =
      // 8192) weights plus packed copies over kMaxCallBytes although each
      // single buffer is below kMaxBufferBytes.
      {"E huge", cfg(int64_t{1} << 15, 1), kOom, "embedDim|weight"},
      {"kdim huge", cfg(8, 2, kHuge), kOom, "kdim|weight"},
      {"vdim overflow", cfg(8, 2, 0, int64_t{1} << 62), kOom, "vdim|weight"},
      {"E overflow (3·E)", cfg(int64_t{1} << 62, 1), kOom, "embedDim|weight"},
      {"E 8192 total", cfg(8192, 1), kOom, "embedDim|weight|weights"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Status s;
    auto m = MultiHeadAttention::Create(c.cfg, &s);
    EXPECT_EQ(m, nullptr);
    EXPECT_TRUE(IsError(s, c.code, c.name));
  }
}

struct MhaFixture {
  static constexpr int64_t B = 2, Lq = 3, Lk = 5, E = 8, H = 2;
  std::unique_ptr<MultiHeadAttention> m;
  std::vector<float> q = std::vector<float>(B * Lq * E, 0.5f);
  std::vector<float> kv = std::vector<float>(B * Lk * E, 0.25f);
  std::vector<float> out = std::vector<float>(B * Lq * E, kSentinel);
  std::vector<float> w = std::vector<float>(B * H * Lq * Lk, kSentinel);
  MhaFixture() {
    MhaConfig c;
    c.embed_dim = E;
    c.num_heads = H;
    Status s;
    m = MultiHeadAttention::Create(c, &s);
  }
  MhaForwardArgs Args() {
    MhaForwardArgs a;
    a.batch = B;
    a.lq = Lq;
    a.lk = Lk;
    a.query = q.data();
    a.key = kv.data();
    a.value = kv.data();
    a.output = out.data();
    a.weights = w.data();
    return a;
  }
};

TEST(Validation, MhaForward) {
  MhaFixture f;
  ASSERT_NE(f.m, nullptr);
  // Warm the scratch so that HeldBytes is at its steady state for this shape.
  {
    std::vector<float> o(f.out.size());
    MhaForwardArgs a = f.Args();
    a.output = o.data();
    a.weights = nullptr;
    ASSERT_TRUE(f.m->Forward(a).ok());
  }
  const int64_t held = f.m->HeldBytes();
  const int32_t bad_len[2] = {5, 6};
  const float mask[5] = {1, 1, 1, 1, 1};
  struct Case {
    const char* what;
    std::function<void(MhaForwardArgs&)> mutate;
    StatusCode code;
    const char* name;
  };
  const std::vector<Case> cases = {
      {"batch 0", [](MhaForwardArgs& a) { a.batch = 0; }, kInvalid, "batch"},
      {"lq 0", [](MhaForwardArgs& a) { a.lq = 0; }, kInvalid, "Lq"},
      {"lk -1", [](MhaForwardArgs& a) { a.lk = -1; }, kInvalid, "Lk"},
      {"query null", [](MhaForwardArgs& a) { a.query = nullptr; }, kInvalid, "query"},
      {"key null", [](MhaForwardArgs& a) { a.key = nullptr; }, kInvalid, "key"},
      {"value null", [](MhaForwardArgs& a) { a.value = nullptr; }, kInvalid, "value"},
      {"output null", [](MhaForwardArgs& a) { a.output = nullptr; }, kInvalid, "output"},
      {"length > Lk", [&](MhaForwardArgs& a) { a.mask.lengths = bad_len; }, kInvalid, "mask.lengths[1]"},
      {"mask H mismatch", [&](MhaForwardArgs& a) { a.mask.kind = MaskKind::kKeep; a.mask.data = mask; a.mask.shape[1] = 3; a.mask.shape[3] = 5; }, kInvalid, "mask"},
      {"mask data null", [](MhaForwardArgs& a) { a.mask.kind = MaskKind::kAdditive; }, kInvalid, "mask.data"},
      {"query overflow", [](MhaForwardArgs& a) { a.lq = kHuge; a.batch = kHuge; }, kOom, "query"},
      {"query > 1 GiB", [](MhaForwardArgs& a) { a.lq = int64_t{1} << 26; }, kOom, "query"},
      {"key > 1 GiB", [](MhaForwardArgs& a) { a.lk = int64_t{1} << 26; }, kOom, "key"},
      {"weights > 1 GiB", [](MhaForwardArgs& a) { a.lq = int64_t{1} << 14; a.lk = int64_t{1} << 14; }, kOom, "weights"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    MhaForwardArgs a = f.Args();
    c.mutate(a);
    EXPECT_TRUE(IsError(f.m->Forward(a), c.code, c.name));
    EXPECT_TRUE(Untouched(f.out.data(), static_cast<int64_t>(f.out.size()))) << "output written";
    EXPECT_TRUE(Untouched(f.w.data(), static_cast<int64_t>(f.w.size()))) << "weights written";
    EXPECT_EQ(f.m->HeldBytes(), held) << "memory kept after a refused call";
  }
  EXPECT_TRUE(f.m->Forward(f.Args()).ok());
}

TEST(Validation, MhaSetAndGetWeight) {
  MhaConfig c;
  c.embed_dim = 4;
  c.num_heads = 2;
  c.bias = false;
  c.seed = 9;
  Status s;
  auto m = MultiHeadAttention::Create(c, &s);
  ASSERT_NE(m, nullptr) << s.message;
  std::vector<float> before(16), after(16);
  ASSERT_TRUE(m->GetWeight(WeightId::kWq, WeightLayout::kTorch, before.data()).ok());
  const float data[16] = {};
  EXPECT_TRUE(IsError(m->SetWeight(WeightId::kWq, nullptr, WeightLayout::kTorch), kInvalid, "wq"));
  EXPECT_TRUE(IsError(m->SetWeight(WeightId::kWo, nullptr, WeightLayout::kKeras), kInvalid, "wo"));
  EXPECT_TRUE(IsError(m->SetWeight(WeightId::kBq, data, WeightLayout::kTorch), kInvalid, "bq"));
  EXPECT_TRUE(IsError(m->SetWeight(WeightId::kBo, data, WeightLayout::kTorch), kInvalid, "bo"));
  EXPECT_TRUE(IsError(m->SetWeight(static_cast<WeightId>(8), data, WeightLayout::kTorch), kInvalid, "weight"));
  EXPECT_TRUE(IsError(m->SetWeight(static_cast<WeightId>(-1), data, WeightLayout::kTorch), kInvalid, "weight"));
  EXPECT_TRUE(IsError(m->GetWeight(WeightId::kWk, WeightLayout::kTorch, nullptr), kInvalid, "out"));
  EXPECT_TRUE(IsError(m->GetWeight(static_cast<WeightId>(9), WeightLayout::kTorch, after.data()), kInvalid, "weight"));
  ASSERT_TRUE(m->GetWeight(WeightId::kWq, WeightLayout::kTorch, after.data()).ok());
  EXPECT_EQ(before, after) << "a refused SetWeight changed the weights";
}

// ---------------------------------------------------------------------------
// SelfAttentionLayer

TEST(Validation, LayerCreate) {
  auto make = [](float p, float eps, int64_t e = 8, int64_t h = 2, int64_t kdim = 0, int64_t vdim = 0) {
    LayerConfig c;
    c.mha.embed_dim = e;
    c.mha.num_heads = h;
    c.mha.kdim = kdim;
    c.mha.vdim = vdim;
    c.dropout = p;
    c.eps = eps;
    Status s;
    auto layer = SelfAttentionLayer::Create(c, &s);
    EXPECT_EQ(layer, nullptr);
    return s;
  };
  EXPECT_TRUE(IsError(make(-0.1f, 1e-5f), kInvalid, "dropout"));
  EXPECT_TRUE(IsError(make(1.0f, 1e-5f), kInvalid, "dropout"));
  EXPECT_TRUE(IsError(make(kNaN, 1e-5f), kInvalid, "dropout"));
  EXPECT_TRUE(IsError(make(0.1f, 0.0f), kInvalid, "eps"));
  EXPECT_TRUE(IsError(make(0.1f, -1e-5f), kInvalid, "eps"));
  EXPECT_TRUE(IsError(make(0.1f, kNaN), kInvalid, "eps"));
  EXPECT_TRUE(IsError(make(0.1f, kInfF), kInvalid, "eps"));
  EXPECT_TRUE(IsError(make(0.1f, 1e-5f, 8, 2, 5), kInvalid, "kdim"));
  EXPECT_TRUE(IsError(make(0.1f, 1e-5f, 8, 2, 0, 3), kInvalid, "vdim"));
  EXPECT_TRUE(IsError(make(0.1f, 1e-5f, 0, 2), kInvalid, "embedDim"));
  EXPECT_TRUE(IsError(make(0.1f, 1e-5f, 6, 4), kInvalid, "numHeads"));
}

TEST(Validation, LayerForward) {
  LayerConfig c;
  c.mha.embed_dim = 8;
  c.mha.num_heads = 2;
  Status s;
  auto layer = SelfAttentionLayer::Create(c, &s);
  ASSERT_NE(layer, nullptr) << s.message;
  const int64_t B = 2, L = 3;
  std::vector<float> x(B * L * 8, 0.5f), out(x.size(), kSentinel), w(B * 2 * L * L, kSentinel);
  std::vector<float> warm(x.size());
  LayerForwardArgs ok;
  ok.batch = B;
  ok.seq_len = L;
  ok.x = x.data();
  ok.output = warm.data();
  ok.training = true;
  ASSERT_TRUE(layer->Forward(ok).ok());
  const int64_t held = layer->HeldBytes();
  const int32_t bad_len[2] = {3, 4};
  struct Case {
    const char* what;
    std::function<void(LayerForwardArgs&)> mutate;
    StatusCode code;
    const char* name;
  };
  const std::vector<Case> cases = {
      {"batch 0", [](LayerForwardArgs& a) { a.batch = 0; }, kInvalid, "batch"},
      {"seq_len 0", [](LayerForwardArgs& a) { a.seq_len = 0; }, kInvalid, "L"},
      {"x null", [](LayerForwardArgs& a) { a.x = nullptr; }, kInvalid, "x"},
      {"output null", [](LayerForwardArgs& a) { a.output = nullptr; }, kInvalid, "output"},
      {"length > L", [&](LayerForwardArgs& a) { a.mask.lengths = bad_len; }, kInvalid, "mask.lengths[1]"},
      {"mask data null", [](LayerForwardArgs& a) { a.mask.kind = MaskKind::kBlock; }, kInvalid, "mask.data"},
      {"x overflow", [](LayerForwardArgs& a) { a.batch = kHuge; a.seq_len = kHuge; }, kOom, "x"},
      {"x > 1 GiB", [](LayerForwardArgs& a) { a.seq_len = int64_t{1} << 26; }, kOom, "x"},
  };
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.what);
    LayerForwardArgs a = ok;
    a.output = out.data();
    a.weights = w.data();
    cs.mutate(a);
    EXPECT_TRUE(IsError(layer->Forward(a), cs.code, cs.name));
    EXPECT_TRUE(Untouched(out.data(), static_cast<int64_t>(out.size()))) << "output written";
    EXPECT_TRUE(Untouched(w.data(), static_cast<int64_t>(w.size()))) << "weights written";
    EXPECT_EQ(layer->HeldBytes(), held) << "memory kept after a refused call";
  }
}

// ---------------------------------------------------------------------------
// AddLayerNorm, PositionalEncoding, Dropout

TEST(Validation, AddLayerNorm) {
  std::vector<float> x(12, 1.0f), y(12, kSentinel);
  auto ln = [&](int64_t rows, int64_t dim, const float* xp, float eps, float* yp) {
    return attnlab::AddLayerNorm(rows, dim, xp, nullptr, nullptr, nullptr, eps, yp);
  };
  EXPECT_TRUE(IsError(ln(0, 4, x.data(), 1e-5f, y.data()), kInvalid, "rows"));
  EXPECT_TRUE(IsError(ln(-1, 4, x.data(), 1e-5f, y.data()), kInvalid, "rows"));
  EXPECT_TRUE(IsError(ln(3, 0, x.data(), 1e-5f, y.data()), kInvalid, "dim"));
  EXPECT_TRUE(IsError(ln(3, 4, x.data(), 0.0f, y.data()), kInvalid, "eps"));
  EXPECT_TRUE(IsError(ln(3, 4, x.data(), -1.0f, y.data()), kInvalid, "eps"));
  EXPECT_TRUE(IsError(ln(3, 4, x.data(), kNaN, y.data()), kInvalid, "eps"));
  EXPECT_TRUE(IsError(ln(3, 4, x.data(), kInfF, y.data()), kInvalid, "eps"));
  EXPECT_TRUE(IsError(ln(3, 4, nullptr, 1e-5f, y.data()), kInvalid, "x"));
  EXPECT_TRUE(IsError(ln(3, 4, x.data(), 1e-5f, nullptr), kInvalid, "y"));
  EXPECT_TRUE(IsError(ln(kHuge, kHuge, x.data(), 1e-5f, y.data()), kOom, "x"));
  EXPECT_TRUE(IsError(ln(int64_t{1} << 20, 1 << 9, x.data(), 1e-5f, y.data()), kOom, "x"));
  EXPECT_TRUE(Untouched(y.data(), 12));
}

TEST(Validation, PositionalEncoding) {
  std::vector<float> out(16, kSentinel);
  EXPECT_TRUE(IsError(attnlab::PositionalEncoding(0, 4, 10000.0, out.data()), kInvalid, "seqLen"));
  EXPECT_TRUE(IsError(attnlab::PositionalEncoding(4, 0, 10000.0, out.data()), kInvalid, "dModel"));
  EXPECT_TRUE(IsError(attnlab::PositionalEncoding(4, -2, 10000.0, out.data()), kInvalid, "dModel"));
  EXPECT_TRUE(IsError(attnlab::PositionalEncoding(4, 4, 1.0, out.data()), kInvalid, "base"));
  EXPECT_TRUE(IsError(attnlab::PositionalEncoding(4, 4, 0.5, out.data()), kInvalid, "base"));
  EXPECT_TRUE(IsError(attnlab::PositionalEncoding(4, 4, std::nan(""), out.data()), kInvalid, "base"));
  EXPECT_TRUE(IsError(attnlab::PositionalEncoding(4, 4, HUGE_VAL, out.data()), kInvalid, "base"));
  EXPECT_TRUE(IsError(attnlab::PositionalEncoding(4, 4, 10000.0, nullptr), kInvalid, "out"));
  // Sizes: the message names the tensor ("positional encoding of shape ...").
  EXPECT_TRUE(IsError(attnlab::PositionalEncoding(kHuge, kHuge, 10000.0, out.data()), kOom, "too large"));
  EXPECT_TRUE(IsError(attnlab::PositionalEncoding(int64_t{1} << 20, 1 << 9, 10000.0, out.data()), kOom, "too large"));
  EXPECT_TRUE(Untouched(out.data(), 16));
}

TEST(Validation, Dropout) {
  std::vector<float> x(8, kSentinel);
  EXPECT_TRUE(IsError(attnlab::Dropout(-1, 0.5f, 1, x.data()), kInvalid, "n"));
  EXPECT_TRUE(IsError(attnlab::Dropout(8, -0.1f, 1, x.data()), kInvalid, "dropout"));
  EXPECT_TRUE(IsError(attnlab::Dropout(8, 1.0f, 1, x.data()), kInvalid, "dropout"));
  EXPECT_TRUE(IsError(attnlab::Dropout(8, 1.5f, 1, x.data()), kInvalid, "dropout"));
  EXPECT_TRUE(IsError(attnlab::Dropout(8, kNaN, 1, x.data()), kInvalid, "dropout"));
  EXPECT_TRUE(IsError(attnlab::Dropout(8, 0.5f, 1, nullptr), kInvalid, "x"));
  EXPECT_TRUE(Untouched(x.data(), 8));
}

// kMaxBufferBytes: "Largest single tensor, in bytes, that any call accepts.
// Calls whose inputs, outputs or scratch would exceed it are refused before
// allocation." Dropout's x is such a tensor. Run in a child process: if the
// call is (wrongly) accepted it writes past a one-page buffer into a guard page
// and the child dies instead of this test binary.
TEST(ValidationDeathTest, DropoutRefusesTensorsOverMaxBufferBytes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const long page = sysconf(_SC_PAGESIZE);
        char* base = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (base == MAP_FAILED) std::_Exit(3);
        mprotect(base + page, page, PROT_NONE);
        float* x = reinterpret_cast<float*>(base);
        const int64_t n = attnlab::kMaxBufferBytes / 4 + 1;
        const Status s = attnlab::Dropout(n, 0.5f, 1, x);
        std::_Exit(!s.ok() && s.code == StatusCode::kOutOfMemory ? 0 : 2);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace attnlab_test

// Golden cases (tests/golden/cases.json, produced from the independent JS
// float64 reference; format in tests/golden/README.md) run through the C++
// API, for both kernel sets. Each case carries its own tolerance:
//   |got - expected| <= abs + rel·|expected| for every element.
// Skipped when the file does not exist.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attention_lab.h"
#include "reference.h"

#ifndef ATTNLAB_GOLDEN_DIR
#error "ATTNLAB_GOLDEN_DIR must point at tests/golden"
#endif

namespace attnlab_test {
namespace {

using attnlab::LayerConfig;
using attnlab::LayerForwardArgs;
using attnlab::MaskKind;
using attnlab::MaskSpec;
using attnlab::MhaConfig;
using attnlab::MhaForwardArgs;
using attnlab::MultiHeadAttention;
using attnlab::SdpaArgs;
using attnlab::SelfAttentionLayer;
using attnlab::Status;
using attnlab::WeightId;
using attnlab::WeightLayout;
using json = nlohmann::json;

const std::string kGoldenPath = std::string(ATTNLAB_GOLDEN_DIR) + "/cases.json";

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
  int64_t dim(int i) const {  // negative i counts from the end
    return shape[static_cast<size_t>(i < 0 ? static_cast<int>(shape.size()) + i : i)];
  }
  int rank() const { return static_cast<int>(shape.size()); }
};

Tensor ReadTensor(const json& j) {
  Tensor t;
  t.shape = j.at("shape").get<std::vector<int64_t>>();
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  for (const json& x : j.at("data")) t.data.push_back(x.get<float>());
  EXPECT_EQ(static_cast<int64_t>(t.data.size()), n) << "tensor data does not match its shape";
  return t;
}

// The golden mask form → MaskSpec (storage kept alive in the holder).
struct MaskHolder {
  std::vector<int32_t> lengths;
  Tensor tensor;
  MaskSpec spec;
};

void ReadMask(const json& m, MaskHolder* h) {
  h->spec = MaskSpec{};
  h->spec.causal = m.value("causal", false);
  if (m.contains("lengths") && !m["lengths"].is_null()) {
    h->lengths = m["lengths"].get<std::vector<int32_t>>();
    h->spec.lengths = h->lengths.data();
  }
  const std::string kind = m.value("kind", "none");
  if (kind == "none") return;
  if (kind == "keep") h->spec.kind = MaskKind::kKeep;
  else if (kind == "block") h->spec.kind = MaskKind::kBlock;
  else if (kind == "additive") h->spec.kind = MaskKind::kAdditive;
  else ADD_FAILURE() << "unknown mask kind " << kind;
  h->tensor = ReadTensor(m.at("mask"));
  h->spec.data = h->tensor.data.data();
  const int r = h->tensor.rank();
  EXPECT_LE(r, 4);
  for (int d = 0; d < r && d < 4; ++d) h->spec.shape[4 - r + d] = h->tensor.shape[static_cast<size_t>(d)];
}

// Compares every output of the case with what the op produced.
void CheckOutputs(const json& c, const std::map<std::string, std::vector<float>>& got) {
  const double abs_tol = c.at("tolerance").at("abs").get<double>();
  const double rel_tol = c.at("tolerance").at("rel").get<double>();
  for (const auto& [name, jt] : c.at("outputs").items()) {
    const Tensor want = ReadTensor(jt);
    auto it = got.find(name);
    if (it == got.end()) {
      ADD_FAILURE() << "output '" << name << "' is not produced by the C++ runner";
      continue;
    }
    ASSERT_EQ(it->second.size(), want.data.size()) << "output " << name;
    // Expected values are float64 rounded to 10 digits: compare against the
    // JSON numbers as double, not rounded to float.
    std::vector<double> wd;
    for (const json& x : jt.at("data")) wd.push_back(x.get<double>());
    ExpectAllClose(it->second.data(), wd.data(), static_cast<int64_t>(wd.size()), abs_tol, rel_tol,
                   "output " + name);
  }
}

void SetTorchWeights(MultiHeadAttention& m, const json& inputs, bool bias) {
  const std::pair<const char*, WeightId> ids[] = {
      {"wq", WeightId::kWq}, {"bq", WeightId::kBq}, {"wk", WeightId::kWk}, {"bk", WeightId::kBk},
      {"wv", WeightId::kWv}, {"bv", WeightId::kBv}, {"wo", WeightId::kWo}, {"bo", WeightId::kBo}};
  for (const auto& [name, id] : ids) {
    const bool is_bias = name[0] == 'b';
    if (is_bias && !bias) {
      EXPECT_FALSE(inputs.contains(name)) << name << " given for a bias-free layer";
      continue;
    }
    const Tensor t = ReadTensor(inputs.at(name));
    ASSERT_EQ(static_cast<int64_t>(t.data.size()), m.WeightSize(id)) << name;
    if (!is_bias) {
      EXPECT_EQ(t.shape, m.WeightShape(id, WeightLayout::kTorch)) << name;
    }
    const Status s = m.SetWeight(id, t.data.data(), WeightLayout::kTorch);
    ASSERT_TRUE(s.ok()) << name << ": " << s.message;
  }
}

void RunPositionalEncoding(const json& c) {
  const json& p = c.at("params");
  const int64_t L = p.at("seqLen").get<int64_t>(), E = p.at("dModel").get<int64_t>();
  std::vector<float> pe(static_cast<size_t>(L * E));
  const Status s = attnlab::PositionalEncoding(L, E, p.at("base").get<double>(), pe.data());
  ASSERT_TRUE(s.ok()) << s.message;
  CheckOutputs(c, {{"pe", pe}});
}

void RunSdpa(const json& c) {
  const json& p = c.at("params");
  const json& in = c.at("inputs");
  const Tensor q = ReadTensor(in.at("q")), k = ReadTensor(in.at("k")), v = ReadTensor(in.at("v"));
  ASSERT_GE(q.rank(), 2);
  ASSERT_LE(q.rank(), 4);
  SdpaArgs a;
  // rank 4 [B, H, L, D]; rank 3 [B, L, D] (H = 1); rank 2 [L, D] (B = H = 1).
  a.batch = q.rank() >= 3 ? q.dim(0) : 1;
  a.heads = q.rank() == 4 ? q.dim(1) : 1;
  a.lq = q.dim(-2);
  a.lk = k.dim(-2);
  a.d = q.dim(-1);
  a.dv = v.dim(-1);
  a.q = q.data.data();
  a.k = k.data.data();
  a.v = v.data.data();
  if (p.contains("scale") && !p["scale"].is_null()) {
    a.has_scale = true;
    a.scale = p["scale"].get<float>();
  }
  MaskHolder mask;
  ReadMask(p.at("mask"), &mask);
  a.mask = mask.spec;
  std::vector<float> out(static_cast<size_t>(a.batch * a.heads * a.lq * a.dv));
  std::vector<float> w(static_cast<size_t>(a.batch * a.heads * a.lq * a.lk));
  a.output = out.data();
  if (p.value("needWeights", true)) a.weights = w.data();
  const Status s = attnlab::ScaledDotProductAttention(a);
  ASSERT_TRUE(s.ok()) << s.message;
  CheckOutputs(c, {{"output", out}, {"weights", w}});
}

void RunMha(const json& c) {
  const json& p = c.at("params");
  const json& in = c.at("inputs");
  ASSERT_EQ(p.value("layout", "torch"), "torch");
  MhaConfig cfg;
  cfg.embed_dim = p.at("embedDim").get<int64_t>();
  cfg.num_heads = p.at("numHeads").get<int64_t>();
  cfg.kdim = p.value("kdim", int64_t{0});
  cfg.vdim = p.value("vdim", int64_t{0});
  cfg.bias = p.value("bias", true);
  Status s;
  auto m = MultiHeadAttention::Create(cfg, &s);
  ASSERT_NE(m, nullptr) << s.message;
  SetTorchWeights(*m, in, cfg.bias);
  const Tensor q = ReadTensor(in.at("query")), k = ReadTensor(in.at("key")), v = ReadTensor(in.at("value"));
  MhaForwardArgs a;
  a.batch = q.rank() == 3 ? q.dim(0) : 1;  // unbatched [L, E]
  a.lq = q.dim(-2);
  a.lk = k.dim(-2);
  a.query = q.data.data();
  a.key = k.data.data();
  a.value = v.data.data();
  MaskHolder mask;
  ReadMask(p.at("mask"), &mask);
  a.mask = mask.spec;
  a.average_weights = p.value("averageWeights", false);
  const int64_t e = cfg.embed_dim, h = cfg.num_heads;
  std::vector<float> out(static_cast<size_t>(a.batch * a.lq * e));
  std::vector<float> w(static_cast<size_t>(a.batch * (a.average_weights ? 1 : h) * a.lq * a.lk));
  a.output = out.data();
  a.weights = w.data();
  s = m->Forward(a);
  ASSERT_TRUE(s.ok()) << s.message;
  CheckOutputs(c, {{"output", out}, {"weights", w}});
}

void RunLayerNorm(const json& c) {
  const json& in = c.at("inputs");
  const Tensor x = ReadTensor(in.at("x"));
  const int64_t rows = x.dim(0), dim = x.dim(1);
  Tensor r, g, b;
  if (in.contains("residual")) r = ReadTensor(in["residual"]);
  if (in.contains("gamma")) g = ReadTensor(in["gamma"]);
  if (in.contains("beta")) b = ReadTensor(in["beta"]);
  std::vector<float> y(x.data.size());
  const Status s = attnlab::AddLayerNorm(
      rows, dim, x.data.data(), r.data.empty() ? nullptr : r.data.data(),
      g.data.empty() ? nullptr : g.data.data(), b.data.empty() ? nullptr : b.data.data(),
      c.at("params").value("eps", 1e-5f), y.data());
  ASSERT_TRUE(s.ok()) << s.message;
  CheckOutputs(c, {{"y", y}});
}

void RunLayer(const json& c) {
  const json& p = c.at("params");
  const json& in = c.at("inputs");
  ASSERT_EQ(p.value("layout", "torch"), "torch");
  LayerConfig cfg;
  cfg.mha.embed_dim = p.at("embedDim").get<int64_t>();
  cfg.mha.num_heads = p.at("numHeads").get<int64_t>();
  cfg.mha.bias = p.value("bias", true);
  cfg.dropout = p.value("dropout", 0.1f);
  cfg.eps = p.value("eps", 1e-5f);
  Status s;
  auto layer = SelfAttentionLayer::Create(cfg, &s);
  ASSERT_NE(layer, nullptr) << s.message;
  SetTorchWeights(layer->mha(), in, cfg.mha.bias);
  const Tensor gamma = ReadTensor(in.at("gamma")), beta = ReadTensor(in.at("beta"));
  ASSERT_TRUE(layer->SetNorm(gamma.data.data(), beta.data.data()).ok());
  const Tensor x = ReadTensor(in.at("x"));
  LayerForwardArgs a;
  a.batch = x.rank() == 3 ? x.dim(0) : 1;
  a.seq_len = x.dim(-2);
  a.x = x.data.data();
  MaskHolder mask;
  ReadMask(p.at("mask"), &mask);
  a.mask = mask.spec;
  a.training = p.value("training", false);
  if (p.contains("dropoutSeed") && !p["dropoutSeed"].is_null()) {
    a.dropout_seed = p["dropoutSeed"].get<uint32_t>();
  }
  a.average_weights = p.value("averageWeights", false);
  const int64_t h = cfg.mha.num_heads;
  std::vector<float> out(x.data.size());
  std::vector<float> w(static_cast<size_t>(a.batch * (a.average_weights ? 1 : h) * a.seq_len * a.seq_len));
  a.output = out.data();
  a.weights = w.data();
  s = layer->Forward(a);
  ASSERT_TRUE(s.ok()) << s.message;
  CheckOutputs(c, {{"output", out}, {"weights", w}});
}

// Loads the file once; null when missing.
const json* Golden() {
  static std::unique_ptr<json> doc;
  static bool loaded = false;
  if (!loaded) {
    loaded = true;
    std::ifstream f(kGoldenPath);
    if (f) {
      try {
        doc = std::make_unique<json>(json::parse(f));
      } catch (const std::exception& e) {
        ADD_FAILURE() << kGoldenPath << " is not valid JSON: " << e.what();
        doc = std::make_unique<json>(json::object());
      }
    }
  }
  return doc.get();
}

TEST(Golden, FileFormat) {
  const json* g = Golden();
  if (g == nullptr) GTEST_SKIP() << kGoldenPath << " does not exist";
  EXPECT_EQ(g->value("format", ""), "attention-lab-golden");
  EXPECT_EQ(g->value("version", 0), 1);
  ASSERT_TRUE(g->contains("cases"));
  EXPECT_GT(g->at("cases").size(), 0u);
  std::set<std::string> names;
  for (const json& c : g->at("cases")) {
    EXPECT_TRUE(names.insert(c.value("name", "")).second) << "duplicate case " << c.value("name", "");
    for (const char* key : {"name", "op", "params", "inputs", "outputs", "tolerance"}) {
      EXPECT_TRUE(c.contains(key)) << c.value("name", "?") << " lacks " << key;
    }
  }
}

class GoldenTest : public ::testing::TestWithParam<bool> {
 protected:
  GoldenTest() : kernels_(GetParam()) {}
  ScopedKernelSet kernels_;
};

TEST_P(GoldenTest, AllCases) {
  const json* g = Golden();
  if (g == nullptr) GTEST_SKIP() << kGoldenPath << " does not exist";
  ASSERT_TRUE(g->contains("cases"));
  int ran = 0;
  for (const json& c : g->at("cases")) {
    const std::string name = c.value("name", "?"), op = c.value("op", "?");
    SCOPED_TRACE("golden case " + name + " (" + op + ")");
    try {
      if (op == "positional_encoding") RunPositionalEncoding(c);
      else if (op == "sdpa") RunSdpa(c);
      else if (op == "mha") RunMha(c);
      else if (op == "layer_norm") RunLayerNorm(c);
      else if (op == "layer") RunLayer(c);
      else ADD_FAILURE() << "unknown op '" << op << "'";
    } catch (const std::exception& e) {
      ADD_FAILURE() << "malformed case: " << e.what();
    }
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

INSTANTIATE_TEST_SUITE_P(KernelSets, GoldenTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return KernelSetName(info.param);
                         });

}  // namespace
}  // namespace attnlab_test

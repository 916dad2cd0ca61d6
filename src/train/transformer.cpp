// A tiny transformer and its training step, all in the core (one call per
// step). R = B·L rows, activations kept per layer for the backward:
//   x0 = Emb[tokens] + Pos                                    [R, E]
//   block l (x = x_l):
//     a  = Dropout(MHA(x, x, x))   (MhaActivations q, k, v, ctx) [R, E]
//     h  = LN1(x + a)                                          [R, E]
//     f1 = h·W1ᵀ + b1;  g = GELU(f1)                           [R, F]
//     f2 = Dropout(g·W2ᵀ + b2)                                 [R, E]
//     x_{l+1} = LN2(h + f2)                                    [R, E]
//   logits = x_N·Whᵀ + bh                                      [R, V]
// The backward walks the same buffers in reverse (train/ops.h), then AdamW
// updates the flat parameter vector.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "train/ops.h"

namespace attnlab {

namespace {
using internal::AlignedBuffer;

uint32_t Hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

Status Invalid(const std::string& where, const std::string& msg) {
  return Status::Invalid(where + ": " + msg);
}

struct BlockParams {
  MhaParams attn;
  MhaGrads dattn;
  int64_t norm1_w = 0, norm1_b = 0, w1 = 0, b1 = 0, w2 = 0, b2 = 0,
          norm2_w = 0, norm2_b = 0, attn_off[8] = {};
};

struct BlockActs {
  train::MhaActivations mha;
  AlignedBuffer a, h, f1, g, f2;
};
}  // namespace

struct Transformer::Impl {
  TransformerConfig config;
  std::vector<ParamInfo> infos;
  AlignedBuffer params, grads, m, v;
  std::vector<uint8_t> decay;
  int64_t count = 0;
  int64_t embed_off = 0, pos_off = -1, head_w = 0, head_b = 0;
  std::vector<BlockParams> blocks;
  std::vector<float> sinusoid;        // [maxL, E] when positional is sinusoidal
  std::vector<float> rope_cos, rope_sin, rope_neg_sin;  // [maxL, D/2] (rope)
  train::RopeTables rope;
  std::vector<uint8_t> head_enabled;  // [N, H]
  // Activations and gradient scratch.
  std::unique_ptr<AlignedBuffer[]> x;  // N + 1 buffers [R, E]
  std::unique_ptr<BlockActs[]> acts;   // N
  AlignedBuffer logits, dlogits, dx, dh, dtmp, dg;
  train::Workspace ws;
  int64_t rows_reserved = 0;
  AdamWConfig opt;
  int64_t step = 0;
  uint64_t dropout_calls = 0;

  int64_t Add(const std::string& name, std::vector<int64_t> shape, bool dec) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    ParamInfo info;
    info.name = name;
    info.shape = std::move(shape);
    info.offset = count;
    info.decay = dec;
    infos.push_back(info);
    count += n;
    return info.offset;
  }

  float* P(int64_t off) { return params.data() + off; }
  float* G(int64_t off) { return grads.data() + off; }

  bool Reserve(int64_t rows) {
    if (rows <= rows_reserved) return true;
    const TransformerConfig& c = config;
    const int64_t e = c.embed_dim, f = c.ffn_dim, vocab = c.vocab_size;
    for (int64_t l = 0; l <= c.num_layers; ++l) {
      if (!x[l].Reserve(rows * e)) return false;
    }
    for (int64_t l = 0; l < c.num_layers; ++l) {
      BlockActs& a = acts[l];
      if (!a.a.Reserve(rows * e) || !a.h.Reserve(rows * e) || !a.f1.Reserve(rows * f) ||
          !a.g.Reserve(rows * f) || !a.f2.Reserve(rows * e)) {
        return false;
      }
    }
    if (!logits.Reserve(rows * vocab) || !dlogits.Reserve(rows * vocab) ||
        !dx.Reserve(rows * e) || !dh.Reserve(rows * e) || !dtmp.Reserve(rows * e) ||
        !dg.Reserve(rows * f)) {
      return false;
    }
    rows_reserved = rows;
    return true;
  }

  uint32_t DropoutSeed(uint64_t call) const {
    return Hash32(config.seed ^ Hash32(static_cast<uint32_t>(call) * 0x9E3779B9u + 0x632BE5ABu));
  }

  bool Forward(int64_t batch, int64_t length, const int32_t* tokens,
               bool training, float* attention);
  bool Backward(int64_t batch, int64_t length, const int32_t* tokens);
};

namespace {
Status CheckConfig(const TransformerConfig& c) {
  const std::string w = "transformer";
  Status s;
  if (!(s = internal::CheckDim("vocabSize", c.vocab_size, 2)).ok()) return s;
  if (!(s = internal::CheckDim("maxLength", c.max_length, 1)).ok()) return s;
  if (!(s = internal::CheckDim("embedDim", c.embed_dim, 1)).ok()) return s;
  if (!(s = internal::CheckDim("numHeads", c.num_heads, 1)).ok()) return s;
  if (!(s = internal::CheckDim("numLayers", c.num_layers, 1)).ok()) return s;
  if (!(s = internal::CheckDim("ffnDim", c.ffn_dim, 1)).ok()) return s;
  if (c.embed_dim % c.num_heads != 0) {
    std::ostringstream os;
    os << "embedDim (" << c.embed_dim << ") must be divisible by numHeads (" << c.num_heads << ")";
    return Invalid(w, os.str());
  }
  if (!(c.dropout >= 0.0f && c.dropout < 1.0f)) {
    std::ostringstream os;
    os << "dropout must be a number in [0, 1) (got " << c.dropout << ")";
    return Invalid(w, os.str());
  }
  if (!(c.eps > 0.0f) || !std::isfinite(c.eps)) return Invalid(w, "eps must be a finite number > 0");
  const int pos = static_cast<int>(c.positional);
  if (pos < 0 || pos > 3) return Invalid(w, "positional must be 'none', 'sinusoidal', 'learned' or 'rope'");
  if (c.positional == Positional::kRope && (c.embed_dim / c.num_heads) % 2 != 0) {
    std::ostringstream os;
    os << "positional 'rope' needs an even head dim embedDim / numHeads (got " << c.embed_dim
       << " / " << c.num_heads << " = " << c.embed_dim / c.num_heads << ")";
    return Invalid(w, os.str());
  }
  int64_t n = 0;
  if (!(s = internal::TensorElements("the embedding [vocabSize, embedDim]", {c.vocab_size, c.embed_dim}, &n)).ok()) return s;
  if (!(s = internal::TensorElements("the feed-forward weights [ffnDim, embedDim]", {c.ffn_dim, c.embed_dim}, &n)).ok()) return s;
  if (!(s = internal::TensorElements("the positions [maxLength, embedDim]", {c.max_length, c.embed_dim}, &n)).ok()) return s;
  if (c.num_layers > 64) return Invalid(w, "numLayers must be at most 64");
  return Status::Ok();
}

// Seeded init from the core's counter-based uniform (attention_lab.h).
void FillUniform(float* p, int64_t n, float bound, uint32_t seed) {
  for (int64_t i = 0; i < n; ++i) {
    p[i] = (2.0f * DropoutUniform(seed, static_cast<uint32_t>(i)) - 1.0f) * bound;
  }
}
void FillNormal(float* p, int64_t n, float stddev, uint32_t seed) {
  for (int64_t i = 0; i < n; ++i) {
    const double u1 = (DropoutUniform(seed, static_cast<uint32_t>(2 * i)) * 16777216.0 + 0.5) / 16777216.0;
    const double u2 = DropoutUniform(seed, static_cast<uint32_t>(2 * i + 1));
    p[i] = static_cast<float>(stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
}
}  // namespace

Transformer::Transformer() : impl_(new Impl) {}
Transformer::~Transformer() = default;

std::unique_ptr<Transformer> Transformer::Create(const TransformerConfig& config,
                                                 Status* status) {
  *status = CheckConfig(config);
  if (!status->ok()) return nullptr;
  std::unique_ptr<Transformer> t(new Transformer);
  Impl& im = *t->impl_;
  im.config = config;
  const int64_t e = config.embed_dim, f = config.ffn_dim, vocab = config.vocab_size;
  const int64_t nl = config.num_layers;
  im.embed_off = im.Add("embed.weight", {vocab, e}, true);
  if (config.positional == Positional::kLearned) {
    im.pos_off = im.Add("pos.weight", {config.max_length, e}, true);
  }
  static const char* kAttn[8] = {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"};
  im.blocks.resize(static_cast<size_t>(nl));
  for (int64_t l = 0; l < nl; ++l) {
    BlockParams& b = im.blocks[static_cast<size_t>(l)];
    const std::string p = "blocks." + std::to_string(l) + ".";
    for (int i = 0; i < 8; ++i) {
      const bool bias = i % 2 == 1;
      b.attn_off[i] = im.Add(p + "attn." + kAttn[i], bias ? std::vector<int64_t>{e} : std::vector<int64_t>{e, e}, !bias);
    }
    b.norm1_w = im.Add(p + "norm1.weight", {e}, false);
    b.norm1_b = im.Add(p + "norm1.bias", {e}, false);
    b.w1 = im.Add(p + "ffn.w1", {f, e}, true);
    b.b1 = im.Add(p + "ffn.b1", {f}, false);
    b.w2 = im.Add(p + "ffn.w2", {e, f}, true);
    b.b2 = im.Add(p + "ffn.b2", {e}, false);
    b.norm2_w = im.Add(p + "norm2.weight", {e}, false);
    b.norm2_b = im.Add(p + "norm2.bias", {e}, false);
  }
  im.head_w = im.Add("head.weight", {vocab, e}, true);
  im.head_b = im.Add("head.bias", {vocab}, false);

  int64_t bytes = 0;
  if (!internal::CheckedMul(im.count, 4 * 4, &bytes) || bytes > kMaxCallBytes ||
      !im.params.Reserve(im.count) || !im.grads.Reserve(im.count) ||
      !im.m.Reserve(im.count) || !im.v.Reserve(im.count) ||
      !internal::CanAllocate(im.count + nl * config.num_heads + config.max_length * e * 4)) {
    *status = Status::OutOfMemory("transformer: out of memory for the parameters");
    return nullptr;
  }
  im.decay.assign(static_cast<size_t>(im.count), 0);
  std::fill(im.params.data(), im.params.data() + im.count, 0.0f);
  for (size_t i = 0; i < im.infos.size(); ++i) {
    const ParamInfo& info = im.infos[i];
    int64_t n = 1;
    for (int64_t d : info.shape) n *= d;
    if (info.decay) std::fill(im.decay.begin() + info.offset, im.decay.begin() + info.offset + n, 1);
    const uint32_t seed = Hash32(config.seed * 0x9E3779B9u + static_cast<uint32_t>(i) + 1u);
    float* p = im.P(info.offset);
    const std::string& name = info.name;
    auto is = [&](const char* suffix) {
      return name.size() >= std::strlen(suffix) &&
             name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0;
    };
    if (name == "embed.weight" || name == "pos.weight") {
      FillNormal(p, n, 1.0f, seed);
    } else if (is("norm1.weight") || is("norm2.weight")) {
      std::fill(p, p + n, 1.0f);
    } else if (info.shape.size() == 2 && name.find(".attn.") != std::string::npos) {
      // Xavier-uniform, as MultiHeadAttention.
      const float bound = std::sqrt(6.0f / static_cast<float>(info.shape[0] + info.shape[1]));
      FillUniform(p, n, bound, seed);
    } else if (info.shape.size() == 2) {
      // torch.nn.Linear's default bound 1/sqrt(in).
      FillUniform(p, n, 1.0f / std::sqrt(static_cast<float>(info.shape[1])), seed);
    }  // biases and LayerNorm beta start at zero
  }
  for (auto& b : im.blocks) {
    for (int i = 0; i < 8; ++i) {
      b.attn.w[i] = im.P(b.attn_off[i]);
      b.dattn.w[i] = im.G(b.attn_off[i]);
    }
  }
  if (config.positional == Positional::kSinusoidal) {
    im.sinusoid.resize(static_cast<size_t>(config.max_length * e));
    PositionalEncoding(config.max_length, e, 10000.0, im.sinusoid.data());
  }
  if (config.positional == Positional::kRope) {
    const int64_t half = e / config.num_heads / 2;
    const size_t n = static_cast<size_t>(config.max_length * half);
    im.rope_cos.resize(n);
    im.rope_sin.resize(n);
    im.rope_neg_sin.resize(n);
    RotaryCache(config.max_length, 2 * half, 10000.0, im.rope_cos.data(), im.rope_sin.data());
    for (size_t i = 0; i < n; ++i) im.rope_neg_sin[i] = -im.rope_sin[i];
    im.rope = {im.rope_cos.data(), im.rope_sin.data(), im.rope_neg_sin.data()};
  }
  im.head_enabled.assign(static_cast<size_t>(nl * config.num_heads), 1);
  im.x.reset(new AlignedBuffer[static_cast<size_t>(nl + 1)]);
  im.acts.reset(new BlockActs[static_cast<size_t>(nl)]);
  t->ResetOptimizer();
  *status = Status::Ok();
  return t;
}

const TransformerConfig& Transformer::config() const { return impl_->config; }
const std::vector<ParamInfo>& Transformer::params() const { return impl_->infos; }
int64_t Transformer::ParamCount() const { return impl_->count; }
const float* Transformer::Params() const { return impl_->params.data(); }
const float* Transformer::Gradients() const { return impl_->grads.data(); }

Status Transformer::SetParams(const float* data) {
  Status s = internal::CheckPointer("weights", data);
  if (!s.ok()) return s;
  for (int64_t i = 0; i < impl_->count; ++i) {
    if (!std::isfinite(data[i])) {
      std::ostringstream os;
      os << "setWeights: weights must be finite (element " << i << " is " << data[i] << ")";
      return Status::Invalid(os.str());
    }
  }
  std::memcpy(impl_->params.data(), data, static_cast<size_t>(impl_->count) * sizeof(float));
  return Status::Ok();
}

Status Transformer::SetHeadEnabled(int64_t layer, int64_t head, bool enabled) {
  const TransformerConfig& c = impl_->config;
  if (layer < 0 || layer >= c.num_layers || head < 0 || head >= c.num_heads) {
    std::ostringstream os;
    os << "setHeadEnabled: layer must be in [0, " << c.num_layers - 1 << "] and head in [0, "
       << c.num_heads - 1 << "], got layer " << layer << ", head " << head;
    return Status::Invalid(os.str());
  }
  impl_->head_enabled[static_cast<size_t>(layer * c.num_heads + head)] = enabled ? 1 : 0;
  return Status::Ok();
}

void Transformer::ResetOptimizer() {
  std::fill(impl_->m.data(), impl_->m.data() + impl_->count, 0.0f);
  std::fill(impl_->v.data(), impl_->v.data() + impl_->count, 0.0f);
  impl_->step = 0;
}

Status Transformer::ConfigureOptimizer(const AdamWConfig& c) {
  auto bad = [](const char* name, double v, const char* allowed) {
    std::ostringstream os;
    os << "trainer: " << name << " must be " << allowed << " (got " << v << ")";
    return Status::Invalid(os.str());
  };
  if (!(std::isfinite(c.lr) && c.lr >= 0.0f)) return bad("lr", c.lr, "a finite number >= 0");
  if (!(c.beta1 >= 0.0f && c.beta1 < 1.0f)) return bad("betas[0]", c.beta1, "in [0, 1)");
  if (!(c.beta2 >= 0.0f && c.beta2 < 1.0f)) return bad("betas[1]", c.beta2, "in [0, 1)");
  if (!(std::isfinite(c.eps) && c.eps > 0.0f)) return bad("eps", c.eps, "a finite number > 0");
  if (!(std::isfinite(c.weight_decay) && c.weight_decay >= 0.0f)) return bad("weightDecay", c.weight_decay, "a finite number >= 0");
  if (c.warmup < 0) return bad("warmup", static_cast<double>(c.warmup), "an integer >= 0");
  if (!(std::isfinite(c.clip) && c.clip >= 0.0f)) return bad("clip", c.clip, "a finite number >= 0 (0: no clipping)");
  impl_->opt = c;
  return Status::Ok();
}

int64_t Transformer::HeldBytes() const {
  const Impl& im = *impl_;
  int64_t b = im.params.bytes() + im.grads.bytes() + im.m.bytes() + im.v.bytes();
  for (int64_t l = 0; l <= im.config.num_layers; ++l) b += im.x[l].bytes();
  for (int64_t l = 0; l < im.config.num_layers; ++l) {
    const BlockActs& a = im.acts[l];
    b += a.a.bytes() + a.h.bytes() + a.f1.bytes() + a.g.bytes() + a.f2.bytes() +
         a.mha.q.bytes() + a.mha.k.bytes() + a.mha.v.bytes() + a.mha.ctx.bytes();
  }
  b += im.logits.bytes() + im.dlogits.bytes() + im.dx.bytes() + im.dh.bytes() +
       im.dtmp.bytes() + im.dg.bytes();
  b += im.ws.pack.bytes() + im.ws.pack2.bytes() + im.ws.trans.bytes() + im.ws.tile.bytes() +
       im.ws.g_ctx.bytes() + im.ws.g_q.bytes() + im.ws.g_k.bytes() + im.ws.g_v.bytes();
  return b;
}

bool Transformer::Impl::Forward(int64_t batch, int64_t length,
                                const int32_t* tokens, bool training,
                                float* attention) {
  const TransformerConfig& c = config;
  const int64_t e = c.embed_dim, f = c.ffn_dim, rows = batch * length;
  if (!Reserve(rows)) return false;
  const float* pos = c.positional == Positional::kLearned ? P(pos_off)
                     : c.positional == Positional::kSinusoidal ? sinusoid.data()
                                                               : nullptr;
  train::EmbeddingForward(rows, length, e, P(embed_off), pos, tokens, x[0].data());
  MaskSpec mask;
  mask.causal = c.causal;
  kernels::AttentionView mask_view;
  internal::ResolveMask(mask, batch, c.num_heads, length, length, &mask_view);
  const train::MhaShape shape{batch, length, length, e, c.num_heads, e, e,
                              c.positional == Positional::kRope ? &rope : nullptr};
  const bool drop = training && c.dropout > 0.0f;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    BlockParams& bp = blocks[static_cast<size_t>(l)];
    BlockActs& a = acts[l];
    const float* xin = x[l].data();
    float* weights = attention ? attention + l * batch * c.num_heads * length * length : nullptr;
    if (!train::MhaForward(shape, bp.attn, xin, xin, xin, mask_view,
                           &head_enabled[static_cast<size_t>(l * c.num_heads)],
                           a.a.data(), weights, &a.mha, &ws)) {
      return false;
    }
    if (drop) train::DropoutForward(rows * e, c.dropout, DropoutSeed(2 * dropout_calls), a.a.data());
    train::ResidualLayerNormForward(rows, e, xin, a.a.data(), P(bp.norm1_w), P(bp.norm1_b), c.eps, a.h.data());
    if (!train::LinearForward(rows, e, f, a.h.data(), P(bp.w1), P(bp.b1), a.f1.data(), &ws)) return false;
    train::GeluForward(rows * f, a.f1.data(), a.g.data());
    if (!train::LinearForward(rows, f, e, a.g.data(), P(bp.w2), P(bp.b2), a.f2.data(), &ws)) return false;
    if (drop) train::DropoutForward(rows * e, c.dropout, DropoutSeed(2 * dropout_calls + 1), a.f2.data());
    train::ResidualLayerNormForward(rows, e, a.h.data(), a.f2.data(), P(bp.norm2_w), P(bp.norm2_b), c.eps,
                                    x[l + 1].data());
    if (drop) ++dropout_calls;
  }
  return train::LinearForward(rows, e, c.vocab_size, x[c.num_layers].data(), P(head_w), P(head_b),
                              logits.data(), &ws);
}

bool Transformer::Impl::Backward(int64_t batch, int64_t length,
                                 const int32_t* tokens) {
  const TransformerConfig& c = config;
  const int64_t e = c.embed_dim, f = c.ffn_dim, rows = batch * length;
  std::fill(grads.data(), grads.data() + count, 0.0f);
  // dx: gradient of the current block output.
  if (!train::LinearBackward(rows, e, c.vocab_size, x[c.num_layers].data(), P(head_w), dlogits.data(),
                             dx.data(), false, G(head_w), G(head_b), &ws)) {
    return false;
  }
  MaskSpec mask;
  mask.causal = c.causal;
  kernels::AttentionView mask_view;
  internal::ResolveMask(mask, batch, c.num_heads, length, length, &mask_view);
  const train::MhaShape shape{batch, length, length, e, c.num_heads, e, e,
                              c.positional == Positional::kRope ? &rope : nullptr};
  const bool drop = c.dropout > 0.0f;
  // Dropout seeds were drawn in forward order; walk them back.
  uint64_t call = dropout_calls;
  for (int64_t l = c.num_layers - 1; l >= 0; --l) {
    BlockParams& bp = blocks[static_cast<size_t>(l)];
    BlockActs& a = acts[l];
    const float* xin = x[l].data();
    if (drop) --call;
    // x_{l+1} = LN2(h + f2): dz → dh and df2.
    train::ResidualLayerNormBackward(rows, e, a.h.data(), a.f2.data(), P(bp.norm2_w), c.eps, dx.data(),
                                     dh.data(), G(bp.norm2_w), G(bp.norm2_b));
    std::memcpy(dtmp.data(), dh.data(), static_cast<size_t>(rows * e) * sizeof(float));
    if (drop) train::DropoutBackward(rows * e, c.dropout, DropoutSeed(2 * call + 1), dtmp.data());
    if (!train::LinearBackward(rows, f, e, a.g.data(), P(bp.w2), dtmp.data(), dg.data(), false,
                               G(bp.w2), G(bp.b2), &ws)) {
      return false;
    }
    train::GeluBackward(rows * f, a.f1.data(), dg.data(), dg.data());
    if (!train::LinearBackward(rows, e, f, a.h.data(), P(bp.w1), dg.data(), dh.data(), true,
                               G(bp.w1), G(bp.b1), &ws)) {
      return false;
    }
    // h = LN1(x + a): dz → dx (residual) and da.
    train::ResidualLayerNormBackward(rows, e, xin, a.a.data(), P(bp.norm1_w), c.eps, dh.data(),
                                     dx.data(), G(bp.norm1_w), G(bp.norm1_b));
    std::memcpy(dtmp.data(), dx.data(), static_cast<size_t>(rows * e) * sizeof(float));
    if (drop) train::DropoutBackward(rows * e, c.dropout, DropoutSeed(2 * call), dtmp.data());
    float* dmha = dh.data();
    if (!train::MhaBackward(shape, bp.attn, xin, xin, xin, mask_view,
                            &head_enabled[static_cast<size_t>(l * c.num_heads)], a.mha,
                            dtmp.data(), dmha, dmha, dmha, bp.dattn, &ws)) {
      return false;
    }
    float* g = dx.data();
    for (int64_t i = 0; i < rows * e; ++i) g[i] += dmha[i];
  }
  train::EmbeddingBackward(rows, length, e, tokens, dx.data(), G(embed_off),
                           c.positional == Positional::kLearned ? G(pos_off) : nullptr);
  return true;
}

namespace {
Status CheckTokens(const char* where, const char* name, const TransformerConfig& c,
                   int64_t batch, int64_t length, const int32_t* t) {
  Status s = internal::CheckPointer(name, t);
  if (!s.ok()) return s;
  for (int64_t i = 0; i < batch * length; ++i) {
    if (t[i] < 0 || t[i] >= c.vocab_size) {
      std::ostringstream os;
      os << where << ": " << name << " must be integers in [0, " << c.vocab_size - 1
         << "] (vocabSize " << c.vocab_size << "); " << name << "[" << i / length << "][" << i % length
         << "] is " << t[i];
      return Status::Invalid(os.str());
    }
  }
  return Status::Ok();
}

Status CheckBatch(const char* where, const TransformerConfig& c, int64_t batch,
                  int64_t length) {
  Status s = internal::CheckDim("batch", batch, 1);
  if (!s.ok()) return s;
  if (!(s = internal::CheckDim("L (sequence length)", length, 1)).ok()) return s;
  if (length > c.max_length) {
    std::ostringstream os;
    os << where << ": sequences of length " << length << " are longer than maxLength ("
       << c.max_length << ")";
    return Status::Invalid(os.str());
  }
  int64_t n = 0;
  const int64_t widest = std::max(std::max(c.embed_dim, c.ffn_dim), c.vocab_size);
  if (!(s = internal::TensorElements("the activations [B, L, max(E, F, V)]", {batch, length, widest}, &n)).ok()) return s;
  return internal::TensorElements("the attention [B, H, L, L]", {batch, c.num_heads, length, length}, &n);
}

Status CheckMask(const char* where, int64_t n, const float* mask) {
  if (mask == nullptr) return Status::Ok();
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    if (!(mask[i] >= 0.0f) || !std::isfinite(mask[i])) {
      std::ostringstream os;
      os << where << ": lossMask must hold finite numbers >= 0 (element " << i << " is " << mask[i] << ")";
      return Status::Invalid(os.str());
    }
    sum += mask[i];
  }
  if (!(sum > 0.0)) {
    return Status::Invalid(std::string(where) + ": lossMask is all zeros; at least one position must count");
  }
  return Status::Ok();
}

void FillResult(const train::CrossEntropyResult& ce, int64_t batch, StepResult* r) {
  r->loss = ce.weight > 0 ? ce.loss / ce.weight : 0.0;
  r->accuracy = ce.counted > 0 ? ce.correct / static_cast<double>(ce.counted) : 0.0;
  r->sequence_accuracy = static_cast<double>(ce.sequences_right) / static_cast<double>(batch);
}
}  // namespace

Status Transformer::Forward(int64_t batch, int64_t length, const int32_t* tokens,
                            float* logits, float* attention) {
  Impl& im = *impl_;
  Status s = CheckBatch("forward", im.config, batch, length);
  if (!s.ok()) return s;
  if (!(s = CheckTokens("forward", "tokens", im.config, batch, length, tokens)).ok()) return s;
  if (!(s = internal::CheckPointer("logits", logits)).ok()) return s;
  if (!im.Forward(batch, length, tokens, false, attention)) {
    return Status::OutOfMemory("forward: out of memory (wasm memory is limited to 2 GiB)");
  }
  std::memcpy(logits, im.logits.data(), static_cast<size_t>(batch * length * im.config.vocab_size) * sizeof(float));
  return Status::Ok();
}

Status Transformer::Evaluate(int64_t batch, int64_t length, const int32_t* tokens,
                             const int32_t* targets, const float* loss_mask,
                             StepResult* result) {
  Impl& im = *impl_;
  Status s = CheckBatch("evaluate", im.config, batch, length);
  if (!s.ok()) return s;
  if (!(s = CheckTokens("evaluate", "tokens", im.config, batch, length, tokens)).ok()) return s;
  if (!(s = CheckTokens("evaluate", "targets", im.config, batch, length, targets)).ok()) return s;
  if (!(s = CheckMask("evaluate", batch * length, loss_mask)).ok()) return s;
  if (!im.Forward(batch, length, tokens, false, nullptr)) {
    return Status::OutOfMemory("evaluate: out of memory (wasm memory is limited to 2 GiB)");
  }
  train::CrossEntropyResult ce;
  train::CrossEntropyForwardBackward(batch * length, length, im.config.vocab_size, im.logits.data(),
                                     targets, loss_mask, nullptr, &ce);
  *result = StepResult();
  FillResult(ce, batch, result);
  result->step = im.step;
  return Status::Ok();
}

Status Transformer::Step(int64_t batch, int64_t length, const int32_t* tokens,
                         const int32_t* targets, const float* loss_mask,
                         StepResult* result) {
  Impl& im = *impl_;
  Status s = CheckBatch("step", im.config, batch, length);
  if (!s.ok()) return s;
  if (!(s = CheckTokens("step", "tokens", im.config, batch, length, tokens)).ok()) return s;
  if (!(s = CheckTokens("step", "targets", im.config, batch, length, targets)).ok()) return s;
  if (!(s = CheckMask("step", batch * length, loss_mask)).ok()) return s;
  const uint64_t calls_before = im.dropout_calls;
  if (!im.Forward(batch, length, tokens, true, nullptr)) {
    return Status::OutOfMemory("step: out of memory (wasm memory is limited to 2 GiB)");
  }
  train::CrossEntropyResult ce;
  train::CrossEntropyForwardBackward(batch * length, length, im.config.vocab_size, im.logits.data(),
                                     targets, loss_mask, im.dlogits.data(), &ce);
  StepResult r;
  FillResult(ce, batch, &r);
  auto stop = [&](const char* what, double value) {
    im.dropout_calls = calls_before;
    std::ostringstream os;
    os << "step: the " << what << " became " << value << " at step " << im.step + 1
       << "; training stopped and the weights of the last good step are kept (try a smaller lr, or clip)";
    return Status{StatusCode::kFailedPrecondition, os.str()};
  };
  if (!std::isfinite(r.loss)) return stop("loss", r.loss);
  if (!im.Backward(batch, length, tokens)) {
    im.dropout_calls = calls_before;
    return Status::OutOfMemory("step: out of memory (wasm memory is limited to 2 GiB)");
  }
  r.grad_norm = train::GlobalNorm(im.count, im.grads.data());
  if (!std::isfinite(r.grad_norm)) return stop("gradient norm", r.grad_norm);
  const AdamWConfig& o = im.opt;
  const float scale = (o.clip > 0.0f && r.grad_norm > o.clip)
                          ? static_cast<float>(o.clip / r.grad_norm)
                          : 1.0f;
  ++im.step;
  float lr = o.lr;
  if (o.warmup > 0 && im.step < o.warmup) {
    lr = o.lr * static_cast<float>(im.step) / static_cast<float>(o.warmup);
  }
  train::AdamWUpdate(im.count, im.params.data(), im.grads.data(), im.m.data(), im.v.data(),
                     im.decay.data(), o, lr, im.step, scale);
  r.lr = lr;
  r.step = im.step;
  *result = r;
  return Status::Ok();
}

}  // namespace attnlab

// The block graph of every model in the library (train.h TransformerConfig):
// the tiny transformer of the training chapter, GPT-2, Llama and BERT
// checkpoints (web/lib/model/ maps their files onto it), trained with one
// call per step or run with a key/value cache. R = rows of one call:
//   x0 = Emb[tokens] + Pos (+ Type[0]); embed_norm: x0 = LN(e0)      [R, E]
//   post-norm block (x = x_l):
//     a  = Dropout(MHA(x, x, x))   (MhaActivations q, k, v, ctx)     [R, E]
//     h  = Norm1(x + a)                                              [R, E]
//     f1 = h·W1ᵀ + b1;  g = act(f1) (SwiGLU: SiLU(h·Wgᵀ)·f1)          [R, F]
//     f2 = Dropout(g·W2ᵀ + b2);  x_{l+1} = Norm2(h + f2)             [R, E]
//   pre-norm block:
//     n1 = Norm1(x);  a = Dropout(MHA(n1));  h = x + a
//     n2 = Norm2(h);  f1, g as above from n2;  x_{l+1} = h + Dropout(f2)
//   xf = FinalNorm(x_N) (pre-norm) or x_N;  MLM: t = LN(GELU(xf·Wtᵀ + bt))
//   logits = (t or xf)·Whᵀ + bh   (Wh = Emb when tied)                [R, V]
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
  // Offsets into the flat vector; -1 where the config has no such tensor.
  int64_t norm1_w = -1, norm1_b = -1, w1 = -1, b1 = -1, wg = -1, w2 = -1, b2 = -1,
          norm2_w = -1, norm2_b = -1, attn_off[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  const kernels::PackedB* pk[8] = {};  // packed attention projections (inference)
};

struct BlockActs {
  train::MhaActivations mha;
  AlignedBuffer a, h, f1, g, f2;
  AlignedBuffer n1, n2, fg;  // pre-norm inputs of MHA and MLP; the SwiGLU gate
};

// A key/value cache per layer, [maxL, Hkv·D] (Extend, batch 1).
struct LayerCache {
  AlignedBuffer k, v;
};

// A projection weight held packed for the GEMM (packed_weights): W [out, in]
// as B [in, out] in panels (kernels::PackB), packed once; with packed_half,
// the same panels of 16-bit values (pb.half: buf holds uint16_t).
struct PackedWeight {
  AlignedBuffer buf;
  kernels::PackedB pb;
  int64_t out = 0, in = 0;
};

bool IsProjection(const std::string& name) {
  static const char* kSuffixes[] = {".attn.wq", ".attn.wk", ".attn.wv", ".attn.wo", ".ffn.w1",
                                    ".ffn.wg", ".ffn.w2", "mlm.dense.weight", "head.weight"};
  for (const char* suffix : kSuffixes) {
    const size_t n = std::strlen(suffix);
    if (name.size() >= n && name.compare(name.size() - n, std::string::npos, suffix) == 0) return true;
  }
  return false;
}
}  // namespace

struct Transformer::Impl {
  TransformerConfig config;
  std::vector<ParamInfo> infos;
  // Where each parameter lives: a float offset into `params`, or (packed
  // projections) -(2 + j) for packed[j]. The block offsets below hold the
  // same codes, so P() of a packed weight is null and Pk() finds it.
  std::vector<int64_t> storage;
  std::vector<std::unique_ptr<PackedWeight>> packed;
  int64_t stored = 0;  // floats in `params`
  AlignedBuffer params, grads, m, v;
  bool training_buffers = false;
  std::vector<uint8_t> decay;
  int64_t count = 0;
  int64_t embed_off = 0, pos_off = -1, type_off = -1, embed_norm_w = -1, embed_norm_b = -1;
  int64_t final_norm_w = -1, final_norm_b = -1;
  int64_t mlm_w = -1, mlm_b = -1, mlm_norm_w = -1, mlm_norm_b = -1;
  int64_t head_w = -1, head_b = -1;
  std::vector<BlockParams> blocks;
  std::vector<float> sinusoid;        // [maxL, E] when positional is sinusoidal
  std::vector<float> rope_cos, rope_sin, rope_neg_sin;  // [maxL, D/2] (rope)
  train::RopeTables rope;
  std::vector<uint8_t> head_enabled;  // [N, H]
  // Activations and gradient scratch.
  std::unique_ptr<AlignedBuffer[]> x;  // N + 1 buffers [R, E]
  std::unique_ptr<BlockActs[]> acts;   // N
  AlignedBuffer e0, xf, t1, t2, t3;    // embedding sum, final norm, MLM transform
  AlignedBuffer logits, dlogits, dx, dh, dtmp, dn, dg, dg2;
  // A tied LM head over a 16-bit checkpoint (packed_half): wte's rows also
  // in 16 bits, as the file holds them ([V, E], kernels::HalfMatrix), for
  // the GEMV of the few-row calls (decoding), which then streams half of
  // wte's bytes with the same results. Used once every row was written
  // from 16 bits (WriteParamHalf; a float write of a row takes it back).
  AlignedBuffer head16;
  kernels::HalfMatrix head16_w;
  std::vector<uint8_t> head16_row;
  int64_t head16_rows = 0;
  bool HeadCopyReady() const {
    return head16_w.data != nullptr && head16_rows == config.vocab_size;
  }
  void ForgetHeadRows(int64_t first, int64_t rows) {
    for (int64_t i = first; i < first + rows; ++i) {
      head16_rows -= head16_row[static_cast<size_t>(i)];
      head16_row[static_cast<size_t>(i)] = 0;
    }
  }
  std::unique_ptr<LayerCache[]> cache;  // N, allocated by the first Extend
  int64_t cached = 0;
  int64_t last_rows = 0;  // rows of the last Forward / Extend (LayerInputs)
  train::Workspace ws;
  int64_t rows_reserved = 0, grad_rows_reserved = 0;
  AdamWConfig opt;
  int64_t step = 0;
  uint64_t dropout_calls = 0;

  // Registers a parameter; returns its storage code (see `storage`).
  int64_t Add(const std::string& name, std::vector<int64_t> shape, bool dec) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    ParamInfo info;
    info.name = name;
    info.shape = std::move(shape);
    info.offset = count;
    info.decay = dec;
    int64_t code = stored;
    if (config.packed_weights && info.shape.size() == 2 && IsProjection(name)) {
      auto w = std::make_unique<PackedWeight>();
      w->out = info.shape[0];
      w->in = info.shape[1];
      code = -2 - static_cast<int64_t>(packed.size());
      packed.push_back(std::move(w));
      info.packed = true;
    } else {
      stored += n;
    }
    storage.push_back(code);
    infos.push_back(info);
    count += n;
    return code;
  }

  float* P(int64_t off) { return off < 0 ? nullptr : params.data() + off; }
  float* G(int64_t off) { return off < 0 ? nullptr : grads.data() + off; }
  const kernels::PackedB* Pk(int64_t off) {
    return off <= -2 ? &packed[static_cast<size_t>(-2 - off)]->pb : nullptr;
  }
  // y = x·Wᵀ + b through the packed weight when there is one.
  bool Lin(int64_t rows, int64_t in, int64_t out, const float* x, int64_t w, int64_t b, float* y) {
    if (const kernels::PackedB* pk = Pk(w)) {
      train::LinearForwardPacked(rows, in, out, x, *pk, P(b), y);
      return true;
    }
    return train::LinearForward(rows, in, out, x, P(w), P(b), y, &ws);
  }

  int64_t KvWidth() const {
    const int64_t hkv = config.num_kv_heads > 0 ? config.num_kv_heads : config.num_heads;
    return hkv * (config.embed_dim / config.num_heads);
  }

  bool EnsureTrainingBuffers() {
    if (training_buffers) return true;
    if (!grads.Reserve(count) || !m.Reserve(count) || !v.Reserve(count)) return false;
    // One weight-decay flag a parameter (a byte each: made here, not at
    // Create, so that a model that only runs holds its weights alone).
    decay.assign(static_cast<size_t>(count), 0);
    for (const ParamInfo& info : infos) {
      int64_t n = 1;
      for (int64_t d : info.shape) n *= d;
      if (info.decay) std::fill(decay.begin() + info.offset, decay.begin() + info.offset + n, 1);
    }
    std::fill(grads.data(), grads.data() + count, 0.0f);
    std::fill(m.data(), m.data() + count, 0.0f);
    std::fill(v.data(), v.data() + count, 0.0f);
    for (auto& b : blocks) {
      for (int i = 0; i < 8; ++i) b.dattn.w[i] = G(b.attn_off[i]);
    }
    training_buffers = true;
    return true;
  }

  bool Reserve(int64_t rows, bool training) {
    if (rows <= rows_reserved && (!training || rows <= grad_rows_reserved)) return true;
    const TransformerConfig& c = config;
    const int64_t e = c.embed_dim, f = c.ffn_dim, vocab = c.vocab_size;
    const int64_t r = std::max(rows, rows_reserved);
    for (int64_t l = 0; l <= c.num_layers; ++l) {
      if (!x[l].Reserve(r * e)) return false;
    }
    const bool swiglu = c.activation == Activation::kSwiGlu;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      BlockActs& a = acts[l];
      if (!a.a.Reserve(r * e) || !a.h.Reserve(r * e) || !a.f1.Reserve(r * f) ||
          !a.g.Reserve(r * f) || !a.f2.Reserve(r * e)) {
        return false;
      }
      if (c.prenorm && (!a.n1.Reserve(r * e) || !a.n2.Reserve(r * e))) return false;
      if (swiglu && !a.fg.Reserve(r * f)) return false;
    }
    if (c.embed_norm && !e0.Reserve(r * e)) return false;
    if (c.prenorm && !xf.Reserve(r * e)) return false;
    if (c.mlm_head && (!t1.Reserve(r * e) || !t2.Reserve(r * e) || !t3.Reserve(r * e))) return false;
    if (training) {
      if (!logits.Reserve(r * vocab) || !dlogits.Reserve(r * vocab) || !dx.Reserve(r * e) || !dh.Reserve(r * e) ||
          !dtmp.Reserve(r * e) || !dn.Reserve(r * e) || !dg.Reserve(r * f) ||
          (swiglu && !dg2.Reserve(r * f))) {
        return false;
      }
      grad_rows_reserved = r;
    }
    rows_reserved = r;
    return true;
  }

  uint32_t DropoutSeed(uint64_t call) const {
    return Hash32(config.seed ^ Hash32(static_cast<uint32_t>(call) * 0x9E3779B9u + 0x632BE5ABu));
  }

  void Norm(int64_t rows, const float* in, const float* r, int64_t w, int64_t b, float* out) {
    if (config.norm == NormKind::kRmsNorm) {
      train::RmsNormForward(rows, config.embed_dim, in, P(w), config.eps, out);
    } else {
      train::ResidualLayerNormForward(rows, config.embed_dim, in, r, P(w), P(b), config.eps, out);
    }
  }
  // dz = ∂/∂(in + r) of Norm (written); the weight grads accumulate.
  void NormBackward(int64_t rows, const float* in, const float* r, int64_t w, int64_t b,
                    const float* dy, float* dz) {
    if (config.norm == NormKind::kRmsNorm) {
      train::RmsNormBackward(rows, config.embed_dim, in, P(w), config.eps, dy, dz, G(w));
    } else {
      train::ResidualLayerNormBackward(rows, config.embed_dim, in, r, P(w), config.eps, dy, dz,
                                       G(w), G(b));
    }
  }

  // The MLP of one block: f2 = W2·act(W1·in + b1) + b2.
  bool Mlp(int64_t rows, const BlockParams& bp, BlockActs& a, const float* in) {
    const int64_t e = config.embed_dim, f = config.ffn_dim;
    if (!Lin(rows, e, f, in, bp.w1, bp.b1, a.f1.data())) return false;
    switch (config.activation) {
      case Activation::kGelu: train::GeluForward(rows * f, a.f1.data(), a.g.data()); break;
      case Activation::kGeluTanh: train::GeluTanhForward(rows * f, a.f1.data(), a.g.data()); break;
      case Activation::kSwiGlu:
        if (!Lin(rows, e, f, in, bp.wg, -1, a.fg.data())) return false;
        train::SwiGluForward(rows * f, a.fg.data(), a.f1.data(), a.g.data());
        break;
    }
    return Lin(rows, f, e, a.g.data(), bp.w2, bp.b2, a.f2.data());
  }
  // dout: ∂/∂f2 (read); din: ∂/∂in (written).
  bool MlpBackward(int64_t rows, BlockParams& bp, BlockActs& a, const float* in,
                   const float* dout, float* din) {
    const int64_t e = config.embed_dim, f = config.ffn_dim;
    if (!train::LinearBackward(rows, f, e, a.g.data(), P(bp.w2), dout, dg.data(), false,
                               G(bp.w2), G(bp.b2), &ws)) {
      return false;
    }
    switch (config.activation) {
      case Activation::kGelu: train::GeluBackward(rows * f, a.f1.data(), dg.data(), dg.data()); break;
      case Activation::kGeluTanh: train::GeluTanhBackward(rows * f, a.f1.data(), dg.data(), dg.data()); break;
      case Activation::kSwiGlu:
        // dg2 ← ∂/∂gate, dg ← ∂/∂up.
        train::SwiGluBackward(rows * f, a.fg.data(), a.f1.data(), dg.data(), dg2.data(), dg.data());
        if (!train::LinearBackward(rows, e, f, in, P(bp.wg), dg2.data(), din, false, G(bp.wg),
                                   nullptr, &ws)) {
          return false;
        }
        return train::LinearBackward(rows, e, f, in, P(bp.w1), dg.data(), din, true, G(bp.w1),
                                     G(bp.b1), &ws);
    }
    return train::LinearBackward(rows, e, f, in, P(bp.w1), dg.data(), din, false, G(bp.w1),
                                 G(bp.b1), &ws);
  }

  // pos0 > 0 or use_cache: batch 1, positions pos0.. (Extend).
  // last_row (with use_cache): only the last row's final hidden state is
  // wanted, so the last block queries and runs on that row alone after its
  // keys and values are cached (as llama.cpp's inp_out_ids): the other rows
  // of x[N] / xf are left unwritten, and x[0..N−1] and the cache are as
  // without it.
  bool Forward(int64_t batch, int64_t length, const int32_t* tokens, bool training,
               float* attention, int64_t pos0, bool use_cache, bool last_row = false);
  bool Backward(int64_t batch, int64_t length, const int32_t* tokens);
  // The head's input rows (after the final norm / MLM transform) and the
  // hidden state reported to callers.
  const float* HeadInput() {
    if (config.mlm_head) return t3.data();
    return config.prenorm ? xf.data() : x[config.num_layers].data();
  }
  const float* Hidden() { return config.prenorm ? xf.data() : x[config.num_layers].data(); }
  const float* HeadWeight() { return config.tie_embeddings ? P(embed_off) : P(head_w); }
  // logits [rows, V] of the head input rows first..first+rows−1.
  bool Logits(int64_t first, int64_t rows, float* out) {
    const int64_t e = config.embed_dim;
    if (!config.tie_embeddings) return Lin(rows, e, config.vocab_size, HeadInput() + first * e, head_w, head_b, out);
    if (rows <= internal::kGemvRows && HeadCopyReady()) {  // what LinearForward's GEMV gives
      kernels::GemvTHalf(rows, config.vocab_size, e, HeadInput() + first * e, e, head16_w, P(head_b),
                         out, config.vocab_size);
      return true;
    }
    return train::LinearForward(rows, e, config.vocab_size, HeadInput() + first * e, HeadWeight(),
                                P(head_b), out, &ws);
  }
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
  if (c.num_kv_heads < 0 || (c.num_kv_heads > 0 && c.num_heads % c.num_kv_heads != 0)) {
    std::ostringstream os;
    os << "numKvHeads (" << c.num_kv_heads << ") must divide numHeads (" << c.num_heads << ")";
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
  if (c.positional == Positional::kRope && !(s = internal::CheckRopeBase(c.rope_theta)).ok()) {
    return Invalid(w, "ropeTheta: " + s.message);
  }
  const int norm = static_cast<int>(c.norm), act = static_cast<int>(c.activation);
  if (norm < 0 || norm > 1) return Invalid(w, "norm must be 'layernorm' or 'rmsnorm'");
  if (act < 0 || act > 2) return Invalid(w, "activation must be 'gelu', 'gelu_new' or 'swiglu'");
  if (c.norm == NormKind::kRmsNorm && !c.prenorm) return Invalid(w, "norm 'rmsnorm' needs prenorm blocks");
  if (c.mlm_head && !c.has_head) return Invalid(w, "mlmHead needs a head");
  if (c.type_vocab < 0) return Invalid(w, "typeVocab must be >= 0");
  if (c.packed_half < 0 || c.packed_half > 2) return Invalid(w, "packedHalf must be 0 (float32), 1 (F16) or 2 (BF16)");
  if (c.packed_half != 0 && !c.packed_weights) return Invalid(w, "packedHalf needs packedWeights");
  if (!(c.init_std >= 0.0f) || !std::isfinite(c.init_std)) return Invalid(w, "initStd must be a finite number >= 0");
  int64_t n = 0;
  if (!(s = internal::TensorElements("the embedding [vocabSize, embedDim]", {c.vocab_size, c.embed_dim}, &n)).ok()) return s;
  if (!(s = internal::TensorElements("the feed-forward weights [ffnDim, embedDim]", {c.ffn_dim, c.embed_dim}, &n)).ok()) return s;
  if (!(s = internal::TensorElements("the positions [maxLength, embedDim]", {c.max_length, c.embed_dim}, &n)).ok()) return s;
  if (c.num_layers > 256) return Invalid(w, "numLayers must be at most 256");
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

bool EndsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, std::string::npos, suffix) == 0;
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
  const int64_t nl = config.num_layers, ekv = im.KvWidth();
  const bool layer_norm = config.norm == NormKind::kLayerNorm;
  // The order of this list fixes the offsets and the init seeds: options add
  // tensors without moving the default model's.
  im.embed_off = im.Add("embed.weight", {vocab, e}, true);
  if (config.positional == Positional::kLearned) {
    im.pos_off = im.Add("pos.weight", {config.max_length, e}, true);
  }
  if (config.type_vocab > 0) im.type_off = im.Add("type.weight", {config.type_vocab, e}, true);
  if (config.embed_norm) {
    im.embed_norm_w = im.Add("embed_norm.weight", {e}, false);
    im.embed_norm_b = im.Add("embed_norm.bias", {e}, false);
  }
  static const char* kAttn[8] = {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"};
  im.blocks.resize(static_cast<size_t>(nl));
  for (int64_t l = 0; l < nl; ++l) {
    BlockParams& b = im.blocks[static_cast<size_t>(l)];
    const std::string p = "blocks." + std::to_string(l) + ".";
    for (int i = 0; i < 8; ++i) {
      const bool bias = i % 2 == 1;
      if (bias && !(i == 7 ? config.out_bias : config.qkv_bias)) continue;  // bo : bq, bk, bv
      const bool kv = i >= 2 && i < 6;  // wk, bk, wv, bv
      const int64_t rows = kv ? ekv : e;
      b.attn_off[i] = im.Add(p + "attn." + kAttn[i], bias ? std::vector<int64_t>{rows} : std::vector<int64_t>{rows, e}, !bias);
    }
    b.norm1_w = im.Add(p + "norm1.weight", {e}, false);
    if (layer_norm) b.norm1_b = im.Add(p + "norm1.bias", {e}, false);
    b.w1 = im.Add(p + "ffn.w1", {f, e}, true);
    if (config.ffn_bias) b.b1 = im.Add(p + "ffn.b1", {f}, false);
    if (config.activation == Activation::kSwiGlu) b.wg = im.Add(p + "ffn.wg", {f, e}, true);
    b.w2 = im.Add(p + "ffn.w2", {e, f}, true);
    if (config.ffn_bias) b.b2 = im.Add(p + "ffn.b2", {e}, false);
    b.norm2_w = im.Add(p + "norm2.weight", {e}, false);
    if (layer_norm) b.norm2_b = im.Add(p + "norm2.bias", {e}, false);
  }
  if (config.prenorm) {
    im.final_norm_w = im.Add("final_norm.weight", {e}, false);
    if (layer_norm) im.final_norm_b = im.Add("final_norm.bias", {e}, false);
  }
  if (config.mlm_head) {
    im.mlm_w = im.Add("mlm.dense.weight", {e, e}, true);
    im.mlm_b = im.Add("mlm.dense.bias", {e}, false);
    im.mlm_norm_w = im.Add("mlm.norm.weight", {e}, false);
    im.mlm_norm_b = im.Add("mlm.norm.bias", {e}, false);
  }
  if (config.has_head && !config.tie_embeddings) im.head_w = im.Add("head.weight", {vocab, e}, true);
  if (config.has_head && config.head_bias) im.head_b = im.Add("head.bias", {vocab}, false);

  int64_t bytes = 0;
  bool packed_ok = true;
  for (auto& w : im.packed) {
    const int64_t n = kernels::PackedFloats(w->in, w->out);
    const int64_t nr = kernels::GemmNr(w->out);
    const int64_t floats = config.packed_half != 0 ? (n + 1) / 2 : n;
    if (!w->buf.Reserve(floats)) {
      packed_ok = false;
      break;
    }
    std::fill(w->buf.data(), w->buf.data() + floats, 0.0f);
    if (config.packed_half != 0) {
      w->pb = kernels::PackedB{nullptr, nr, w->in * nr, reinterpret_cast<const uint16_t*>(w->buf.data()),
                               static_cast<kernels::HalfKind>(config.packed_half)};
    } else {
      w->pb = kernels::PackedB{w->buf.data(), nr, w->in * nr};
    }
  }
  if (!packed_ok || !internal::CheckedMul(im.count, 4, &bytes) || bytes > kMaxCallBytes ||
      !im.params.Reserve(std::max<int64_t>(im.stored, 1)) ||
      !internal::CanAllocate(im.stored + nl * config.num_heads + config.max_length * e * 4)) {
    std::ostringstream os;
    os << "transformer: out of memory for the parameters (" << im.count << " floats, "
       << (im.count * 4.0) / (1 << 20) << " MiB)";
    *status = Status::OutOfMemory(os.str());
    return nullptr;
  }
  std::fill(im.params.data(), im.params.data() + im.stored, 0.0f);
  const int64_t group = kernels::HalfRowGroup();
  if (config.packed_half != 0 && config.tie_embeddings && config.has_head && e % group == 0 &&
      internal::CanAllocate((vocab * e + 1) / 2 + config.max_length * e * 4) && im.head16.Reserve((vocab * e + 1) / 2)) {
    // (optional: without room for it the float head runs)
    im.head16_w = kernels::HalfMatrix{reinterpret_cast<const uint16_t*>(im.head16.data()), e, group,
                                      static_cast<kernels::HalfKind>(config.packed_half)};
    im.head16_row.assign(static_cast<size_t>(vocab), 0);
  }
  const float gpt2_std = config.init_std;
  const float residual_std = gpt2_std / std::sqrt(2.0f * static_cast<float>(nl));
  for (size_t i = 0; i < im.infos.size(); ++i) {
    const ParamInfo& info = im.infos[i];
    int64_t n = 1;
    for (int64_t d : info.shape) n *= d;
    if (!config.init_weights) continue;
    const uint32_t seed = Hash32(config.seed * 0x9E3779B9u + static_cast<uint32_t>(i) + 1u);
    float* p = im.P(im.storage[i]);
    if (p == nullptr) continue;  // packed (a loaded model: written by WriteParam)
    const std::string& name = info.name;
    const bool embedding = name == "embed.weight" || name == "pos.weight" || name == "type.weight";
    if (EndsWith(name, "norm1.weight") || EndsWith(name, "norm2.weight") || EndsWith(name, "norm.weight")) {
      std::fill(p, p + n, 1.0f);
    } else if (gpt2_std > 0.0f && (embedding || info.shape.size() == 2)) {
      // GPT-2's init: normal(0, std), the residual projections std/√(2N).
      const bool residual = EndsWith(name, ".attn.wo") || EndsWith(name, ".ffn.w2");
      FillNormal(p, n, residual ? residual_std : gpt2_std, seed);
    } else if (embedding) {
      FillNormal(p, n, 1.0f, seed);
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
      b.pk[i] = im.Pk(b.attn_off[i]);
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
    RotaryCache(config.max_length, 2 * half, config.rope_theta, im.rope_cos.data(), im.rope_sin.data());
    for (size_t i = 0; i < n; ++i) im.rope_neg_sin[i] = -im.rope_sin[i];
    im.rope = {im.rope_cos.data(), im.rope_sin.data(), im.rope_neg_sin.data()};
  }
  im.head_enabled.assign(static_cast<size_t>(nl * config.num_heads), 1);
  im.x.reset(new AlignedBuffer[static_cast<size_t>(nl + 1)]);
  im.acts.reset(new BlockActs[static_cast<size_t>(nl)]);
  *status = Status::Ok();
  return t;
}

const TransformerConfig& Transformer::config() const { return impl_->config; }
const std::vector<ParamInfo>& Transformer::params() const { return impl_->infos; }
int64_t Transformer::ParamCount() const { return impl_->count; }
const float* Transformer::Params() const { return impl_->params.data(); }
const float* Transformer::Gradients() const {
  return impl_->training_buffers ? impl_->grads.data() : nullptr;
}

namespace {
int64_t Elements(const ParamInfo& info) {
  int64_t n = 1;
  for (int64_t d : info.shape) n *= d;
  return n;
}
// [R, C] of a parameter (a vector is [1, n]).
void RowsCols(const ParamInfo& info, int64_t* r, int64_t* c) {
  *r = info.shape.size() == 2 ? info.shape[0] : 1;
  *c = info.shape.size() == 2 ? info.shape[1] : Elements(info);
}
}  // namespace

void Transformer::CopyParams(float* out) const {
  const Impl& im = *impl_;
  for (size_t i = 0; i < im.infos.size(); ++i) {
    const ParamInfo& info = im.infos[i];
    const int64_t code = im.storage[i];
    float* dst = out + info.offset;
    if (code >= 0) {
      std::memcpy(dst, im.params.data() + code, static_cast<size_t>(Elements(info)) * sizeof(float));
      continue;
    }
    const PackedWeight& w = *im.packed[static_cast<size_t>(-2 - code)];
    const kernels::PackedB& b = w.pb;
    for (int64_t o = 0; o < w.out; ++o) {
      if (b.half != nullptr) {
        for (int64_t k = 0; k < w.in; ++k) dst[o * w.in + k] = kernels::HalfToFloat(b.half[kernels::HalfOffset(b, k, o)], b.kind);
        continue;
      }
      const float* col = b.data + (o / b.nr) * b.panel_stride + o % b.nr;
      for (int64_t k = 0; k < w.in; ++k) dst[o * w.in + k] = col[k * b.nr];
    }
  }
}

namespace {
// WriteParam's argument checks (both source types).
Status CheckWrite(const std::vector<ParamInfo>& infos, int64_t index, int64_t first, int64_t rows,
                  const void* src, int64_t ld, bool transposed) {
  if (index < 0 || index >= static_cast<int64_t>(infos.size())) {
    return Status::Invalid("writeParam: no parameter " + std::to_string(index));
  }
  const ParamInfo& info = infos[static_cast<size_t>(index)];
  int64_t r = 0, c = 0;
  RowsCols(info, &r, &c);
  const int64_t lim = transposed ? c : r, width = transposed ? r : c;
  if (first < 0 || rows < 0 || first + rows > lim || ld < width || (rows > 0 && src == nullptr)) {
    std::ostringstream os;
    os << "writeParam: rows [" << first << ", " << first + rows << ") of " << info.name
       << " do not fit its " << lim << " rows of " << width << " (ld " << ld << ")";
    return Status::Invalid(os.str());
  }
  return Status::Ok();
}
}  // namespace

Status Transformer::WriteParamHalf(int64_t index, int64_t first, int64_t rows, const uint16_t* src,
                                   int64_t ld, bool transposed, int32_t kind) {
  Impl& im = *impl_;
  Status s = CheckWrite(im.infos, index, first, rows, src, ld, transposed);
  if (!s.ok()) return s;
  if (kind != 1 && kind != 2) return Status::Invalid("writeParamHalf: kind must be 1 (F16) or 2 (BF16), got " + std::to_string(kind));
  const auto hk = static_cast<kernels::HalfKind>(kind);
  const ParamInfo& info = im.infos[static_cast<size_t>(index)];
  int64_t r = 0, c = 0;
  RowsCols(info, &r, &c);
  const int64_t width = transposed ? r : c;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < width; ++j) {
      if (!kernels::IsHalfFinite(src[i * ld + j], hk)) {
        const int64_t e = transposed ? j * c + first + i : (first + i) * c + j;
        std::ostringstream os;
        os << "weights must be finite: " << info.name << " element " << e << " is "
           << ((src[i * ld + j] & (hk == kernels::HalfKind::kF16 ? 0x3ffu : 0x7fu)) ? "NaN" : "Inf");
        return Status::Invalid(os.str());
      }
    }
  }
  const int64_t code = im.storage[static_cast<size_t>(index)];
  const kernels::PackedB* pb = code <= -2 ? &im.packed[static_cast<size_t>(-2 - code)]->pb : nullptr;
  if (pb == nullptr || pb->half == nullptr || pb->kind != hk) {
    // Stored as float32: convert a row at a time through WriteParam.
    std::vector<float> row(static_cast<size_t>(width));
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < width; ++j) row[static_cast<size_t>(j)] = kernels::HalfToFloat(src[i * ld + j], hk);
      s = WriteParam(index, first + i, 1, row.data(), width, transposed);
      if (!s.ok()) return s;
    }
    if (code == im.embed_off && !transposed && im.head16_w.data != nullptr && im.head16_w.kind == hk) {
      uint16_t* head = const_cast<uint16_t*>(im.head16_w.data);
      for (int64_t i = 0; i < rows; ++i) {
        uint16_t* dst = head + (first + i) * im.head16_w.ld;
        for (int64_t j = 0; j < c; ++j) dst[kernels::HalfRowOffset(im.head16_w, j)] = src[i * ld + j];
        uint8_t& done = im.head16_row[static_cast<size_t>(first + i)];
        im.head16_rows += 1 - done;
        done = 1;
      }
    }
    return Status::Ok();
  }
  im.cached = 0;
  uint16_t* data = const_cast<uint16_t*>(pb->half);
  for (int64_t i = 0; i < rows; ++i) {
    const uint16_t* row = src + i * ld;
    if (!transposed) {
      const int64_t n = first + i;  // a row of W: column n of B
      for (int64_t k = 0; k < c; ++k) data[kernels::HalfOffset(*pb, k, n)] = row[k];
    } else {
      const int64_t k = first + i;  // a row of B
      for (int64_t n = 0; n < r; ++n) data[kernels::HalfOffset(*pb, k, n)] = row[n];
    }
  }
  return Status::Ok();
}

Status Transformer::WriteParam(int64_t index, int64_t first, int64_t rows, const float* src,
                               int64_t ld, bool transposed) {
  Impl& im = *impl_;
  Status st = CheckWrite(im.infos, index, first, rows, src, ld, transposed);
  if (!st.ok()) return st;
  const ParamInfo& info = im.infos[static_cast<size_t>(index)];
  int64_t r = 0, c = 0;
  RowsCols(info, &r, &c);
  const int64_t code = im.storage[static_cast<size_t>(index)];
  if (code <= -2 && im.packed[static_cast<size_t>(-2 - code)]->pb.half != nullptr) {
    return Status::Invalid("writeParam: " + info.name + " is held in 16 bits (packed_half); write it with writeParamHalf");
  }
  im.cached = 0;
  if (code == im.embed_off && im.head16_w.data != nullptr) {
    if (transposed) {
      im.ForgetHeadRows(0, r);
    } else {
      im.ForgetHeadRows(first, rows);
    }
  }
  if (code >= 0) {
    float* dst = im.params.data() + code;
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = src + i * ld;
      if (!transposed) {
        std::memcpy(dst + (first + i) * c, row, static_cast<size_t>(c) * sizeof(float));
      } else {
        for (int64_t j = 0; j < r; ++j) dst[j * c + first + i] = row[j];  // W[j][first + i]
      }
    }
    return Status::Ok();
  }
  // Packed: W [out, in] is B [k = in, n = out], B(k, n) at
  // data[(n / nr)·stride + k·nr + n % nr].
  const kernels::PackedB& b = im.packed[static_cast<size_t>(-2 - code)]->pb;
  float* data = const_cast<float*>(b.data);
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = src + i * ld;
    if (!transposed) {
      const int64_t n = first + i;  // a row of W: column n of B
      float* col = data + (n / b.nr) * b.panel_stride + n % b.nr;
      for (int64_t k = 0; k < c; ++k) col[k * b.nr] = row[k];
    } else {
      const int64_t k = first + i;  // a row of B
      for (int64_t n = 0; n < r; ++n) data[(n / b.nr) * b.panel_stride + k * b.nr + n % b.nr] = row[n];
    }
  }
  return Status::Ok();
}

Status Transformer::CheckParams() const {
  const Impl& im = *impl_;
  for (size_t i = 0; i < im.infos.size(); ++i) {
    const ParamInfo& info = im.infos[i];
    const int64_t code = im.storage[i];
    int64_t bad = -1;
    float value = 0.0f;
    if (code >= 0) {
      const float* p = im.params.data() + code;
      for (int64_t j = 0, n = Elements(info); j < n && bad < 0; ++j) {
        if (!std::isfinite(p[j])) bad = j, value = p[j];
      }
    } else if (im.packed[static_cast<size_t>(-2 - code)]->pb.half == nullptr) {  // (16-bit: checked as written)
      const PackedWeight& w = *im.packed[static_cast<size_t>(-2 - code)];
      for (int64_t o = 0; o < w.out && bad < 0; ++o) {
        const float* col = w.pb.data + (o / w.pb.nr) * w.pb.panel_stride + o % w.pb.nr;
        for (int64_t k = 0; k < w.in; ++k) {
          if (!std::isfinite(col[k * w.pb.nr])) {
            bad = o * w.in + k, value = col[k * w.pb.nr];
            break;
          }
        }
      }
    }
    if (bad >= 0) {
      std::ostringstream os;
      os << "weights must be finite: " << info.name << " element " << bad << " is " << value;
      return Status::Invalid(os.str());
    }
  }
  return Status::Ok();
}

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
  if (impl_->config.packed_half != 0) {
    return Status::Invalid("setWeights: this model keeps its projections in 16 bits, as its file holds them; load it again to change them");
  }
  if (!impl_->config.packed_weights) {
    std::memcpy(impl_->params.data(), data, static_cast<size_t>(impl_->count) * sizeof(float));
  } else {
    for (size_t i = 0; i < impl_->infos.size(); ++i) {
      const ParamInfo& info = impl_->infos[i];
      int64_t r = 0, c = 0;
      RowsCols(info, &r, &c);
      (void)WriteParam(static_cast<int64_t>(i), 0, r, data + info.offset, c, false);
    }
  }
  impl_->cached = 0;
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
  impl_->cached = 0;  // cached K/V of later layers depended on it
  return Status::Ok();
}

void Transformer::ResetOptimizer() {
  if (impl_->training_buffers) {
    std::fill(impl_->m.data(), impl_->m.data() + impl_->count, 0.0f);
    std::fill(impl_->v.data(), impl_->v.data() + impl_->count, 0.0f);
  }
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
  if (!impl_->config.has_head) return Status::Invalid("trainer: a model without a head cannot be trained");
  if (impl_->config.packed_weights) {
    return Status::Invalid("trainer: a loaded model runs only (its weights are packed for inference); train a lab.transformer, or load its weights into one with setWeights");
  }
  if (!impl_->EnsureTrainingBuffers()) {
    return Status::OutOfMemory("trainer: out of memory for the gradients and AdamW moments (3 × the weights)");
  }
  impl_->opt = c;
  return Status::Ok();
}

int64_t Transformer::HeadCopyBytes() const {
  return impl_->HeadCopyReady() ? impl_->head16.bytes() : 0;
}

int64_t Transformer::HeldBytes() const {
  const Impl& im = *impl_;
  int64_t b = im.params.bytes() + im.grads.bytes() + im.m.bytes() + im.v.bytes() + im.head16.bytes();
  for (int64_t l = 0; l <= im.config.num_layers; ++l) b += im.x[l].bytes();
  for (int64_t l = 0; l < im.config.num_layers; ++l) {
    const BlockActs& a = im.acts[l];
    b += a.a.bytes() + a.h.bytes() + a.f1.bytes() + a.g.bytes() + a.f2.bytes() +
         a.n1.bytes() + a.n2.bytes() + a.fg.bytes() +
         a.mha.q.bytes() + a.mha.k.bytes() + a.mha.v.bytes() + a.mha.ctx.bytes();
    if (im.cache) b += im.cache[l].k.bytes() + im.cache[l].v.bytes();
  }
  b += im.e0.bytes() + im.xf.bytes() + im.t1.bytes() + im.t2.bytes() + im.t3.bytes();
  for (const auto& w : im.packed) b += w->buf.bytes();
  b += im.logits.bytes() + im.dlogits.bytes() + im.dx.bytes() + im.dh.bytes() +
       im.dtmp.bytes() + im.dn.bytes() + im.dg.bytes() + im.dg2.bytes();
  b += im.ws.pack.bytes() + im.ws.pack2.bytes() + im.ws.trans.bytes() + im.ws.tile.bytes() +
       im.ws.g_ctx.bytes() + im.ws.g_q.bytes() + im.ws.g_k.bytes() + im.ws.g_v.bytes();
  return b;
}

bool Transformer::Impl::Forward(int64_t batch, int64_t length,
                                const int32_t* tokens, bool training,
                                float* attention, int64_t pos0, bool use_cache,
                                bool last_row) {
  const TransformerConfig& c = config;
  const int64_t e = c.embed_dim, rows = batch * length;
  if (!Reserve(rows, training)) return false;
  const float* pos = c.positional == Positional::kLearned ? P(pos_off)
                     : c.positional == Positional::kSinusoidal ? sinusoid.data()
                                                               : nullptr;
  float* emb = c.embed_norm ? e0.data() : x[0].data();
  train::EmbeddingForward(rows, length, e, P(embed_off), pos ? pos + pos0 * e : nullptr, tokens, emb);
  if (type_off >= 0) {
    const float* t = P(type_off);  // token type 0 for every position
    for (int64_t r = 0; r < rows; ++r) {
      float* o = emb + r * e;
      for (int64_t j = 0; j < e; ++j) o[j] += t[j];
    }
  }
  if (c.embed_norm) {
    train::ResidualLayerNormForward(rows, e, emb, nullptr, P(embed_norm_w), P(embed_norm_b), c.eps, x[0].data());
  }
  const int64_t lk = pos0 + length;
  MaskSpec mask;
  mask.causal = c.causal;
  if (use_cache) mask.causal_align = Align::kBottomRight;
  kernels::AttentionView mask_view;
  internal::ResolveMask(mask, batch, c.num_heads, length, lk, &mask_view);
  train::MhaShape shape{batch, length, use_cache ? lk : length, e, c.num_heads, e, e,
                        c.positional == Positional::kRope ? &rope : nullptr, c.num_kv_heads};
  shape.pos0 = pos0;
  const bool drop = training && c.dropout > 0.0f;
  // The rows of x[N] written: from f0 = the last one with last_row (the
  // last block runs on rows r0 = f0.. after its attention's K and V).
  const bool tail = last_row && use_cache && batch == 1 && !training && attention == nullptr &&
                    !c.mlm_head && length > 1;
  const int64_t f0 = tail ? rows - 1 : 0;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    BlockParams& bp = blocks[static_cast<size_t>(l)];
    BlockActs& a = acts[l];
    const float* xin = x[l].data();
    if (use_cache) {
      shape.k_cache = cache[l].k.data();
      shape.v_cache = cache[l].v.data();
    }
    shape.packed = config.packed_weights ? bp.pk : nullptr;
    const int64_t r0 = l == c.num_layers - 1 ? f0 : 0, n = rows - r0, o = r0 * e;
    shape.q_last = r0 > 0 ? n : 0;
    float* weights = attention ? attention + l * batch * c.num_heads * length * lk : nullptr;
    const float* attn_in = xin;
    if (c.prenorm) {
      Norm(rows, xin, nullptr, bp.norm1_w, bp.norm1_b, a.n1.data());
      attn_in = a.n1.data();
    }
    // The attention's output rows r0.. (all of them but with last_row).
    if (!train::MhaForward(shape, bp.attn, attn_in, attn_in, attn_in, mask_view,
                           &head_enabled[static_cast<size_t>(l * c.num_heads)],
                           a.a.data() + o, weights, &a.mha, &ws)) {
      return false;
    }
    if (drop) train::DropoutForward(rows * e, c.dropout, DropoutSeed(2 * dropout_calls), a.a.data());
    if (c.prenorm) {
      float* h = a.h.data();
      const float* at = a.a.data();
      for (int64_t i = o; i < rows * e; ++i) h[i] = xin[i] + at[i];
      Norm(n, h + o, nullptr, bp.norm2_w, bp.norm2_b, a.n2.data() + o);
      if (!Mlp(n, bp, a, a.n2.data() + o)) return false;  // f2's rows 0..n−1
      if (drop) train::DropoutForward(rows * e, c.dropout, DropoutSeed(2 * dropout_calls + 1), a.f2.data());
      float* out = x[l + 1].data() + o;
      const float* f2 = a.f2.data();
      for (int64_t i = 0; i < n * e; ++i) out[i] = h[o + i] + f2[i];
    } else {
      Norm(n, xin + o, a.a.data() + o, bp.norm1_w, bp.norm1_b, a.h.data() + o);
      if (!Mlp(n, bp, a, a.h.data() + o)) return false;
      if (drop) train::DropoutForward(rows * e, c.dropout, DropoutSeed(2 * dropout_calls + 1), a.f2.data());
      Norm(n, a.h.data() + o, a.f2.data(), bp.norm2_w, bp.norm2_b, x[l + 1].data() + o);
    }
    if (drop) ++dropout_calls;
  }
  if (c.prenorm) {
    Norm(rows - f0, x[c.num_layers].data() + f0 * e, nullptr, final_norm_w, final_norm_b,
         xf.data() + f0 * e);
  }
  if (c.mlm_head) {
    if (!Lin(rows, e, e, Hidden(), mlm_w, mlm_b, t1.data())) return false;
    train::GeluForward(rows * e, t1.data(), t2.data());
    train::ResidualLayerNormForward(rows, e, t2.data(), nullptr, P(mlm_norm_w), P(mlm_norm_b), c.eps, t3.data());
  }
  return true;
}

bool Transformer::Impl::Backward(int64_t batch, int64_t length,
                                 const int32_t* tokens) {
  const TransformerConfig& c = config;
  const int64_t e = c.embed_dim, rows = batch * length;
  std::fill(grads.data(), grads.data() + count, 0.0f);
  // dx: gradient of the current block output.
  float* dhead_in = c.mlm_head ? dn.data() : (c.prenorm ? dh.data() : dx.data());
  if (!train::LinearBackward(rows, e, c.vocab_size, HeadInput(), HeadWeight(), dlogits.data(),
                             dhead_in, false, c.tie_embeddings ? G(embed_off) : G(head_w), G(head_b), &ws)) {
    return false;
  }
  if (c.mlm_head) {
    // t3 = LN(t2), t2 = GELU(t1), t1 = Wt·hidden + bt.
    train::ResidualLayerNormBackward(rows, e, t2.data(), nullptr, P(mlm_norm_w), c.eps, dn.data(), dtmp.data(),
                                     G(mlm_norm_w), G(mlm_norm_b));
    train::GeluBackward(rows * e, t1.data(), dtmp.data(), dtmp.data());
    if (!train::LinearBackward(rows, e, e, Hidden(), P(mlm_w), dtmp.data(), c.prenorm ? dh.data() : dx.data(),
                               false, G(mlm_w), G(mlm_b), &ws)) {
      return false;
    }
  }
  if (c.prenorm) NormBackward(rows, x[c.num_layers].data(), nullptr, final_norm_w, final_norm_b, dh.data(), dx.data());
  MaskSpec mask;
  mask.causal = c.causal;
  kernels::AttentionView mask_view;
  internal::ResolveMask(mask, batch, c.num_heads, length, length, &mask_view);
  const train::MhaShape shape{batch, length, length, e, c.num_heads, e, e,
                              c.positional == Positional::kRope ? &rope : nullptr, c.num_kv_heads};
  const bool drop = c.dropout > 0.0f;
  // Dropout seeds were drawn in forward order; walk them back.
  uint64_t call = dropout_calls;
  for (int64_t l = c.num_layers - 1; l >= 0; --l) {
    BlockParams& bp = blocks[static_cast<size_t>(l)];
    BlockActs& a = acts[l];
    const float* xin = x[l].data();
    if (drop) --call;
    if (c.prenorm) {
      // x' = h + f2, f2 = MLP(n2), n2 = Norm2(h): dh = dx + Norm2ᵀ(MLPᵀ(dx)).
      std::memcpy(dtmp.data(), dx.data(), static_cast<size_t>(rows * e) * sizeof(float));
      if (drop) train::DropoutBackward(rows * e, c.dropout, DropoutSeed(2 * call + 1), dtmp.data());
      if (!MlpBackward(rows, bp, a, a.n2.data(), dtmp.data(), dn.data())) return false;
      NormBackward(rows, a.h.data(), nullptr, bp.norm2_w, bp.norm2_b, dn.data(), dh.data());
      float* dhp = dh.data();
      const float* dxp = dx.data();
      for (int64_t i = 0; i < rows * e; ++i) dhp[i] += dxp[i];
      // h = x + a, a = MHA(n1), n1 = Norm1(x): dx = dh + Norm1ᵀ(MHAᵀ(dh)).
      std::memcpy(dtmp.data(), dhp, static_cast<size_t>(rows * e) * sizeof(float));
      if (drop) train::DropoutBackward(rows * e, c.dropout, DropoutSeed(2 * call), dtmp.data());
      float* dmha = dn.data();
      if (!train::MhaBackward(shape, bp.attn, a.n1.data(), a.n1.data(), a.n1.data(), mask_view,
                              &head_enabled[static_cast<size_t>(l * c.num_heads)], a.mha,
                              dtmp.data(), dmha, dmha, dmha, bp.dattn, &ws)) {
        return false;
      }
      NormBackward(rows, xin, nullptr, bp.norm1_w, bp.norm1_b, dmha, dx.data());
      float* g = dx.data();
      for (int64_t i = 0; i < rows * e; ++i) g[i] += dhp[i];
      continue;
    }
    // x_{l+1} = Norm2(h + f2): dz → dh and df2.
    NormBackward(rows, a.h.data(), a.f2.data(), bp.norm2_w, bp.norm2_b, dx.data(), dh.data());
    std::memcpy(dtmp.data(), dh.data(), static_cast<size_t>(rows * e) * sizeof(float));
    if (drop) train::DropoutBackward(rows * e, c.dropout, DropoutSeed(2 * call + 1), dtmp.data());
    if (!MlpBackward(rows, bp, a, a.h.data(), dtmp.data(), dn.data())) return false;
    float* dhp = dh.data();
    const float* dnp = dn.data();
    for (int64_t i = 0; i < rows * e; ++i) dhp[i] += dnp[i];
    // h = Norm1(x + a): dz → dx (residual) and da.
    NormBackward(rows, xin, a.a.data(), bp.norm1_w, bp.norm1_b, dh.data(), dx.data());
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
  float* demb = dx.data();
  if (c.embed_norm) {
    train::ResidualLayerNormBackward(rows, e, e0.data(), nullptr, P(embed_norm_w), c.eps, dx.data(), dtmp.data(),
                                     G(embed_norm_w), G(embed_norm_b));
    demb = dtmp.data();
  }
  if (type_off >= 0) {
    float* gt = G(type_off);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < e; ++j) gt[j] += demb[r * e + j];
    }
  }
  train::EmbeddingBackward(rows, length, e, tokens, demb, G(embed_off),
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
                            float* logits, float* attention, float* hidden) {
  Impl& im = *impl_;
  Status s = CheckBatch("forward", im.config, batch, length);
  if (!s.ok()) return s;
  if (!(s = CheckTokens("forward", "tokens", im.config, batch, length, tokens)).ok()) return s;
  if (im.config.has_head && !(s = internal::CheckPointer("logits", logits)).ok()) return s;
  if (!im.Forward(batch, length, tokens, false, attention, 0, false)) {
    return Status::OutOfMemory("forward: out of memory (wasm memory is limited to 2 GiB)");
  }
  const int64_t rows = batch * length, e = im.config.embed_dim;
  if (logits != nullptr && im.config.has_head && !im.Logits(0, rows, logits)) {
    return Status::OutOfMemory("forward: out of memory for the logits");
  }
  if (hidden != nullptr) std::memcpy(hidden, im.Hidden(), static_cast<size_t>(rows * e) * sizeof(float));
  im.last_rows = rows;
  return Status::Ok();
}

int64_t Transformer::Cached() const { return impl_->cached; }

void Transformer::LayerInputs(float* out) const {
  const Impl& im = *impl_;
  const int64_t n = im.last_rows * im.config.embed_dim;
  for (int64_t l = 0; l < im.config.num_layers; ++l) {
    std::memcpy(out + l * n, im.x[l].data(), static_cast<size_t>(n) * sizeof(float));
  }
}

Status Transformer::Extend(int64_t keep, int64_t length, const int32_t* tokens,
                           bool last_only, float* logits, float* attention,
                           float* hidden) {
  Impl& im = *impl_;
  const TransformerConfig& c = im.config;
  const char* where = "extend";
  Status s = CheckBatch(where, c, 1, length);
  if (!s.ok()) return s;
  if (keep < 0 || keep > im.cached) {
    std::ostringstream os;
    os << where << ": keep must be in [0, " << im.cached << "] (the cached positions), got " << keep;
    return Status::Invalid(os.str());
  }
  if (keep + length > c.max_length) {
    std::ostringstream os;
    os << where << ": " << keep << " cached + " << length << " new positions exceed maxLength ("
       << c.max_length << ")";
    return Status::Invalid(os.str());
  }
  if (!(s = CheckTokens(where, "tokens", c, 1, length, tokens)).ok()) return s;
  if (!im.cache) {
    const int64_t n = c.max_length * im.KvWidth();
    std::unique_ptr<LayerCache[]> cache(new LayerCache[static_cast<size_t>(c.num_layers)]);
    for (int64_t l = 0; l < c.num_layers; ++l) {
      if (!cache[l].k.Reserve(n) || !cache[l].v.Reserve(n)) {
        return Status::OutOfMemory("extend: out of memory for the key/value cache");
      }
    }
    im.cache = std::move(cache);
  }
  im.cached = keep;  // what is not kept is dropped, also on failure below
  // Only the last row's logits wanted (and no attention or hidden states):
  // the last block runs on that row alone.
  const bool last_row = last_only && attention == nullptr && hidden == nullptr;
  if (!im.Forward(1, length, tokens, false, attention, keep, true, last_row)) {
    return Status::OutOfMemory("extend: out of memory (wasm memory is limited to 2 GiB)");
  }
  im.cached = keep + length;
  const int64_t e = c.embed_dim;
  if (logits != nullptr && c.has_head) {
    const int64_t first = last_only ? length - 1 : 0;
    if (!im.Logits(first, length - first, logits)) {
      return Status::OutOfMemory("extend: out of memory for the logits");
    }
  }
  if (hidden != nullptr) std::memcpy(hidden, im.Hidden(), static_cast<size_t>(length * e) * sizeof(float));
  im.last_rows = length;
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
  if (!im.config.has_head) return Status::Invalid("evaluate: a model without a head has no loss");
  if (!im.logits.Reserve(batch * length * im.config.vocab_size) ||
      !im.Forward(batch, length, tokens, false, nullptr, 0, false) ||
      !im.Logits(0, batch * length, im.logits.data())) {
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
  if (!im.config.has_head) return Status::Invalid("step: a model without a head cannot be trained");
  if (im.config.packed_weights) return Status::Invalid("step: a loaded model runs only (its weights are packed for inference)");
  if (!im.EnsureTrainingBuffers()) {
    return Status::OutOfMemory("step: out of memory for the gradients and AdamW moments (3 × the weights)");
  }
  const uint64_t calls_before = im.dropout_calls;
  im.cached = 0;  // the weights change: cached keys and values go stale
  if (!im.Forward(batch, length, tokens, true, nullptr, 0, false) ||
      !im.Logits(0, batch * length, im.logits.data())) {
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

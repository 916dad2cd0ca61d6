// The block graph's forward and backward (transformer_graph.h has the
// picture): Build registers the tensors of a config, Forward runs the
// blocks (with or without the key/value cache), Backward walks the same
// buffers in reverse.
#include "train/transformer_graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace attnlab {

namespace train {
uint32_t Hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

int64_t RelativeBucket(int64_t rel, bool bidirectional, int64_t buckets, int64_t max_distance) {
  int64_t out = 0;
  if (bidirectional) {
    buckets /= 2;
    if (rel > 0) out += buckets;
    rel = rel < 0 ? -rel : rel;
  } else {
    rel = rel < 0 ? -rel : 0;  // -min(rel, 0)
  }
  const int64_t max_exact = buckets / 2;
  if (rel < max_exact) return out + rel;
  // As transformers computes it, in float32: max_exact + trunc(log(rel /
  // max_exact) / log(max_distance / max_exact) · (buckets − max_exact)).
  const float ratio = std::log(static_cast<float>(rel) / static_cast<float>(max_exact)) /
                      static_cast<float>(std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)));
  int64_t large = max_exact + static_cast<int64_t>(ratio * static_cast<float>(buckets - max_exact));
  if (large > buckets - 1) large = buckets - 1;
  return out + large;
}
}  // namespace train

using train::BlockActs;
using train::BlockParams;

namespace {
// The projections held packed for the GEMM in an inference model.
bool IsProjection(const std::string& name) {
  static const char* kSuffixes[] = {".attn.wq", ".attn.wk", ".attn.wv", ".attn.wo", ".xattn.wq", ".xattn.wk",
                                    ".xattn.wv", ".xattn.wo", ".ffn.w1", ".ffn.wg", ".ffn.w2", "mlm.dense.weight",
                                    "head.weight"};
  for (const char* suffix : kSuffixes) {
    const size_t n = std::strlen(suffix);
    if (name.size() >= n && name.compare(name.size() - n, std::string::npos, suffix) == 0) return true;
  }
  return false;
}
// The mask of a local layer: `causal` (its alignment too) and the window
// i − window < j <= i, or without causal |i − j| < window, query i at its
// absolute position (bottom-right with the cache, as the causal frontier).
void LocalMaskView(MaskSpec mask, int64_t batch, int64_t heads, int64_t lq, int64_t lk, int64_t window,
                   kernels::AttentionView* view) {
  mask.window = true;
  mask.window_left = window - 1;
  mask.window_right = mask.causal ? 0 : window - 1;
  mask.window_align = mask.causal_align;
  internal::ResolveMask(mask, batch, heads, lq, lk, view);
}
}  // namespace

void Transformer::Impl::Build() {
  const int64_t e = config.embed_dim, f = config.ffn_dim, vocab = config.vocab_size;
  const int64_t nl = config.num_layers, ekv = KvWidth(), d = HeadDim(), eq = config.num_heads * d;
  const bool layer_norm = config.norm == NormKind::kLayerNorm;
  const bool ln_bias = layer_norm && config.norm_bias;  // the LayerNorms' β
  auto Add = [&](const std::string& name, std::vector<int64_t> shape, bool dec) {
    return store.Add(name, std::move(shape), dec, config.packed_weights && IsProjection(name));
  };
  // An inference model's token embedding is a row table: float rows, or
  // the GGML blocks of a quantized file, dequantized a looked-up row at a
  // time (and read as blocks by a tied head).
  embed_id = store.Add("embed.weight", {vocab, e}, true, false, config.packed_weights);
  if (config.positional == Positional::kLearned) {
    pos_id = Add("pos.weight", {config.max_length, e}, true);
  }
  if (config.type_vocab > 0) type_id = Add("type.weight", {config.type_vocab, e}, true);
  if (config.embed_norm) {
    embed_norm_w = Add("embed_norm.weight", {e}, false);
    if (config.norm_bias) embed_norm_b = Add("embed_norm.bias", {e}, false);
  }
  static const char* kAttn[8] = {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"};
  blocks.resize(static_cast<size_t>(nl));
  for (int64_t l = 0; l < nl; ++l) {
    BlockParams& b = blocks[static_cast<size_t>(l)];
    const std::string p = "blocks." + std::to_string(l) + ".";
    for (int i = 0; i < 8; ++i) {
      const bool bias = i % 2 == 1;
      if (bias && !(i == 7 ? config.out_bias : config.qkv_bias)) continue;  // bo : bq, bk, bv
      const bool kv = i >= 2 && i < 6;  // wk, bk, wv, bv
      const int64_t rows = kv ? ekv : i < 2 ? eq : e;  // wo [E, H·D]
      const int64_t cols = i == 6 ? eq : e;
      b.attn_id[i] = Add(p + "attn." + kAttn[i], bias ? std::vector<int64_t>{rows} : std::vector<int64_t>{rows, cols}, !bias);
    }
    if (!IsIdentityNorm1(l)) {
      b.norm1_w = Add(p + "norm1.weight", {e}, false);
      if (ln_bias) b.norm1_b = Add(p + "norm1.bias", {e}, false);
    }
    b.w1 = Add(p + "ffn.w1", {f, e}, true);
    if (config.ffn_bias) b.b1 = Add(p + "ffn.b1", {f}, false);
    if (Gated()) b.wg = Add(p + "ffn.wg", {f, e}, true);
    if (Gated() && config.gate_bias) b.bg = Add(p + "ffn.bg", {f}, false);
    b.w2 = Add(p + "ffn.w2", {e, f}, true);
    if (config.ffn_bias) b.b2 = Add(p + "ffn.b2", {e}, false);
    b.norm2_w = Add(p + "norm2.weight", {e}, false);
    if (ln_bias) b.norm2_b = Add(p + "norm2.bias", {e}, false);
    // The options' tensors, after the default ones.
    if (config.qk_norm) {
      b.q_norm = Add(p + "attn.q_norm.weight", {d}, false);
      b.k_norm = Add(p + "attn.k_norm.weight", {d}, false);
    }
    if (config.sandwich_norm) {
      b.post_attn_w = Add(p + "post_attn_norm.weight", {e}, false);
      if (ln_bias) b.post_attn_b = Add(p + "post_attn_norm.bias", {e}, false);
      b.post_ffn_w = Add(p + "post_ffn_norm.weight", {e}, false);
      if (ln_bias) b.post_ffn_b = Add(p + "post_ffn_norm.bias", {e}, false);
    }
    if (config.cross_attention) {  // keys and values from the memory [Le, E]
      for (int i = 0; i < 8; ++i) {
        const bool bias = i % 2 == 1;
        if (bias && !(i == 7 ? config.out_bias : config.qkv_bias)) continue;
        const bool kv = i >= 2 && i < 6;
        const int64_t rows = kv ? ekv : i < 2 ? eq : e;
        const int64_t cols = i == 6 ? eq : e;
        b.xattn_id[i] = Add(p + "xattn." + kAttn[i], bias ? std::vector<int64_t>{rows} : std::vector<int64_t>{rows, cols}, !bias);
      }
      b.normx_w = Add(p + "norm_x.weight", {e}, false);
      if (ln_bias) b.normx_b = Add(p + "norm_x.bias", {e}, false);
    }
  }
  if (config.relative_buckets > 0) rel_bias_id = Add("rel_bias.weight", {config.relative_buckets, config.num_heads}, false);
  if (config.prenorm) {
    final_norm_w = Add("final_norm.weight", {e}, false);
    if (ln_bias) final_norm_b = Add("final_norm.bias", {e}, false);
  }
  if (config.mlm_head) {
    mlm_w = Add("mlm.dense.weight", {e, e}, true);
    if (config.mlm_bias) mlm_b = Add("mlm.dense.bias", {e}, false);
    mlm_norm_w = Add("mlm.norm.weight", {e}, false);
    if (config.norm_bias) mlm_norm_b = Add("mlm.norm.bias", {e}, false);
  }
  if (config.has_head && !config.tie_embeddings) head_w = Add("head.weight", {vocab, e}, true);
  if (config.has_head && config.head_bias) head_b = Add("head.bias", {vocab}, false);
}

void Transformer::Impl::Bind() {
  const int64_t e = config.embed_dim, nl = config.num_layers;
  for (auto& b : blocks) {
    for (int i = 0; i < 8; ++i) {
      b.attn.w[i] = P(b.attn_id[i]);
      b.pk[i] = store.Packed(b.attn_id[i]);
      b.xattn.w[i] = P(b.xattn_id[i]);
      b.xpk[i] = store.Packed(b.xattn_id[i]);
    }
  }
  if (config.positional == Positional::kSinusoidal) {
    sinusoid.resize(static_cast<size_t>(config.max_length * e));
    PositionalEncoding(config.max_length, e, 10000.0, sinusoid.data());
    if (config.sinusoid_halves) {
      // Marian's layout: the sines of the column pairs in the first
      // ceil(E/2) columns, their cosines after them (the table above holds
      // them interleaved: sin at 2i, cos at 2i + 1).
      std::vector<float> row(static_cast<size_t>(e));
      const int64_t first = (e + 1) / 2;
      for (int64_t p = 0; p < config.max_length; ++p) {
        float* r = sinusoid.data() + p * e;
        for (int64_t i = 0; i < first; ++i) row[static_cast<size_t>(i)] = r[2 * i];
        for (int64_t i = 0; first + i < e; ++i) row[static_cast<size_t>(first + i)] = r[2 * i + 1];
        std::copy(row.begin(), row.end(), r);
      }
    }
  }
  if (config.positional == Positional::kRope) {
    // R = rotary_dim (or D) dims rotated, frequencies over R.
    const int64_t rdim = config.rotary_dim > 0 ? config.rotary_dim : HeadDim();
    const int64_t half = rdim / 2;
    const size_t n = static_cast<size_t>(config.max_length * half);
    auto tables = [&](double theta, std::vector<float>* c, std::vector<float>* sn, std::vector<float>* ns,
                      train::RopeTables* t) {
      c->resize(n);
      sn->resize(n);
      ns->resize(n);
      RotaryCache(config.max_length, 2 * half, theta, c->data(), sn->data());
      for (size_t i = 0; i < n; ++i) (*ns)[i] = -(*sn)[i];
      *t = {c->data(), sn->data(), ns->data()};
      t->rotary_dim = config.rotary_dim;
    };
    tables(config.rope_theta, &rope_cos, &rope_sin, &rope_neg_sin, &rope);
    bool any_local = false;
    for (int64_t l = 0; l < nl; ++l) any_local = any_local || IsLocal(l);
    if (config.rope_local_theta > 0.0 && any_local) {
      tables(config.rope_local_theta, &rope_local_cos, &rope_local_sin, &rope_local_neg_sin, &rope_local);
    }
  }
  head_enabled.assign(static_cast<size_t>(nl * config.num_heads), 1);
  x.reset(new AlignedBuffer[static_cast<size_t>(nl + 1)]);
  acts.reset(new BlockActs[static_cast<size_t>(nl)]);
}

bool Transformer::Impl::Lin(int64_t rows, int64_t in, int64_t out, const float* x, int64_t w, int64_t b, float* y) {
  if (const kernels::PackedB* pk = store.Packed(w)) {
    train::LinearForwardPacked(rows, in, out, x, *pk, P(b), y);
    return true;
  }
  return train::LinearForward(rows, in, out, x, P(w), P(b), y, &ws);
}


bool Transformer::Impl::EnsureTrainingBuffers() {
  if (training_buffers) return true;
  if (!grads.Reserve(store.count()) || !m.Reserve(store.count()) || !v.Reserve(store.count())) return false;
  // One weight-decay flag a parameter (a byte each: made here, not at
  // Create, so that a model that only runs holds its weights alone).
  decay.assign(static_cast<size_t>(store.count()), 0);
  for (const ParamInfo& info : store.infos()) {
    int64_t n = 1;
    for (int64_t d : info.shape) n *= d;
    if (info.decay) std::fill(decay.begin() + info.offset, decay.begin() + info.offset + n, 1);
  }
  std::fill(grads.data(), grads.data() + store.count(), 0.0f);
  std::fill(m.data(), m.data() + store.count(), 0.0f);
  std::fill(v.data(), v.data() + store.count(), 0.0f);
  for (auto& b : blocks) {
    for (int i = 0; i < 8; ++i) b.dattn.w[i] = G(b.attn_id[i]);
  }
  training_buffers = true;
  return true;
}


bool Transformer::Impl::Reserve(int64_t rows, bool training) {
  if (rows <= rows_reserved && (!training || rows <= grad_rows_reserved)) return true;
  const TransformerConfig& c = config;
  const int64_t e = c.embed_dim, f = c.ffn_dim, vocab = c.vocab_size;
  const int64_t r = std::max(rows, rows_reserved);
  for (int64_t l = 0; l <= c.num_layers; ++l) {
    if (!x[l].Reserve(r * e)) return false;
  }
  const bool swiglu = Gated();
  for (int64_t l = 0; l < c.num_layers; ++l) {
    BlockActs& a = acts[l];
    if (!a.a.Reserve(r * e) || !a.h.Reserve(r * e) || !a.f1.Reserve(r * f) ||
        !a.g.Reserve(r * f) || !a.f2.Reserve(r * e)) {
      return false;
    }
    if (c.prenorm && (!a.n1.Reserve(r * e) || !a.n2.Reserve(r * e))) return false;
    if (swiglu && !a.fg.Reserve(r * f)) return false;
    if (c.sandwich_norm && !a.pn.Reserve(r * e)) return false;
    if (c.cross_attention && (!a.xa.Reserve(r * e) || !a.xc.Reserve(r * e) || !a.xn.Reserve(r * e))) return false;
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


void Transformer::Impl::Norm(int64_t rows, const float* in, const float* r, int64_t w, int64_t b, float* out) {
  if (config.norm == NormKind::kRmsNorm) {
    train::RmsNormForward(rows, config.embed_dim, in, P(w), config.eps, out);
  } else {
    train::ResidualLayerNormForward(rows, config.embed_dim, in, r, P(w), P(b), config.eps, out);
  }
}
// dz = ∂/∂(in + r) of Norm (written); the weight grads accumulate.
void Transformer::Impl::NormBackward(int64_t rows, const float* in, const float* r, int64_t w, int64_t b,
                  const float* dy, float* dz) {
  if (config.norm == NormKind::kRmsNorm) {
    train::RmsNormBackward(rows, config.embed_dim, in, P(w), config.eps, dy, dz, G(w));
  } else {
    train::ResidualLayerNormBackward(rows, config.embed_dim, in, r, P(w), config.eps, dy, dz,
                                     G(w), G(b));
  }
}


bool Transformer::Impl::Mlp(int64_t rows, const BlockParams& bp, BlockActs& a, const float* in) {
  const int64_t e = config.embed_dim, f = config.ffn_dim;
  if (!Lin(rows, e, f, in, bp.w1, bp.b1, a.f1.data())) return false;
  switch (config.activation) {
    case Activation::kGelu: train::GeluForward(rows * f, a.f1.data(), a.g.data()); break;
    case Activation::kGeluTanh: train::GeluTanhForward(rows * f, a.f1.data(), a.g.data()); break;
    case Activation::kRelu: train::ReluForward(rows * f, a.f1.data(), a.g.data()); break;
    case Activation::kSilu: train::SiluForward(rows * f, a.f1.data(), a.g.data()); break;
    case Activation::kSwiGlu:
      if (!Lin(rows, e, f, in, bp.wg, bp.bg, a.fg.data())) return false;
      train::SwiGluForward(rows * f, a.fg.data(), a.f1.data(), a.g.data());
      break;
    case Activation::kGeGlu:
    case Activation::kGeGluTanh:
      if (!Lin(rows, e, f, in, bp.wg, bp.bg, a.fg.data())) return false;
      train::GeGluForward(rows * f, a.fg.data(), a.f1.data(), config.activation == Activation::kGeGluTanh,
                          a.g.data());
      break;
  }
  return Lin(rows, f, e, a.g.data(), bp.w2, bp.b2, a.f2.data());
}
// dout: ∂/∂f2 (read); din: ∂/∂in (written).
bool Transformer::Impl::MlpBackward(int64_t rows, BlockParams& bp, BlockActs& a, const float* in,
                 const float* dout, float* din) {
  const int64_t e = config.embed_dim, f = config.ffn_dim;
  if (!train::LinearBackward(rows, f, e, a.g.data(), P(bp.w2), dout, dg.data(), false,
                             G(bp.w2), G(bp.b2), &ws)) {
    return false;
  }
  switch (config.activation) {
    case Activation::kGelu: train::GeluBackward(rows * f, a.f1.data(), dg.data(), dg.data()); break;
    case Activation::kGeluTanh: train::GeluTanhBackward(rows * f, a.f1.data(), dg.data(), dg.data()); break;
    case Activation::kRelu: train::ReluBackward(rows * f, a.f1.data(), dg.data(), dg.data()); break;
    case Activation::kSilu: train::SiluBackward(rows * f, a.f1.data(), dg.data(), dg.data()); break;
    case Activation::kSwiGlu:
    case Activation::kGeGlu:
    case Activation::kGeGluTanh:
      // dg2 ← ∂/∂gate, dg ← ∂/∂up.
      if (config.activation == Activation::kSwiGlu) {
        train::SwiGluBackward(rows * f, a.fg.data(), a.f1.data(), dg.data(), dg2.data(), dg.data());
      } else {
        train::GeGluBackward(rows * f, a.fg.data(), a.f1.data(), config.activation == Activation::kGeGluTanh,
                             dg.data(), dg2.data(), dg.data());
      }
      if (!train::LinearBackward(rows, e, f, in, P(bp.wg), dg2.data(), din, false, G(bp.wg),
                                 G(bp.bg), &ws)) {
        return false;
      }
      return train::LinearBackward(rows, e, f, in, P(bp.w1), dg.data(), din, true, G(bp.w1),
                                   G(bp.b1), &ws);
  }
  return train::LinearBackward(rows, e, f, in, P(bp.w1), dg.data(), din, false, G(bp.w1),
                               G(bp.b1), &ws);
}


bool Transformer::Impl::Logits(int64_t first, int64_t rows, float* out) {
  if (!RawLogits(first, rows, out)) return false;
  const float cap = config.final_softcap;
  if (cap > 0.0f) {
    for (int64_t i = 0; i < rows * config.vocab_size; ++i) out[i] = cap * std::tanh(out[i] / cap);
  }
  return true;
}

bool Transformer::Impl::RawLogits(int64_t first, int64_t rows, float* out) {
  const int64_t e = config.embed_dim;
  const float* in = HeadInput() + first * e;
  if (config.head_scale != 1.0f) {  // T5's tied head: (xf·headScale)·Whᵀ
    if (!head_in.Reserve(rows * e)) return false;
    for (int64_t i = 0; i < rows * e; ++i) head_in.data()[i] = in[i] * config.head_scale;
    in = head_in.data();
  }
  if (!config.tie_embeddings) return Lin(rows, e, config.vocab_size, in, head_w, head_b, out);
  if (const kernels::PackedB* blocks = store.TableBlocks(embed_id)) {  // the embedding's GGML blocks
    train::LinearForwardPacked(rows, e, config.vocab_size, in, *blocks, P(head_b), out);
    return true;
  }
  if (rows <= internal::kGemvRows && store.HeadCopyReady()) {  // what LinearForward's GEMV gives
    kernels::GemvTHalf(rows, config.vocab_size, e, in, e, store.head_copy(), P(head_b),
                       out, config.vocab_size);
    return true;
  }
  return train::LinearForward(rows, e, config.vocab_size, in, HeadWeight(),
                              P(head_b), out, &ws);
}

bool Transformer::Impl::RelativeBias(int64_t length, int64_t pos0) {
  const int64_t h = config.num_heads, lk = pos0 + length;
  if (!score_bias.Reserve(h * length * lk)) return false;
  const float* table = P(rel_bias_id);  // [buckets, H]
  float* out = score_bias.data();
  for (int64_t i = 0; i < length; ++i) {
    for (int64_t j = 0; j < lk; ++j) {
      const int64_t bucket = train::RelativeBucket(j - (pos0 + i), !config.causal, config.relative_buckets,
                                                   config.relative_max_distance);
      for (int64_t hh = 0; hh < h; ++hh) out[(hh * length + i) * lk + j] = table[bucket * h + hh];
    }
  }
  return true;
}

bool Transformer::Impl::CrossAttention(int64_t l, int64_t nb, int64_t nq, const float* in, float* out,
                                       float* weights) {
  const TransformerConfig& c = config;
  BlockParams& bp = blocks[static_cast<size_t>(l)];
  train::MhaShape shape{nb, nq, memory_length, c.embed_dim, c.num_heads, c.embed_dim, c.embed_dim,
                        nullptr, c.num_kv_heads};
  shape.head_dim = c.head_dim;
  shape.scale = c.attn_scale;
  shape.k_cache = xcache[l].k.data();
  shape.v_cache = xcache[l].v.data();
  shape.kv_ready = true;
  shape.packed = c.packed_weights ? bp.xpk : nullptr;
  MaskSpec none;
  kernels::AttentionView view;
  internal::ResolveMask(none, nb, c.num_heads, nq, memory_length, &view);
  return train::MhaForward(shape, bp.xattn, in, nullptr, nullptr, view, nullptr, out, weights,
                           &acts[l].xmha, &ws);
}

void Transformer::Impl::LayerAttention(int64_t l, bool grads, train::MhaShape* shape) {
  const TransformerConfig& c = config;
  const BlockParams& bp = blocks[static_cast<size_t>(l)];
  shape->head_dim = c.head_dim;
  shape->scale = c.attn_scale;
  shape->softcap = c.attn_softcap;
  if (c.positional == Positional::kRope) {
    shape->rope = IsLocal(l) && rope_local.cos != nullptr ? &rope_local : &rope;
  }
  if (c.qk_norm) {
    shape->q_norm = P(bp.q_norm);
    shape->k_norm = P(bp.k_norm);
    shape->norm_eps = c.eps;
    shape->dq_norm = grads ? G(bp.q_norm) : nullptr;
    shape->dk_norm = grads ? G(bp.k_norm) : nullptr;
  }
}

bool Transformer::Impl::Forward(int64_t batch, int64_t length,
                                const int32_t* tokens, bool training,
                                float* attention, int64_t pos0, bool use_cache,
                                bool last_row, float* cross) {
  const TransformerConfig& c = config;
  const int64_t e = c.embed_dim, rows = batch * length;
  if (!Reserve(rows, training)) return false;
  const float* pos = c.positional == Positional::kLearned ? P(pos_id)
                     : c.positional == Positional::kSinusoidal ? sinusoid.data()
                                                               : nullptr;
  float* emb = c.embed_norm ? e0.data() : x[0].data();
  if (P(embed_id) == nullptr) {
    // A row table held as blocks (or never written): row by row, then the
    // scale and the positions, as below (x + p is the same sum either way).
    for (int64_t r = 0; r < rows; ++r) store.Row(embed_id, tokens[r], emb + r * e);
    if (c.embed_scale != 1.0f) {
      for (int64_t i = 0; i < rows * e; ++i) emb[i] *= c.embed_scale;
    }
    if (pos) {
      for (int64_t r = 0; r < rows; ++r) {
        const float* pr = pos + (pos0 + r % length) * e;
        for (int64_t j = 0; j < e; ++j) emb[r * e + j] += pr[j];
      }
    }
  } else if (c.embed_scale != 1.0f) {
    // Emb[tokens]·embed_scale, then the positions.
    train::EmbeddingForward(rows, length, e, P(embed_id), nullptr, tokens, emb);
    for (int64_t i = 0; i < rows * e; ++i) emb[i] *= c.embed_scale;
    if (pos) {
      for (int64_t r = 0; r < rows; ++r) {
        const float* pr = pos + (pos0 + r % length) * e;
        for (int64_t j = 0; j < e; ++j) emb[r * e + j] += pr[j];
      }
    }
  } else {
    train::EmbeddingForward(rows, length, e, P(embed_id), pos ? pos + pos0 * e : nullptr, tokens, emb);
  }
  if (type_id >= 0) {
    const float* t = P(type_id);  // token type 0 for every position
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
  kernels::AttentionView mask_view, local_view;
  internal::ResolveMask(mask, batch, c.num_heads, length, lk, &mask_view);
  if (c.sliding_window > 0) LocalMaskView(mask, batch, c.num_heads, length, lk, c.sliding_window, &local_view);
  const bool drop = training && c.dropout > 0.0f;
  // The rows of x[N] written: from f0 = the last one with last_row (the
  // last block runs on rows r0 = f0.. after its attention's K and V).
  const bool tail = last_row && use_cache && batch == 1 && !training && attention == nullptr &&
                    cross == nullptr && !c.mlm_head && length > 1;
  const int64_t f0 = tail ? rows - 1 : 0;
  if (c.relative_buckets > 0 && !RelativeBias(length, pos0)) return false;
  for (int64_t l = start_layer; l < c.num_layers; ++l) {
    BlockParams& bp = blocks[static_cast<size_t>(l)];
    BlockActs& a = acts[l];
    if (l == start_layer) PatchResidual(l);
    const float* xin = x[l].data();
    train::MhaShape shape{batch, length, use_cache ? lk : length, e, c.num_heads, e, e,
                          c.positional == Positional::kRope ? &rope : nullptr, c.num_kv_heads};
    shape.pos0 = pos0;
    LayerAttention(l, false, &shape);
    if (use_cache) {
      shape.k_cache = cache[l].k.data();
      shape.v_cache = cache[l].v.data();
    }
    shape.packed = config.packed_weights ? bp.pk : nullptr;
    shape.z_edit = training || z_edits.empty() ? nullptr : &z_edits[static_cast<size_t>(l)];
    const int64_t r0 = l == c.num_layers - 1 ? f0 : 0, n = rows - r0, o = r0 * e;
    shape.q_last = r0 > 0 ? n : 0;
    shape.score_bias = c.relative_buckets > 0 ? score_bias.data() : nullptr;
    // The cross-attention's queries: the rows r0.. (one sequence then).
    const int64_t xb = r0 > 0 ? 1 : batch, xq = r0 > 0 ? n : length;
    float* xweights = cross ? cross + l * batch * c.num_heads * length * memory_length : nullptr;
    float* weights = attention ? attention + l * batch * c.num_heads * length * lk : nullptr;
    const float* attn_in = xin;
    if (c.prenorm && !IsIdentityNorm1(l)) {
      Norm(rows, xin, nullptr, bp.norm1_w, bp.norm1_b, a.n1.data());
      attn_in = a.n1.data();
    }
    // The attention's output rows r0.. (all of them but with last_row).
    if (!train::MhaForward(shape, bp.attn, attn_in, attn_in, attn_in, IsLocal(l) ? local_view : mask_view,
                           &head_enabled[static_cast<size_t>(l * c.num_heads)],
                           a.a.data() + o, weights, &a.mha, &ws)) {
      return false;
    }
    if (drop) train::DropoutForward(rows * e, c.dropout, DropoutSeed(2 * dropout_calls), a.a.data());
    if (c.prenorm) {
      float* h = a.h.data();
      const float* at = a.a.data();
      if (c.sandwich_norm) {  // h = x + PostAttnNorm(a)
        Norm(n, at + o, nullptr, bp.post_attn_w, bp.post_attn_b, a.pn.data() + o);
        at = a.pn.data();
      }
      for (int64_t i = o; i < rows * e; ++i) h[i] = xin[i] + at[i];
      if (c.cross_attention) {  // h += XMHA(NormX(h), memory)
        Norm(n, h + o, nullptr, bp.normx_w, bp.normx_b, a.xn.data() + o);
        if (!CrossAttention(l, xb, xq, a.xn.data() + o, a.xa.data() + o, xweights)) return false;
        const float* xa = a.xa.data();
        for (int64_t i = o; i < rows * e; ++i) h[i] += xa[i];
      }
      // parallel_residual: the MLP reads Norm2(x), not Norm2(h).
      Norm(n, (c.parallel_residual ? xin : h) + o, nullptr, bp.norm2_w, bp.norm2_b, a.n2.data() + o);
      if (!Mlp(n, bp, a, a.n2.data() + o)) return false;  // f2's rows 0..n−1
      if (drop) train::DropoutForward(rows * e, c.dropout, DropoutSeed(2 * dropout_calls + 1), a.f2.data());
      float* out = x[l + 1].data() + o;
      const float* f2 = a.f2.data();
      if (c.sandwich_norm) {  // x' = h + PostFfnNorm(f2)
        Norm(n, f2, nullptr, bp.post_ffn_w, bp.post_ffn_b, a.pn.data());
        f2 = a.pn.data();
      }
      for (int64_t i = 0; i < n * e; ++i) out[i] = h[o + i] + f2[i];
    } else {
      Norm(n, xin + o, a.a.data() + o, bp.norm1_w, bp.norm1_b, a.h.data() + o);
      const float* hm = a.h.data() + o;  // the MLP's input and residual
      if (c.cross_attention) {  // c = NormX(h + XMHA(h, memory))
        if (!CrossAttention(l, xb, xq, hm, a.xa.data() + o, xweights)) return false;
        Norm(n, hm, a.xa.data() + o, bp.normx_w, bp.normx_b, a.xc.data() + o);
        hm = a.xc.data() + o;
      }
      if (!Mlp(n, bp, a, hm)) return false;
      if (drop) train::DropoutForward(rows * e, c.dropout, DropoutSeed(2 * dropout_calls + 1), a.f2.data());
      Norm(n, hm, a.f2.data(), bp.norm2_w, bp.norm2_b, x[l + 1].data() + o);
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
  std::fill(grads.data(), grads.data() + store.count(), 0.0f);
  if (c.final_softcap > 0.0f) {
    // logits (capped) = c·tanh(z/c): ∂/∂z = 1 − (logits/c)².
    float* dl = dlogits.data();
    const float* lg = logits.data();
    for (int64_t i = 0; i < rows * c.vocab_size; ++i) {
      const float t = lg[i] / c.final_softcap;
      dl[i] *= 1.0f - t * t;
    }
  }
  // dx: gradient of the current block output.
  float* dhead_in = c.mlm_head ? dn.data() : (c.prenorm ? dh.data() : dx.data());
  if (!train::LinearBackward(rows, e, c.vocab_size, HeadInput(), HeadWeight(), dlogits.data(),
                             dhead_in, false, c.tie_embeddings ? G(embed_id) : G(head_w), G(head_b), &ws)) {
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
  kernels::AttentionView global_view, local_view;
  internal::ResolveMask(mask, batch, c.num_heads, length, length, &global_view);
  if (c.sliding_window > 0) LocalMaskView(mask, batch, c.num_heads, length, length, c.sliding_window, &local_view);
  const bool drop = c.dropout > 0.0f;
  // Dropout seeds were drawn in forward order; walk them back.
  uint64_t call = dropout_calls;
  for (int64_t l = c.num_layers - 1; l >= 0; --l) {
    BlockParams& bp = blocks[static_cast<size_t>(l)];
    BlockActs& a = acts[l];
    const float* xin = x[l].data();
    if (drop) --call;
    train::MhaShape shape{batch, length, length, e, c.num_heads, e, e,
                          c.positional == Positional::kRope ? &rope : nullptr, c.num_kv_heads};
    LayerAttention(l, true, &shape);
    const kernels::AttentionView& mask_view = IsLocal(l) ? local_view : global_view;
    if (c.prenorm) {
      // x' = h + f2, f2 = MLP(n2), n2 = Norm2(h): dh = dx + Norm2ᵀ(MLPᵀ(dx)).
      // (sandwich_norm: f2 → PostFfnNorm(f2); parallel_residual: n2 =
      // Norm2(x), so dh = dx and Norm2ᵀ(MLPᵀ(dx)) goes to x.)
      if (c.sandwich_norm) {
        NormBackward(rows, a.f2.data(), nullptr, bp.post_ffn_w, bp.post_ffn_b, dx.data(), dtmp.data());
      } else {
        std::memcpy(dtmp.data(), dx.data(), static_cast<size_t>(rows * e) * sizeof(float));
      }
      if (drop) train::DropoutBackward(rows * e, c.dropout, DropoutSeed(2 * call + 1), dtmp.data());
      if (!MlpBackward(rows, bp, a, a.n2.data(), dtmp.data(), dn.data())) return false;
      NormBackward(rows, c.parallel_residual ? xin : a.h.data(), nullptr, bp.norm2_w, bp.norm2_b, dn.data(),
                   dh.data());
      float* dhp = dh.data();
      const float* dxp = dx.data();
      for (int64_t i = 0; i < rows * e; ++i) dhp[i] += dxp[i];
      // ∂h: dh, or (parallel) dx while dh holds dx + Norm2ᵀ(..) for x.
      const float* dhh = c.parallel_residual ? dxp : dhp;
      // h = x + a, a = MHA(n1), n1 = Norm1(x): dx = dh + Norm1ᵀ(MHAᵀ(dh)).
      if (c.sandwich_norm) {
        NormBackward(rows, a.a.data(), nullptr, bp.post_attn_w, bp.post_attn_b, dhh, dtmp.data());
      } else {
        std::memcpy(dtmp.data(), dhh, static_cast<size_t>(rows * e) * sizeof(float));
      }
      if (drop) train::DropoutBackward(rows * e, c.dropout, DropoutSeed(2 * call), dtmp.data());
      // first_norm1 false, block 0: n1 = x, so dx = dh + MHAᵀ(dh).
      const bool identity = IsIdentityNorm1(l);
      const float* n1 = identity ? xin : a.n1.data();
      float* dmha = identity ? dx.data() : dn.data();
      if (!train::MhaBackward(shape, bp.attn, n1, n1, n1, mask_view,
                              &head_enabled[static_cast<size_t>(l * c.num_heads)], a.mha,
                              dtmp.data(), dmha, dmha, dmha, bp.dattn, &ws)) {
        return false;
      }
      if (!identity) NormBackward(rows, xin, nullptr, bp.norm1_w, bp.norm1_b, dmha, dx.data());
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
  if (type_id >= 0) {
    float* gt = G(type_id);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < e; ++j) gt[j] += demb[r * e + j];
    }
  }
  if (c.embed_scale != 1.0f) {
    // x0 = Emb[t]·s + Pos: dPos = demb, dEmb = s·demb.
    if (c.positional == Positional::kLearned) {
      float* gp = G(pos_id);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < e; ++j) gp[(r % length) * e + j] += demb[r * e + j];
      }
    }
    for (int64_t i = 0; i < rows * e; ++i) demb[i] *= c.embed_scale;
    train::EmbeddingBackward(rows, length, e, tokens, demb, G(embed_id), nullptr);
  } else {
    train::EmbeddingBackward(rows, length, e, tokens, demb, G(embed_id),
                             c.positional == Positional::kLearned ? G(pos_id) : nullptr);
  }
  return true;
}


int64_t Transformer::Impl::ScratchBytes() const {
  int64_t b = 0;
  for (int64_t l = 0; l <= config.num_layers; ++l) b += x[l].bytes();
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const BlockActs& a = acts[l];
    b += a.a.bytes() + a.h.bytes() + a.f1.bytes() + a.g.bytes() + a.f2.bytes() +
         a.n1.bytes() + a.n2.bytes() + a.fg.bytes() + a.pn.bytes() +
         a.mha.q.bytes() + a.mha.k.bytes() + a.mha.v.bytes() + a.mha.ctx.bytes() +
         a.mha.q_pre.bytes() + a.mha.k_pre.bytes() + a.xa.bytes() + a.xc.bytes() + a.xn.bytes() +
         a.xmha.q.bytes() + a.xmha.ctx.bytes();
    if (cache) b += cache[l].k.bytes() + cache[l].v.bytes();
    if (xcache) b += xcache[l].k.bytes() + xcache[l].v.bytes();
  }
  b += score_bias.bytes() + head_in.bytes();
  b += e0.bytes() + xf.bytes() + t1.bytes() + t2.bytes() + t3.bytes();
  b += logits.bytes() + dlogits.bytes() + dx.bytes() + dh.bytes() +
       dtmp.bytes() + dn.bytes() + dg.bytes() + dg2.bytes();
  b += ws.pack.bytes() + ws.pack2.bytes() + ws.trans.bytes() + ws.tile.bytes() +
       ws.g_ctx.bytes() + ws.g_q.bytes() + ws.g_k.bytes() + ws.g_v.bytes() + ws.g_qn.bytes() +
       ws.g_kn.bytes();
  return b;
}

}  // namespace attnlab

// The public API of the block graph (train.h Transformer): Create with the
// config's checks and the seeded init, the weight writes, and the calls
// (Forward, Extend, Evaluate, Step) with their argument checks. The graph
// itself is transformer_graph.{h,cpp}; the weights are train::WeightStore.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "train/transformer_graph.h"

namespace attnlab {

namespace {
using train::Hash32;

Status Invalid(const std::string& where, const std::string& msg) {
  return Status::Invalid(where + ": " + msg);
}

Status CheckConfig(const TransformerConfig& c) {
  const std::string w = "transformer";
  Status s;
  if (!(s = internal::CheckDim("vocabSize", c.vocab_size, 2)).ok()) return s;
  if (!(s = internal::CheckDim("maxLength", c.max_length, 1)).ok()) return s;
  if (!(s = internal::CheckDim("embedDim", c.embed_dim, 1)).ok()) return s;
  if (!(s = internal::CheckDim("numHeads", c.num_heads, 1)).ok()) return s;
  if (!(s = internal::CheckDim("numLayers", c.num_layers, 1)).ok()) return s;
  if (!(s = internal::CheckDim("ffnDim", c.ffn_dim, 1)).ok()) return s;
  if (c.head_dim < 0 || c.head_dim > 65536) {
    std::ostringstream os;
    os << "headDim must be an integer in [1, 65536], or 0 for embedDim / numHeads (got " << c.head_dim << ")";
    return Invalid(w, os.str());
  }
  if (c.head_dim == 0 && c.embed_dim % c.num_heads != 0) {
    std::ostringstream os;
    os << "embedDim (" << c.embed_dim << ") must be divisible by numHeads (" << c.num_heads
       << "), or headDim must be given";
    return Invalid(w, os.str());
  }
  const int64_t d = c.head_dim > 0 ? c.head_dim : c.embed_dim / c.num_heads;
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
  if (c.rotary_dim != 0) {
    if (c.positional != Positional::kRope) return Invalid(w, "rotaryDim needs positional 'rope'");
    if (c.rotary_dim < 0 || c.rotary_dim % 2 != 0 || c.rotary_dim > d) {
      std::ostringstream os;
      os << "rotaryDim must be an even integer in [2, " << d << "] (the head dim), or 0 for all of it (got "
         << c.rotary_dim << ")";
      return Invalid(w, os.str());
    }
  }
  if (c.positional == Positional::kRope && c.rotary_dim == 0 && d % 2 != 0) {
    std::ostringstream os;
    if (c.head_dim > 0) {
      os << "positional 'rope' needs an even headDim (got " << d << ")";
    } else {
      os << "positional 'rope' needs an even head dim embedDim / numHeads (got " << c.embed_dim
         << " / " << c.num_heads << " = " << d << ")";
    }
    return Invalid(w, os.str());
  }
  if (c.positional == Positional::kRope && !(s = internal::CheckRopeBase(c.rope_theta)).ok()) {
    return Invalid(w, "ropeTheta: " + s.message);
  }
  if (c.rope_local_theta != 0.0) {
    if (c.positional != Positional::kRope) return Invalid(w, "ropeLocalTheta needs positional 'rope'");
    if (!(s = internal::CheckRopeBase(c.rope_local_theta)).ok()) {
      return Invalid(w, "ropeLocalTheta (0: ropeTheta): " + s.message);
    }
  }
  auto finite_min = [&](const char* name, double v, const char* allowed) {
    if (std::isfinite(v) && v >= 0.0) return Status::Ok();
    std::ostringstream os;
    os << name << " must be " << allowed << " (got " << v << ")";
    return Invalid(w, os.str());
  };
  if (!(s = finite_min("attnScale", c.attn_scale, "a finite number >= 0 (0: 1/sqrt(headDim))")).ok()) return s;
  if (!(s = finite_min("attnSoftcap", c.attn_softcap, "a finite number >= 0 (0: no cap)")).ok()) return s;
  if (!(s = finite_min("finalSoftcap", c.final_softcap, "a finite number >= 0 (0: no cap)")).ok()) return s;
  if (!(std::isfinite(c.embed_scale) && c.embed_scale > 0.0f)) {
    std::ostringstream os;
    os << "embedScale must be a finite number > 0 (got " << c.embed_scale << ")";
    return Invalid(w, os.str());
  }
  if (c.sliding_window < 0 || c.sliding_window > 1 << 30) {
    std::ostringstream os;
    os << "slidingWindow must be an integer >= 0 (0: no window; got " << c.sliding_window << ")";
    return Invalid(w, os.str());
  }
  if (!c.layer_kinds.empty()) {
    bool local = false;
    for (char k : c.layer_kinds) {
      if (k != 'g' && k != 'l') {
        return Invalid(w, "layerKinds must hold only 'g' (global) and 'l' (local) per layer, got '" + c.layer_kinds + "'");
      }
      local = local || k == 'l';
    }
    if (static_cast<int64_t>(c.layer_kinds.size()) != c.num_layers) {
      std::ostringstream os;
      os << "layerKinds must have numLayers (" << c.num_layers << ") chars, or be empty; got "
         << c.layer_kinds.size() << " ('" << c.layer_kinds << "')";
      return Invalid(w, os.str());
    }
    if (local && c.sliding_window <= 0) return Invalid(w, "layerKinds with local ('l') layers needs slidingWindow > 0");
  }
  if (!c.first_norm1 && !c.prenorm) return Invalid(w, "firstNorm1 false (block 0 without norm1) needs prenorm blocks");
  if (c.parallel_residual && !c.prenorm) return Invalid(w, "parallelResidual needs prenorm blocks");
  if (c.sandwich_norm && !c.prenorm) return Invalid(w, "sandwichNorm needs prenorm blocks");
  if (c.parallel_residual && c.sandwich_norm) return Invalid(w, "parallelResidual and sandwichNorm cannot both be set");
  const int norm = static_cast<int>(c.norm), act = static_cast<int>(c.activation);
  if (norm < 0 || norm > 1) return Invalid(w, "norm must be 'layernorm' or 'rmsnorm'");
  if (act < 0 || act > 6) {
    return Invalid(w, "activation must be 'gelu', 'gelu_new', 'swiglu', 'geglu', 'geglu_tanh', 'relu' or 'silu'");
  }
  if (c.cross_attention && c.parallel_residual) return Invalid(w, "crossAttention and parallelResidual cannot both be set");
  if (c.cross_attention && c.sandwich_norm) return Invalid(w, "crossAttention and sandwichNorm cannot both be set");
  if (c.cross_attention && !c.causal) return Invalid(w, "crossAttention needs causal self-attention (a decoder)");
  if (c.sinusoid_halves && c.positional != Positional::kSinusoidal) {
    return Invalid(w, "sinusoidHalves needs positional 'sinusoidal'");
  }
  if (c.relative_buckets < 0 || c.relative_buckets == 1 || c.relative_buckets > 4096 ||
      (!c.causal && c.relative_buckets > 0 && c.relative_buckets < 4)) {
    std::ostringstream os;
    os << "relativeBuckets must be 0 (none) or an integer in [2, 4096] ([4, 4096] without causal: half a "
          "direction), got " << c.relative_buckets;
    return Invalid(w, os.str());
  }
  if (c.relative_buckets > 0) {
    const int64_t exact = (c.causal ? c.relative_buckets : c.relative_buckets / 2) / 2;
    if (c.relative_max_distance <= exact || c.relative_max_distance > 1 << 24) {
      std::ostringstream os;
      os << "relativeMaxDistance must be an integer in [" << exact + 1 << ", 16777216] (more than the "
         << exact << " exact buckets), got " << c.relative_max_distance;
      return Invalid(w, os.str());
    }
  }
  if (!(std::isfinite(c.head_scale) && c.head_scale > 0.0f)) {
    std::ostringstream os;
    os << "headScale must be a finite number > 0 (got " << c.head_scale << ")";
    return Invalid(w, os.str());
  }
  if (c.gate_bias && c.activation != Activation::kSwiGlu && c.activation != Activation::kGeGlu &&
      c.activation != Activation::kGeGluTanh) {
    return Invalid(w, "gateBias needs a gated activation ('swiglu', 'geglu' or 'geglu_tanh')");
  }
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
  if (!(s = internal::TensorElements("the query projection [numHeads·headDim, embedDim]", {c.num_heads, d, c.embed_dim}, &n)).ok()) return s;
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
  const int64_t e = config.embed_dim, vocab = config.vocab_size, nl = config.num_layers;
  im.Build();
  train::WeightStore& store = im.store;
  // The floats held as floats are one block (at most kMaxCallBytes); a packed
  // projection (a loaded model's) takes its own block at its first write, so a
  // 16-bit model of more than kMaxCallBytes / 4 parameters fits.
  int64_t bytes = 0;
  if (!internal::CheckedMul(store.stored(), 4, &bytes) || bytes > kMaxCallBytes ||
      !store.Allocate(config.packed_half) ||
      !internal::CanAllocate(store.stored() + nl * config.num_heads + config.max_length * e * 4)) {
    std::ostringstream os;
    os << "transformer: out of memory for the parameters (" << store.stored() << " floats held as float32, "
       << (store.stored() * 4.0) / (1 << 20) << " MiB, of " << store.count() << " parameters)";
    *status = Status::OutOfMemory(os.str());
    return nullptr;
  }
  if (config.packed_half != 0 && config.tie_embeddings && config.has_head && e % kernels::HalfRowGroup() == 0 &&
      internal::CanAllocate((vocab * e + 1) / 2 + config.max_length * e * 4)) {
    (void)store.EnableHeadCopy(im.embed_id, config.packed_half);  // (optional: without room for it the float head runs)
  }
  const float gpt2_std = config.init_std;
  const float residual_std = gpt2_std / std::sqrt(2.0f * static_cast<float>(nl));
  for (size_t i = 0; i < store.infos().size(); ++i) {
    const ParamInfo& info = store.infos()[i];
    int64_t n = 1;
    for (int64_t d : info.shape) n *= d;
    if (!config.init_weights) continue;
    const uint32_t seed = Hash32(config.seed * 0x9E3779B9u + static_cast<uint32_t>(i) + 1u);
    float* p = store.Data(static_cast<int64_t>(i));
    if (p == nullptr) continue;  // packed (a loaded model: written by WriteParam)
    const std::string& name = info.name;
    const bool embedding = name == "embed.weight" || name == "pos.weight" || name == "type.weight";
    if (EndsWith(name, "norm1.weight") || EndsWith(name, "norm2.weight") || EndsWith(name, "norm.weight") ||
        EndsWith(name, "norm_x.weight")) {
      std::fill(p, p + n, 1.0f);
    } else if (gpt2_std > 0.0f && (embedding || info.shape.size() == 2)) {
      // GPT-2's init: normal(0, std), the residual projections std/√(2N).
      const bool residual = EndsWith(name, ".attn.wo") || EndsWith(name, ".ffn.w2");
      FillNormal(p, n, residual ? residual_std : gpt2_std, seed);
    } else if (embedding) {
      FillNormal(p, n, 1.0f, seed);
    } else if (info.shape.size() == 2 && (name.find(".attn.") != std::string::npos ||
                                          name.find(".xattn.") != std::string::npos)) {
      // Xavier-uniform, as MultiHeadAttention.
      const float bound = std::sqrt(6.0f / static_cast<float>(info.shape[0] + info.shape[1]));
      FillUniform(p, n, bound, seed);
    } else if (info.shape.size() == 2) {
      // torch.nn.Linear's default bound 1/sqrt(in).
      FillUniform(p, n, 1.0f / std::sqrt(static_cast<float>(info.shape[1])), seed);
    }  // biases and LayerNorm beta start at zero
  }
  im.Bind();
  *status = Status::Ok();
  return t;
}

const TransformerConfig& Transformer::config() const { return impl_->config; }
const std::vector<ParamInfo>& Transformer::params() const { return impl_->store.infos(); }
int64_t Transformer::ParamCount() const { return impl_->store.count(); }
const float* Transformer::Params() const { return impl_->store.floats(); }
const float* Transformer::Gradients() const {
  return impl_->training_buffers ? impl_->grads.data() : nullptr;
}

void Transformer::CopyParams(float* out) const { impl_->store.CopyAll(out); }

Status Transformer::WriteParamHalf(int64_t index, int64_t first, int64_t rows, const uint16_t* src,
                                   int64_t ld, bool transposed, int32_t kind) {
  Status s = impl_->store.WriteHalf(index, first, rows, src, ld, transposed, kind);
  if (s.ok()) impl_->cached = impl_->memory_length = 0;
  return s;
}

Status Transformer::WriteParamQuant(int64_t index, int64_t first, int64_t rows, int32_t kind,
                                    const uint8_t* src, int64_t bytes) {
  Status s = impl_->store.WriteQuant(index, first, rows, kind, src, bytes);
  if (s.ok()) impl_->cached = impl_->memory_length = 0;
  return s;
}

Status Transformer::WriteParam(int64_t index, int64_t first, int64_t rows, const float* src,
                               int64_t ld, bool transposed) {
  Status s = impl_->store.Write(index, first, rows, src, ld, transposed);
  if (s.ok()) impl_->cached = impl_->memory_length = 0;
  return s;
}

Status Transformer::CheckParams() const { return impl_->store.CheckFinite(); }

Status Transformer::SetParams(const float* data) {
  Status s = internal::CheckPointer("weights", data);
  if (!s.ok()) return s;
  for (int64_t i = 0; i < impl_->store.count(); ++i) {
    if (!std::isfinite(data[i])) {
      std::ostringstream os;
      os << "setWeights: weights must be finite (element " << i << " is " << data[i] << ")";
      return Status::Invalid(os.str());
    }
  }
  if (impl_->store.HasQuant()) {
    return Status::Invalid("setWeights: this model keeps projections as GGML blocks (Q8_0/Q4_0), as its file holds them; load it again to change them");
  }
  if (impl_->config.packed_half != 0) {
    return Status::Invalid("setWeights: this model keeps its projections in 16 bits, as its file holds them; load it again to change them");
  }
  impl_->store.WriteAll(data);
  impl_->cached = impl_->memory_length = 0;
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
    std::fill(impl_->m.data(), impl_->m.data() + impl_->store.count(), 0.0f);
    std::fill(impl_->v.data(), impl_->v.data() + impl_->store.count(), 0.0f);
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
  if (Status t = impl_->CheckTrainable("trainer"); !t.ok()) return t;
  if (impl_->config.packed_weights) {
    return Status::Invalid("trainer: a loaded model runs only (its weights are packed for inference); train a lab.transformer, or load its weights into one with setWeights");
  }
  if (!impl_->EnsureTrainingBuffers()) {
    return Status::OutOfMemory("trainer: out of memory for the gradients and AdamW moments (3 × the weights)");
  }
  impl_->opt = c;
  return Status::Ok();
}

int64_t Transformer::HeadCopyBytes() const { return impl_->store.HeadCopyBytes(); }

int64_t Transformer::CopyParamBlocks(int64_t index, uint8_t* out, int64_t capacity) const {
  if (index < 0 || index >= static_cast<int64_t>(impl_->store.infos().size()) || out == nullptr) return 0;
  int64_t bytes = 0;
  const uint8_t* src = impl_->store.QuantBlocks(index, &bytes);
  if (src == nullptr || bytes > capacity) return 0;
  std::memcpy(out, src, static_cast<size_t>(bytes));
  return bytes;
}

int32_t Transformer::ParamQuantKind(int64_t index) const {
  if (index < 0 || index >= static_cast<int64_t>(impl_->store.infos().size())) return 0;
  return impl_->store.QuantKindOf(index);
}

int64_t Transformer::HeldBytes() const {
  const Impl& im = *impl_;
  return im.store.Bytes() + im.grads.bytes() + im.m.bytes() + im.v.bytes() + im.ScratchBytes();
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
                            float* logits, float* attention, float* hidden, float* cross) {
  Impl& im = *impl_;
  Status s = CheckBatch("forward", im.config, batch, length);
  if (!s.ok()) return s;
  if (!(s = CheckTokens("forward", "tokens", im.config, batch, length, tokens)).ok()) return s;
  if (im.config.has_head && !(s = internal::CheckPointer("logits", logits)).ok()) return s;
  if (!(s = im.CheckMemory("forward", batch, cross)).ok()) return s;
  if (!im.Forward(batch, length, tokens, false, attention, 0, false, false, cross)) {
    return Status::OutOfMemory("forward: out of memory (wasm memory is limited to 4 GiB)");
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

Status Transformer::Impl::CheckMemory(const char* where, int64_t batch, const float* cross) const {
  if (!config.cross_attention) {
    if (cross != nullptr) {
      return Status::Invalid(std::string(where) + ": cross-attention weights asked of a model without cross-attention");
    }
    return Status::Ok();
  }
  if (memory_length == 0) {
    return Status::Invalid(std::string(where) +
                           ": this decoder reads a memory (crossAttention): call setMemory with the encoder's output first");
  }
  if (memory_batch != batch) {
    std::ostringstream os;
    os << where << ": the memory holds " << memory_batch << " sequence(s), this call runs " << batch;
    return Status::Invalid(os.str());
  }
  return Status::Ok();
}

Status Transformer::Impl::CheckTrainable(const char* where) const {
  const char* what = config.cross_attention      ? "crossAttention"
                     : config.relative_buckets > 0 ? "relativeBuckets"
                     : config.head_scale != 1.0f   ? "headScale"
                                                   : nullptr;
  if (what == nullptr) return Status::Ok();
  return Status::Invalid(std::string(where) + ": a model with " + what +
                         " runs only: the block graph's backward has no path for it (forward, extend and setMemory work)");
}

int64_t Transformer::MemoryLength() const { return impl_->memory_length; }

Status Transformer::SetMemory(int64_t batch, int64_t length, const float* memory) {
  Impl& im = *impl_;
  const TransformerConfig& c = im.config;
  if (!c.cross_attention) {
    return Status::Invalid("setMemory: this model has no cross-attention (crossAttention is false), so it reads no memory");
  }
  Status s = internal::CheckDim("batch", batch, 1);
  if (!s.ok()) return s;
  if (!(s = internal::CheckDim("Le (memory length)", length, 1)).ok()) return s;
  if (!(s = internal::CheckPointer("memory", memory)).ok()) return s;
  const int64_t ekv = im.KvWidth(), e = c.embed_dim;
  int64_t n = 0;
  if (!(s = internal::TensorElements("the memory's keys [B, Le, Hkv·D]", {batch, length, ekv}, &n)).ok()) return s;
  if (!(s = internal::TensorElements("the memory [B, Le, E]", {batch, length, e}, &n)).ok()) return s;
  for (int64_t i = 0; i < batch * length * e; ++i) {
    if (!std::isfinite(memory[i])) {
      std::ostringstream os;
      os << "setMemory: memory must be finite (element " << i << " is " << memory[i] << ")";
      return Status::Invalid(os.str());
    }
  }
  im.memory_length = 0;
  im.cached = 0;  // the cached positions attended to the old memory
  if (!im.xcache) im.xcache.reset(new train::LayerCache[static_cast<size_t>(c.num_layers)]);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    train::BlockParams& bp = im.blocks[static_cast<size_t>(l)];
    train::MhaShape shape{batch, 1, length, e, c.num_heads, e, e, nullptr, c.num_kv_heads};
    shape.head_dim = c.head_dim;
    shape.packed = c.packed_weights ? bp.xpk : nullptr;
    if (!im.xcache[l].k.Reserve(batch * length * ekv) || !im.xcache[l].v.Reserve(batch * length * ekv) ||
        !train::MhaProjectKv(shape, bp.xattn, batch * length, memory, memory, im.xcache[l].k.data(),
                             im.xcache[l].v.data(), &im.ws)) {
      return Status::OutOfMemory("setMemory: out of memory for the memory's keys and values");
    }
  }
  im.memory_batch = batch;
  im.memory_length = length;
  return Status::Ok();
}

void Transformer::LayerInputs(float* out) const {
  const Impl& im = *impl_;
  const int64_t n = im.last_rows * im.config.embed_dim;
  for (int64_t l = 0; l < im.config.num_layers; ++l) {
    std::memcpy(out + l * n, im.x[l].data(), static_cast<size_t>(n) * sizeof(float));
  }
}

Status Transformer::Extend(int64_t keep, int64_t length, const int32_t* tokens,
                           bool last_only, float* logits, float* attention,
                           float* hidden, float* cross) {
  Impl& im = *impl_;
  const TransformerConfig& c = im.config;
  const char* where = "extend";
  Status s = CheckBatch(where, c, 1, length);
  if (!s.ok()) return s;
  if (!(s = im.CheckMemory(where, 1, cross)).ok()) return s;
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
    std::unique_ptr<train::LayerCache[]> cache(new train::LayerCache[static_cast<size_t>(c.num_layers)]);
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
  const bool last_row = last_only && attention == nullptr && hidden == nullptr && cross == nullptr;
  if (!im.Forward(1, length, tokens, false, attention, keep, true, last_row, cross)) {
    return Status::OutOfMemory("extend: out of memory (wasm memory is limited to 4 GiB)");
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
  if (!(s = im.CheckMemory("evaluate", batch, nullptr)).ok()) return s;
  if (!im.logits.Reserve(batch * length * im.config.vocab_size) ||
      !im.Forward(batch, length, tokens, false, nullptr, 0, false) ||
      !im.Logits(0, batch * length, im.logits.data())) {
    return Status::OutOfMemory("evaluate: out of memory (wasm memory is limited to 4 GiB)");
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
  if (!(s = im.CheckTrainable("step")).ok()) return s;
  if (im.config.packed_weights) return Status::Invalid("step: a loaded model runs only (its weights are packed for inference)");
  if (!im.EnsureTrainingBuffers()) {
    return Status::OutOfMemory("step: out of memory for the gradients and AdamW moments (3 × the weights)");
  }
  const uint64_t calls_before = im.dropout_calls;
  im.cached = 0;  // the weights change: cached keys and values go stale
  if (!im.Forward(batch, length, tokens, true, nullptr, 0, false) ||
      !im.Logits(0, batch * length, im.logits.data())) {
    return Status::OutOfMemory("step: out of memory (wasm memory is limited to 4 GiB)");
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
    return Status::OutOfMemory("step: out of memory (wasm memory is limited to 4 GiB)");
  }
  r.grad_norm = train::GlobalNorm(im.store.count(), im.grads.data());
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
  train::AdamWUpdate(im.store.count(), im.store.floats(), im.grads.data(), im.m.data(), im.v.data(),
                     im.decay.data(), o, lr, im.step, scale);
  r.lr = lr;
  r.step = im.step;
  *result = r;
  return Status::Ok();
}

}  // namespace attnlab

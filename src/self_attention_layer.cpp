// Self-attention layer (tutorial 1, step 5):
//   a = MHA(x, x, x)            [B, L, E]
//   a = Dropout(a)              identity unless training
//   y = LayerNorm(x + a)        over E, eps 1e-5, gamma/beta learnable
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "internal.h"

namespace attnlab {

struct SelfAttentionLayer::Impl {
  LayerConfig config;
  std::unique_ptr<MultiHeadAttention> mha;
  std::vector<float> gamma, beta;  // [E]
  internal::AlignedBuffer attn;    // [B, L, E]
};

SelfAttentionLayer::SelfAttentionLayer() : impl_(new Impl) {}
SelfAttentionLayer::~SelfAttentionLayer() = default;

std::unique_ptr<SelfAttentionLayer> SelfAttentionLayer::Create(
    const LayerConfig& config, Status* status) {
  if (!(config.dropout >= 0.0f && config.dropout < 1.0f)) {
    std::ostringstream os;
    os << "dropout must be a number in [0, 1) (got " << config.dropout << ")";
    *status = Status::Invalid(os.str());
    return nullptr;
  }
  if (!(config.eps > 0.0f) || !std::isfinite(config.eps)) {
    std::ostringstream os;
    os << "eps must be a finite number > 0 (got " << config.eps << ")";
    *status = Status::Invalid(os.str());
    return nullptr;
  }
  MhaConfig mc = config.mha;
  if ((mc.kdim != 0 && mc.kdim != mc.embed_dim) ||
      (mc.vdim != 0 && mc.vdim != mc.embed_dim)) {
    *status = Status::Invalid("selfAttentionLayer: kdim and vdim must equal embedDim");
    return nullptr;
  }
  auto mha = MultiHeadAttention::Create(mc, status);
  if (!mha) return nullptr;
  std::unique_ptr<SelfAttentionLayer> layer(new SelfAttentionLayer);
  layer->impl_->config = config;
  layer->impl_->config.mha = mha->config();
  const size_t e = static_cast<size_t>(mc.embed_dim);
  layer->impl_->gamma.assign(e, 1.0f);
  layer->impl_->beta.assign(e, 0.0f);
  layer->impl_->mha = std::move(mha);
  return layer;
}

MultiHeadAttention& SelfAttentionLayer::mha() { return *impl_->mha; }
const LayerConfig& SelfAttentionLayer::config() const { return impl_->config; }

Status SelfAttentionLayer::SetNorm(const float* gamma, const float* beta) {
  const size_t e = impl_->gamma.size();
  if (gamma) std::memcpy(impl_->gamma.data(), gamma, e * sizeof(float));
  if (beta) std::memcpy(impl_->beta.data(), beta, e * sizeof(float));
  return Status::Ok();
}

Status SelfAttentionLayer::GetNorm(float* gamma, float* beta) const {
  const size_t e = impl_->gamma.size();
  if (gamma) std::memcpy(gamma, impl_->gamma.data(), e * sizeof(float));
  if (beta) std::memcpy(beta, impl_->beta.data(), e * sizeof(float));
  return Status::Ok();
}

int64_t SelfAttentionLayer::HeldBytes() const {
  return impl_->mha->HeldBytes() + impl_->attn.bytes() +
         static_cast<int64_t>(2 * impl_->gamma.size() * sizeof(float));
}

Status SelfAttentionLayer::Forward(const LayerForwardArgs& a) {
  Impl& im = *impl_;
  const int64_t e = im.config.mha.embed_dim;
  Status s;
  if (!(s = internal::CheckDim("batch", a.batch, 1)).ok()) return s;
  if (!(s = internal::CheckDim("L (sequence length)", a.seq_len, 1)).ok()) return s;
  int64_t n = 0;
  if (!(s = internal::TensorElements("x", {a.batch, a.seq_len, e}, &n)).ok()) return s;
  if (!(s = internal::CheckPointer("x", a.x)).ok()) return s;
  if (!(s = internal::CheckPointer("output", a.output)).ok()) return s;
  // Sizes the MHA checks again, checked here too so that an oversized call is
  // refused before the [B, L, E] buffer below is allocated.
  int64_t nw = 0;
  if (!(s = internal::TensorElements("the projected input", {a.batch, a.seq_len, 3, e}, &nw)).ok()) return s;
  if (a.weights != nullptr &&
      !(s = internal::TensorElements("weights", {a.batch, im.config.mha.num_heads, a.seq_len, a.seq_len}, &nw)).ok()) {
    return s;
  }
  if (!im.attn.Reserve(n)) return Status::OutOfMemory("forward: out of memory");

  MhaForwardArgs m;
  m.batch = a.batch;
  m.lq = m.lk = a.seq_len;
  m.query = m.key = m.value = a.x;
  m.mask = a.mask;
  m.output = im.attn.data();
  m.weights = a.weights;
  m.average_weights = a.average_weights;
  m.trace = a.trace;
  if (!(s = im.mha->Forward(m)).ok()) return s;
  const ForwardTrace* t = a.trace;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  if (t != nullptr && t->attention != nullptr) std::memcpy(t->attention, im.attn.data(), bytes);
  if (a.training && im.config.dropout > 0.0f) {
    if (!(s = Dropout(n, im.config.dropout, a.dropout_seed, im.attn.data())).ok()) return s;
  }
  if (t != nullptr && t->dropout != nullptr) std::memcpy(t->dropout, im.attn.data(), bytes);
  if (t != nullptr && t->residual != nullptr) {
    const float* r = im.attn.data();
    for (int64_t i = 0; i < n; ++i) t->residual[i] = a.x[i] + r[i];
  }
  kernels::AddLayerNorm(a.batch * a.seq_len, e, a.x, im.attn.data(),
                        im.gamma.data(), im.beta.data(), im.config.eps, a.output);
  return Status::Ok();
}

}  // namespace attnlab

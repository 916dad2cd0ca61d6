// Multi-head attention:
//   query [B,Lq,E] ─linear─▶ Q [B,Lq,E] ─split (strides)─▶ [B,H,Lq,D]
//   key   [B,Lk,kdim] ─▶ K [B,Lk,Ekv] ─▶ [B,Hkv,Lk,D]   (Ekv = Hkv·D)
//   value [B,Lk,vdim] ─▶ V [B,Lk,Ekv] ─▶ [B,Hkv,Lk,D]
//   optional RoPE on Q and K rows in place (positions from the cache length)
//   attention core per head (query head h reads kv head h·Hkv/H)
//   ─▶ context [B,Lq,E] (heads merged by strides)
//   ─linear─▶ output [B,Lq,E]
// Weights are kept in keras layout [in, out] and packed into GEMM panels when
// set. When query, key and value are the same tensor the three projections
// run as one GEMM against the packed concatenation [E, E + 2·Ekv]; when only
// key and value are (and no cache), K and V run as one against its [Wk | Wv]
// columns.
// With a KvCache, K and V of the new keys are appended to the cache's
// [B, maxL, Ekv] buffers and the heads read every cached row through strides.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "internal.h"
#include "thread_pool.h"

namespace attnlab {

using internal::AlignedBuffer;

struct MultiHeadAttention::Impl {
  MhaConfig config;
  int64_t head_dim = 0;
  int64_t kv_dim = 0;  // Ekv = Hkv·D
  // Raw weights, keras layout [in, out]; biases [E].
  std::vector<float> w[8];
  // Packed for the kernel set that was active when packing.
  AlignedBuffer packed_q, packed_k, packed_v, packed_o, packed_qkv;
  kernels::PackedB pq, pk, pv, po, pqkv;
  std::vector<float> bias_qkv;  // [E + 2·Ekv]
  bool packed = false;
  bool packed_scalar = false;
  // Scratch reused across calls.
  AlignedBuffer q_buf, k_buf, v_buf, attn_scratch;

  int64_t InDim(WeightId id) const {
    switch (id) {
      case WeightId::kWk: return config.kdim;
      case WeightId::kWv: return config.vdim;
      default: return config.embed_dim;
    }
  }
  int64_t OutDim(WeightId id) const {
    switch (id) {
      case WeightId::kWk: case WeightId::kBk:
      case WeightId::kWv: case WeightId::kBv: return kv_dim;
      default: return config.embed_dim;
    }
  }
  static bool IsBias(WeightId id) { return static_cast<int>(id) % 2 == 1; }

  bool Pack() {
    const int64_t e = config.embed_dim, ekv = kv_dim, wd = e + 2 * ekv;
    auto pack = [&](AlignedBuffer& buf, const std::vector<float>& src,
                    int64_t in, int64_t out_dim, kernels::PackedB* out) {
      if (!buf.Reserve(kernels::PackedFloats(in, out_dim))) return false;
      *out = kernels::PackB(in, out_dim, src.data(), out_dim, 1, buf.data());
      return true;
    };
    if (!pack(packed_q, w[0], e, e, &pq) || !pack(packed_k, w[2], config.kdim, ekv, &pk) ||
        !pack(packed_v, w[4], config.vdim, ekv, &pv) || !pack(packed_o, w[6], e, e, &po)) {
      return false;
    }
    if (config.kdim == e && config.vdim == e) {
      // [E, E + 2·Ekv] = [Wq | Wk | Wv] column-wise.
      // A temporary that reports allocation failure (std::vector would abort
      // the wasm module: exceptions are disabled there).
      AlignedBuffer cat_buf;
      if (!cat_buf.Reserve(e * wd)) return false;
      float* cat = cat_buf.data();
      for (int64_t r = 0; r < e; ++r) {
        std::memcpy(&cat[r * wd], &w[0][r * e], e * sizeof(float));
        std::memcpy(&cat[r * wd + e], &w[2][r * ekv], ekv * sizeof(float));
        std::memcpy(&cat[r * wd + e + ekv], &w[4][r * ekv], ekv * sizeof(float));
      }
      if (!packed_qkv.Reserve(kernels::PackedFloats(e, wd))) return false;
      pqkv = kernels::PackB(e, wd, cat, wd, 1, packed_qkv.data());
      if (config.bias) {
        bias_qkv.resize(static_cast<size_t>(wd));
        std::memcpy(&bias_qkv[0], w[1].data(), e * sizeof(float));
        std::memcpy(&bias_qkv[e], w[3].data(), ekv * sizeof(float));
        std::memcpy(&bias_qkv[e + ekv], w[5].data(), ekv * sizeof(float));
      }
    }
    packed = true;
    packed_scalar = kernels::UsingScalarKernels();
    return true;
  }
};

struct KvCache::Impl {
  const void* owner = nullptr;  // the MultiHeadAttention::Impl it belongs to
  int64_t batch = 0, max_length = 0, length = 0, kv_dim = 0;
  AlignedBuffer k, v;  // [B, max_length, Ekv]
};

KvCache::KvCache() : impl_(new Impl) {}
KvCache::~KvCache() = default;
int64_t KvCache::batch() const { return impl_->batch; }
int64_t KvCache::length() const { return impl_->length; }
int64_t KvCache::max_length() const { return impl_->max_length; }
void KvCache::Reset() { impl_->length = 0; }
Status KvCache::Truncate(int64_t length) {
  if (length < 0 || length > impl_->length) {
    std::ostringstream os;
    os << "truncate: length must be in [0, " << impl_->length
       << "] (the positions held), got " << length;
    return Status::Invalid(os.str());
  }
  impl_->length = length;
  return Status::Ok();
}
int64_t KvCache::HeldBytes() const { return impl_->k.bytes() + impl_->v.bytes(); }

namespace {
// splitmix64: a small, well-mixed generator for the seeded initialisation.
uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

MultiHeadAttention::MultiHeadAttention() : impl_(new Impl) {}
MultiHeadAttention::~MultiHeadAttention() = default;

std::unique_ptr<MultiHeadAttention> MultiHeadAttention::Create(
    const MhaConfig& config_in, Status* status) {
  MhaConfig c = config_in;
  if (c.kdim == 0) c.kdim = c.embed_dim;
  if (c.vdim == 0) c.vdim = c.embed_dim;
  Status s;
  if (!(s = internal::CheckDim("embedDim", c.embed_dim, 1)).ok() ||
      !(s = internal::CheckDim("numHeads", c.num_heads, 1)).ok() ||
      !(s = internal::CheckDim("kdim", c.kdim, 1)).ok() ||
      !(s = internal::CheckDim("vdim", c.vdim, 1)).ok()) {
    *status = s;
    return nullptr;
  }
  if (c.embed_dim % c.num_heads != 0) {
    std::ostringstream os;
    os << "embedDim (" << c.embed_dim << ") must be divisible by numHeads ("
       << c.num_heads << "): head_dim = embedDim / numHeads must be an integer";
    *status = Status::Invalid(os.str());
    return nullptr;
  }
  if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
  if (c.num_kv_heads < 1 || c.num_heads % c.num_kv_heads != 0) {
    std::ostringstream os;
    os << "numKvHeads (" << c.num_kv_heads << ") must be an integer >= 1 that divides numHeads ("
       << c.num_heads << ") (GQA/MQA: numHeads % numKvHeads == 0)";
    *status = Status::Invalid(os.str());
    return nullptr;
  }
  if (c.rope) {
    const int64_t d = c.embed_dim / c.num_heads;
    if (c.rope_dim == 0) c.rope_dim = d;
    if (!(s = internal::CheckRotaryDim(c.rope_dim, d)).ok() ||
        !(s = internal::CheckRopeBase(c.rope_base)).ok()) {
      *status = Status::Invalid("rope: " + s.message);
      return nullptr;
    }
  }
  int64_t n = 0;
  const int64_t widest = std::max(c.embed_dim, std::max(c.kdim, c.vdim));
  // {widest, 3, E} rather than {widest, 3·E}: 3·E may overflow int64.
  if (!(s = internal::TensorElements("a projection weight", {widest, 3, c.embed_dim}, &n)).ok()) {
    *status = s;
    return nullptr;
  }
  // Everything Create and Pack allocate (raw weights, packed panels, the fused
  // [E, 3E] panel and its temporary copy), checked before any allocation.
  // No overflow: widest·3E <= kMaxBufferBytes / 4 was checked above.
  {
    const int64_t e = c.embed_dim;
    int64_t floats = 2 * e * e + (c.kdim + c.vdim) * e + (c.bias ? 4 * e : 0) +
                     2 * kernels::PackedFloats(e, e) + kernels::PackedFloats(c.kdim, e) +
                     kernels::PackedFloats(c.vdim, e);
    if (c.kdim == e && c.vdim == e) floats += kernels::PackedFloats(e, 3 * e) + 3 * e * e + 3 * e;
    if (floats > kMaxCallBytes / 4) {
      std::ostringstream os;
      os << "embedDim " << e << " (kdim " << c.kdim << ", vdim " << c.vdim
         << ") needs " << (floats * 4) / (int64_t{1} << 20)
         << " MiB for the weights and their packed copies; at most "
         << (kMaxCallBytes >> 20) << " MiB are allowed (wasm memory is limited to 4 GiB)";
      *status = Status::OutOfMemory(os.str());
      return nullptr;
    }
    // The raw weights below are std::vectors; in the wasm build exceptions
    // are disabled and a failed std::vector allocation aborts the module.
    // Check first that the memory is there (one block of the total size;
    // nothing else allocates in between), and report it as a Status if not.
    if (!internal::CanAllocate(floats * 4 + (int64_t{64} << 10))) {
      *status = Status::OutOfMemory("out of memory for the weights (wasm memory is limited to 4 GiB)");
      return nullptr;
    }
  }
  std::unique_ptr<MultiHeadAttention> m(new MultiHeadAttention);
  Impl& im = *m->impl_;
  im.config = c;
  im.head_dim = c.embed_dim / c.num_heads;
  im.kv_dim = c.num_kv_heads * im.head_dim;
  uint64_t state = (static_cast<uint64_t>(c.seed) << 32) ^ 0x5EEDA77E17ull;
  for (int id = 0; id < 8; ++id) {
    const WeightId wid = static_cast<WeightId>(id);
    const int64_t size = m->WeightSize(wid);
    im.w[id].assign(static_cast<size_t>(size), 0.0f);
    if (Impl::IsBias(wid)) continue;  // biases start at zero, as in PyTorch
    // Xavier uniform: U(-a, a), a = sqrt(6 / (fan_in + fan_out)).
    const double a = std::sqrt(6.0 / static_cast<double>(im.InDim(wid) + im.OutDim(wid)));
    for (auto& x : im.w[id]) {
      const double u = static_cast<double>(SplitMix(&state) >> 11) * (1.0 / 9007199254740992.0);
      x = static_cast<float>((2.0 * u - 1.0) * a);
    }
  }
  if (!im.Pack()) {
    *status = Status::OutOfMemory("out of memory for the weights (wasm memory is limited to 4 GiB)");
    return nullptr;
  }
  *status = Status::Ok();
  return m;
}

const MhaConfig& MultiHeadAttention::config() const { return impl_->config; }

int64_t MultiHeadAttention::WeightSize(WeightId id) const {
  const int64_t e = impl_->OutDim(id);
  if (Impl::IsBias(id)) return impl_->config.bias ? e : 0;
  return impl_->InDim(id) * e;
}

std::vector<int64_t> MultiHeadAttention::WeightShape(WeightId id,
                                                     WeightLayout layout) const {
  const int64_t e = impl_->OutDim(id);
  if (Impl::IsBias(id)) return {impl_->config.bias ? e : 0};
  const int64_t in = impl_->InDim(id);
  return layout == WeightLayout::kTorch ? std::vector<int64_t>{e, in}
                                        : std::vector<int64_t>{in, e};
}

static const char* WeightName(WeightId id) {
  static const char* names[] = {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"};
  return names[static_cast<int>(id)];
}

Status MultiHeadAttention::SetWeight(WeightId id, const float* data,
                                     WeightLayout layout) {
  const int idx = static_cast<int>(id);
  if (idx < 0 || idx > 7) return Status::Invalid("unknown weight id");
  if (Impl::IsBias(id) && !impl_->config.bias) {
    return Status::Invalid(std::string(WeightName(id)) +
                           ": this layer was created with bias: false");
  }
  if (data == nullptr) return Status::Invalid(std::string(WeightName(id)) + " is missing");
  std::vector<float>& w = impl_->w[idx];
  const int64_t e = impl_->OutDim(id);
  if (Impl::IsBias(id) || layout == WeightLayout::kKeras) {
    std::memcpy(w.data(), data, w.size() * sizeof(float));
  } else {
    // torch [out=E, in] → keras [in, out=E]
    const int64_t in = impl_->InDim(id);
    for (int64_t o = 0; o < e; ++o) {
      for (int64_t i = 0; i < in; ++i) w[i * e + o] = data[o * in + i];
    }
  }
  // Packed lazily by the next Forward, so setting all eight weights costs one
  // repack, not eight.
  impl_->packed = false;
  return Status::Ok();
}

Status MultiHeadAttention::GetWeight(WeightId id, WeightLayout layout,
                                     float* out) const {
  const int idx = static_cast<int>(id);
  if (idx < 0 || idx > 7) return Status::Invalid("unknown weight id");
  const std::vector<float>& w = impl_->w[idx];
  if (w.empty()) return Status::Ok();
  if (out == nullptr) return Status::Invalid("out is missing");
  const int64_t e = impl_->OutDim(id);
  if (Impl::IsBias(id) || layout == WeightLayout::kKeras) {
    std::memcpy(out, w.data(), w.size() * sizeof(float));
  } else {
    const int64_t in = impl_->InDim(id);
    for (int64_t o = 0; o < e; ++o) {
      for (int64_t i = 0; i < in; ++i) out[o * in + i] = w[i * e + o];
    }
  }
  return Status::Ok();
}

int64_t MultiHeadAttention::HeldBytes() const {
  const Impl& im = *impl_;
  int64_t total = 0;
  for (const auto& w : im.w) total += static_cast<int64_t>(w.size() * sizeof(float));
  for (const AlignedBuffer* b : {&im.packed_q, &im.packed_k, &im.packed_v, &im.packed_o,
                                 &im.packed_qkv, &im.q_buf, &im.k_buf, &im.v_buf,
                                 &im.attn_scratch}) {
    total += b->bytes();
  }
  return total + static_cast<int64_t>(im.bias_qkv.size() * sizeof(float));
}

std::unique_ptr<KvCache> MultiHeadAttention::CreateKvCache(
    int64_t batch, int64_t max_length, Status* status) const {
  Status s;
  int64_t n = 0;
  if (!(s = internal::CheckDim("batch", batch, 1)).ok() ||
      !(s = internal::CheckDim("maxLength", max_length, 1)).ok() ||
      !(s = internal::TensorElements("the key cache [B, maxLength, numKvHeads·D]",
                                     {batch, max_length, impl_->kv_dim}, &n)).ok()) {
    *status = s;
    return nullptr;
  }
  if (2 * n > kMaxCallBytes / 4) {
    std::ostringstream os;
    os << "the key and value caches [" << batch << ", " << max_length << ", "
       << impl_->kv_dim << "] need " << (8 * n) / (int64_t{1} << 20)
       << " MiB; at most " << (kMaxCallBytes >> 20)
       << " MiB are allowed (wasm memory is limited to 4 GiB)";
    *status = Status::OutOfMemory(os.str());
    return nullptr;
  }
  std::unique_ptr<KvCache> c(new KvCache);
  KvCache::Impl& ci = *c->impl_;
  if (!ci.k.Reserve(n) || !ci.v.Reserve(n)) {
    *status = Status::OutOfMemory("out of memory for the key/value cache (wasm memory is limited to 4 GiB)");
    return nullptr;
  }
  ci.owner = impl_.get();
  ci.batch = batch;
  ci.max_length = max_length;
  ci.kv_dim = impl_->kv_dim;
  *status = Status::Ok();
  return c;
}

Status MultiHeadAttention::Forward(const MhaForwardArgs& a) {
  JoinTasks();  // a previous call's started output projection may read our scratch
  Impl& im = *impl_;
  const MhaConfig& c = im.config;
  const int64_t e = c.embed_dim, h = c.num_heads, d = im.head_dim;
  Status s;
  if (!(s = internal::CheckDim("batch", a.batch, 1)).ok()) return s;
  if (!(s = internal::CheckDim("Lq (query length)", a.lq, 1)).ok()) return s;
  if (!(s = internal::CheckDim("Lk (key length)", a.lk, 1)).ok()) return s;
  int64_t nq = 0, nk = 0, nw = 0;
  if (!(s = internal::TensorElements("query", {a.batch, a.lq, 3 * e}, &nq)).ok()) return s;
  if (!(s = internal::TensorElements("key", {a.batch, a.lk, std::max(c.kdim, e)}, &nk)).ok()) return s;
  if (!(s = internal::TensorElements("value", {a.batch, a.lk, std::max(c.vdim, e)}, &nk)).ok()) return s;
  KvCache::Impl* cache = a.cache != nullptr ? a.cache->impl_.get() : nullptr;
  int64_t past = 0;
  if (cache != nullptr) {
    if (cache->owner != &im) {
      return Status::Invalid("kvCache belongs to another multiHeadAttention; use one created by this layer's createKVCache()");
    }
    if (cache->batch != a.batch) {
      std::ostringstream os;
      os << "kvCache holds batch " << cache->batch << " but the inputs have batch B = " << a.batch;
      return Status::Invalid(os.str());
    }
    past = cache->length;
    if (a.lk > cache->max_length - past) {
      std::ostringstream os;
      os << "kvCache: " << a.lk << " new key(s) do not fit: it holds " << past
         << " of at most " << cache->max_length << " positions; reset() it or create a larger one";
      return Status::Invalid(os.str());
    }
  }
  const int64_t lk_total = past + a.lk;  // keys the heads attend over
  if (a.weights != nullptr &&
      !(s = internal::TensorElements("weights", {a.batch, h, a.lq, lk_total}, &nw)).ok()) {
    return s;
  }
  if (!(s = internal::CheckPointer("query", a.query)).ok()) return s;
  if (!(s = internal::CheckPointer("key", a.key)).ok()) return s;
  if (!(s = internal::CheckPointer("value", a.value)).ok()) return s;
  if (!(s = internal::CheckPointer("output", a.output)).ok()) return s;

  kernels::AttentionView view;
  if (!(s = internal::ResolveMask(a.mask, a.batch, h, a.lq, lk_total, &view)).ok()) return s;
  // With a cache the queries are the newest positions (bottom-right causal).
  if (cache != nullptr) {
    view.causal_offset += lk_total - a.lq;
    view.window_offset += lk_total - a.lq;
  }
  if (!im.packed || im.packed_scalar != kernels::UsingScalarKernels()) {
    if (!im.Pack()) return Status::OutOfMemory("multiHeadAttention: out of memory");
  }

  const bool fused = a.query == a.key && a.key == a.value && a.lq == a.lk &&
                     c.kdim == e && c.vdim == e;
  const int64_t ekv = im.kv_dim, hkv = c.num_kv_heads, wd = e + 2 * ekv;
  const int64_t mq = a.batch * a.lq, mk = a.batch * a.lk;
  // Key and value the same tensor (cross-attention over one memory, a decode
  // step without a cache): K and V come from one product.
  kernels::PackedB pkv;
  const bool shared_kv = !fused && cache == nullptr && a.key == a.value &&
                         c.kdim == e && c.vdim == e &&
                         kernels::PackedColumns(im.pqkv, e, &pkv);
  view.batch = a.batch;
  view.heads = h;
  view.kv_heads = hkv;
  view.lq = a.lq;
  view.lk = lk_total;
  view.d = d;
  view.dv = d;
  view.scale = 1.0f / std::sqrt(static_cast<float>(d));
  view.weights = a.weights;
  view.average_weights = a.average_weights;

  // RoPE over `len` rows of `heads` heads, positions past + l.
  auto rotate = [&](float* x, int64_t len, int64_t sb, int64_t sl,
                    int64_t heads) {
    if (!c.rope) return;
    internal::RotateSpec r;
    r.x = x;
    r.batch = a.batch;
    r.len = len;
    r.heads = heads;
    r.sb = sb;
    r.sl = sl;
    r.sh = d;
    r.rotary_dim = c.rope_dim;
    r.interleaved = c.rope_interleaved;
    r.pos0 = past;
    r.base = c.rope_base;
    internal::RotateRows(r);
  };

  if (fused) {
    // QKV [B, L, E + 2·Ekv]: Q at column 0, K at E, V at E + Ekv; head h at
    // +h·D.
    if (!im.q_buf.Reserve(mq * wd)) return Status::OutOfMemory("forward: out of memory");
    kernels::Gemm(mq, wd, e, a.query, e, im.pqkv,
                  c.bias ? im.bias_qkv.data() : nullptr, im.q_buf.data(), wd);
    float* qkv = im.q_buf.data();
    rotate(qkv, a.lq, a.lq * wd, wd, h);
    rotate(qkv + e, a.lq, a.lq * wd, wd, hkv);
    view.q = qkv;
    view.k = qkv + e;
    view.v = qkv + e + ekv;
    view.q_sl = view.k_sl = view.v_sl = wd;
    view.q_sh = view.k_sh = view.v_sh = d;
    view.q_sb = view.k_sb = view.v_sb = a.lq * wd;
  } else if (cache != nullptr) {
    // Q [B, Lq, E] in scratch; K and V of the new keys go straight into the
    // cache rows [past, past + Lk) of each batch.
    if (!im.q_buf.Reserve(mq * e)) return Status::OutOfMemory("forward: out of memory");
    kernels::Gemm(mq, e, e, a.query, e, im.pq, c.bias ? im.w[1].data() : nullptr,
                  im.q_buf.data(), e);
    rotate(im.q_buf.data(), a.lq, a.lq * e, e, h);
    view.q = im.q_buf.data();
    view.q_sl = e;
    view.q_sb = a.lq * e;
    view.q_sh = d;
  } else {
    // Q [B, Lq, E]; K and V [B, Lk, Ekv] each, or, with key and value the
    // same tensor, KV [B, Lk, 2·Ekv] (K at column 0, V at Ekv) from one GEMM
    // against the [Wk | Wv] panels of the packed concatenation: A (the key
    // rows) is packed once for both projections, and each element is the
    // same chain of multiply-adds as in separate K and V products.
    const int64_t kv_ld = shared_kv ? 2 * ekv : ekv;  // row stride of K and V
    if (!im.q_buf.Reserve(mq * e) || !im.k_buf.Reserve(mk * kv_ld) ||
        (!shared_kv && !im.v_buf.Reserve(mk * ekv))) {
      return Status::OutOfMemory("forward: out of memory");
    }
    float* kb = im.k_buf.data();
    float* vb = shared_kv ? kb + ekv : im.v_buf.data();
    kernels::Gemm(mq, e, e, a.query, e, im.pq, c.bias ? im.w[1].data() : nullptr,
                  im.q_buf.data(), e);
    if (shared_kv) {
      kernels::Gemm(mk, 2 * ekv, e, a.key, e, pkv, c.bias ? im.bias_qkv.data() + e : nullptr,
                    kb, kv_ld);
    } else {
      kernels::Gemm(mk, ekv, c.kdim, a.key, c.kdim, im.pk, c.bias ? im.w[3].data() : nullptr,
                    kb, ekv);
      kernels::Gemm(mk, ekv, c.vdim, a.value, c.vdim, im.pv, c.bias ? im.w[5].data() : nullptr,
                    vb, ekv);
    }
    rotate(im.q_buf.data(), a.lq, a.lq * e, e, h);
    rotate(kb, a.lk, a.lk * kv_ld, kv_ld, hkv);
    view.q = im.q_buf.data();
    view.k = kb;
    view.v = vb;
    view.q_sl = e;
    view.k_sl = view.v_sl = kv_ld;
    view.q_sh = view.k_sh = view.v_sh = d;
    view.q_sb = a.lq * e;
    view.k_sb = view.v_sb = a.lk * kv_ld;
  }
  if (cache != nullptr) {
    const int64_t row0 = past;
    const int64_t cache_sb = cache->max_length * ekv;
    float* kc = cache->k.data();
    float* vc = cache->v.data();
    for (int64_t b = 0; b < a.batch; ++b) {
      float* kdst = kc + b * cache_sb + row0 * ekv;
      float* vdst = vc + b * cache_sb + row0 * ekv;
      if (fused) {
        // Copy K and V of the new positions out of the fused QKV rows.
        for (int64_t l = 0; l < a.lk; ++l) {
          const float* src = view.q + b * view.q_sb + l * wd;
          std::memcpy(kdst + l * ekv, src + e, static_cast<size_t>(ekv) * sizeof(float));
          std::memcpy(vdst + l * ekv, src + e + ekv, static_cast<size_t>(ekv) * sizeof(float));
        }
      } else {
        kernels::Gemm(a.lk, ekv, c.kdim, a.key + b * a.lk * c.kdim, c.kdim, im.pk,
                      c.bias ? im.w[3].data() : nullptr, kdst, ekv);
        kernels::Gemm(a.lk, ekv, c.vdim, a.value + b * a.lk * c.vdim, c.vdim, im.pv,
                      c.bias ? im.w[5].data() : nullptr, vdst, ekv);
      }
    }
    if (!fused) rotate(kc + row0 * ekv, a.lk, cache_sb, ekv, hkv);
    view.k = kc;
    view.v = vc;
    view.k_sl = view.v_sl = ekv;
    view.k_sh = view.v_sh = d;
    view.k_sb = view.v_sb = cache_sb;
  }
  // The trace: Q, K, V and the scores before the core overwrites Q; the core
  // writes the (unaveraged) weights into the trace.
  const ForwardTrace* t = a.trace;
  if (t != nullptr) {
    auto rows = [&](float* dst, const float* src, int64_t sb, int64_t sl, int64_t n) {
      if (dst == nullptr) return;
      for (int64_t b = 0; b < a.batch; ++b) {
        for (int64_t l = 0; l < n; ++l) {
          std::memcpy(dst + (b * n + l) * e, src + b * sb + l * sl, static_cast<size_t>(e) * sizeof(float));
        }
      }
    };
    // K and V as [B, Lk, E]: with GQA each query head's slot holds its kv head.
    auto kv_rows = [&](float* dst, const float* src, int64_t sb, int64_t sl, int64_t n) {
      if (dst == nullptr) return;
      for (int64_t b = 0; b < a.batch; ++b) {
        for (int64_t l = 0; l < n; ++l) {
          for (int64_t hh = 0; hh < h; ++hh) {
            std::memcpy(dst + (b * n + l) * e + hh * d, src + b * sb + l * sl + (hh * hkv / h) * d,
                        static_cast<size_t>(d) * sizeof(float));
          }
        }
      }
    };
    rows(t->q, view.q, view.q_sb, view.q_sl, a.lq);
    kv_rows(t->k, view.k, view.k_sb, view.k_sl, lk_total);
    kv_rows(t->v, view.v, view.v_sb, view.v_sl, lk_total);
    if (t->scores != nullptr || t->capped != nullptr || t->masked != nullptr) {
      kernels::AttentionTraceScores(view, t->scores, t->capped, t->masked);
    }
    if (t->weights != nullptr) {
      view.weights = t->weights;
      view.average_weights = false;
    }
  }
  // Context [B, Lq, E], heads merged by strides. It overwrites Q in place:
  // the core reads the Q rows of a (head, query block) before it writes the
  // context rows of that same block and head, and nothing reads them after.
  if (!im.attn_scratch.Reserve(kernels::AttentionScratchFloats(view))) {
    return Status::OutOfMemory("forward: out of memory");
  }
  float* ctx = im.q_buf.data();
  const int64_t ctx_ld = fused ? wd : e;
  view.out = ctx;
  view.o_sl = ctx_ld;
  view.o_sh = d;
  view.o_sb = a.lq * ctx_ld;
  kernels::AttentionCore(view, im.attn_scratch.data());
  if (t != nullptr) {
    if (t->context != nullptr) {
      for (int64_t r = 0; r < mq; ++r) {
        std::memcpy(t->context + r * e, ctx + r * ctx_ld, static_cast<size_t>(e) * sizeof(float));
      }
    }
    if (t->weights != nullptr && a.weights != nullptr) {
      view.average_weights = a.average_weights;
      kernels::CopyTraceWeights(view, t->weights, a.weights);
    }
  }

  if (cache != nullptr) cache->length = lk_total;
  {
    const internal::DetachNextBatch detach(a.start_output_only);
    kernels::Gemm(mq, e, e, ctx, ctx_ld, im.po,
                  c.bias ? im.w[7].data() : nullptr, a.output, e);
  }
  return Status::Ok();
}

}  // namespace attnlab

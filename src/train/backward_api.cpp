// Public backward entry points (train.h): validation, then the training ops.
//   ScaledDotProductAttentionBackward   q, k, v [B, H, L, D] → dq, dk, dv
//   MultiHeadAttentionBackward          torch-layout weights → input and weight grads
//   SelfAttentionLayerBackward          LN(x + Dropout(MHA(x))) → dx, weight grads
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "train/ops.h"

namespace attnlab {

namespace {
using internal::CheckDim;
using internal::CheckPointer;
using internal::TensorElements;

Status Oom(const char* where) {
  return Status::OutOfMemory(std::string(where) +
                             ": out of memory for scratch (wasm memory is limited to 4 GiB)");
}

// The forward's view of a contiguous [B, H, L, *] SDPA problem.
Status CheckMhaConfig(MhaConfig* c) {
  Status s;
  if (!(s = CheckDim("embedDim", c->embed_dim, 1)).ok()) return s;
  if (!(s = CheckDim("numHeads", c->num_heads, 1)).ok()) return s;
  if (c->embed_dim % c->num_heads != 0) {
    std::ostringstream os;
    os << "embedDim (" << c->embed_dim << ") must be divisible by numHeads ("
       << c->num_heads << ")";
    return Status::Invalid(os.str());
  }
  if (c->kdim == 0) c->kdim = c->embed_dim;
  if (c->vdim == 0) c->vdim = c->embed_dim;
  if (!(s = CheckDim("kdim", c->kdim, 1)).ok()) return s;
  if (!(s = CheckDim("vdim", c->vdim, 1)).ok()) return s;
  if (c->num_kv_heads == 0) c->num_kv_heads = c->num_heads;
  if (c->num_kv_heads < 1 || c->num_heads % c->num_kv_heads != 0) {
    std::ostringstream os;
    os << "numKvHeads (" << c->num_kv_heads << ") must divide numHeads (" << c->num_heads << ")";
    return Status::Invalid(os.str());
  }
  if (c->rope) {
    const int64_t d = c->embed_dim / c->num_heads;
    if (c->rope_dim == 0) c->rope_dim = d;
    if (!(s = internal::CheckRotaryDim(c->rope_dim, d)).ok()) return s;
    if (!(s = internal::CheckRopeBase(c->rope_base)).ok()) return s;
  }
  return Status::Ok();
}

Status CheckMhaParams(const MhaConfig& c, const MhaParams& p, const MhaGrads* g) {
  static const char* kNames[8] = {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"};
  for (int i = 0; i < 8; ++i) {
    const bool bias = i % 2 == 1;
    if (bias && !c.bias) continue;
    Status s = CheckPointer(kNames[i], p.w[i]);
    if (!s.ok()) return s;
    if (g != nullptr) {
      s = CheckPointer((std::string("d") + kNames[i]).c_str(), g->w[i]);
      if (!s.ok()) return s;
    }
  }
  return Status::Ok();
}

int64_t WeightElements(const MhaConfig& c, int i) {
  const int64_t e = c.embed_dim;
  const int64_t ekv = c.num_kv_heads * (e / c.num_heads);
  switch (i) {
    case 0: case 6: return e * e;
    case 2: return ekv * c.kdim;
    case 4: return ekv * c.vdim;
    case 3: case 5: return c.bias ? ekv : 0;
    default: return c.bias ? e : 0;
  }
}

// RoPE tables of the MHA config for positions [0, max_len) (RotaryCache).
struct RopeHolder {
  std::vector<float> cos, sin, neg_sin;
  train::RopeTables tables;
};
Status MakeRope(const MhaConfig& c, int64_t max_len, RopeHolder* r) {
  const size_t n = static_cast<size_t>(max_len * (c.rope_dim / 2));
  r->cos.resize(n);
  r->sin.resize(n);
  r->neg_sin.resize(n);
  Status s = RotaryCache(max_len, c.rope_dim, c.rope_base, r->cos.data(), r->sin.data());
  if (!s.ok()) return s;
  for (size_t i = 0; i < n; ++i) r->neg_sin[i] = -r->sin[i];
  r->tables = {r->cos.data(), r->sin.data(), r->neg_sin.data(), c.rope_dim, c.rope_interleaved};
  return Status::Ok();
}
}  // namespace

Status ScaledDotProductAttentionBackward(const SdpaBackwardArgs& args) {
  const SdpaArgs& a = args.forward;
  Status s;
  if (!(s = internal::CheckSdpaArgs(a, "dOutput")).ok()) return s;
  if (!(s = CheckPointer("dOutput", args.d_output)).ok()) return s;
  if (!(s = CheckPointer("dq", args.dq)).ok()) return s;
  if (!(s = CheckPointer("dk", args.dk)).ok()) return s;
  if (!(s = CheckPointer("dv", args.dv)).ok()) return s;

  kernels::AttentionView view = internal::SdpaView(a);
  if (!(s = internal::ResolveMask(a.mask, a.batch, a.heads, a.lq, a.lk, &view)).ok()) {
    return s;
  }
  train::Workspace ws;
  if (a.output != nullptr || a.weights != nullptr) {
    internal::AlignedBuffer out;
    kernels::AttentionView fwd = view;
    if (a.output == nullptr && !out.Reserve(a.batch * a.heads * a.lq * a.dv)) {
      return Oom("scaledDotProductAttentionBackward");
    }
    fwd.out = a.output != nullptr ? a.output : out.data();
    fwd.weights = a.weights;
    if (!ws.tile.Reserve(kernels::AttentionScratchFloats(fwd))) {
      return Oom("scaledDotProductAttentionBackward");
    }
    kernels::AttentionCore(fwd, ws.tile.data());
  }
  view.out = nullptr;
  view.weights = nullptr;
  if (!train::AttentionBackward(view, args.d_output, args.dq, args.dk, args.dv, &ws)) {
    return Oom("scaledDotProductAttentionBackward");
  }
  return Status::Ok();
}

Status MultiHeadAttentionBackward(const MhaBackwardArgs& args) {
  MhaConfig c = args.config;
  Status s;
  if (!(s = CheckMhaConfig(&c)).ok()) return s;
  if (!(s = CheckDim("batch", args.batch, 1)).ok()) return s;
  if (!(s = CheckDim("Lq (query length)", args.lq, 1)).ok()) return s;
  if (!(s = CheckDim("Lk (key length)", args.lk, 1)).ok()) return s;
  int64_t n = 0;
  if (!(s = TensorElements("query", {args.batch, args.lq, c.embed_dim}, &n)).ok()) return s;
  if (!(s = TensorElements("key", {args.batch, args.lk, c.kdim}, &n)).ok()) return s;
  if (!(s = TensorElements("value", {args.batch, args.lk, c.vdim}, &n)).ok()) return s;
  if (!(s = TensorElements("the projected keys", {args.batch, args.lk, c.embed_dim}, &n)).ok()) return s;
  if (!(s = CheckPointer("query", args.query)).ok()) return s;
  if (!(s = CheckPointer("key", args.key)).ok()) return s;
  if (!(s = CheckPointer("value", args.value)).ok()) return s;
  if (!(s = CheckPointer("dOutput", args.d_output)).ok()) return s;
  if (!(s = CheckPointer("dQuery", args.d_query)).ok()) return s;
  if (!(s = CheckPointer("dKey", args.d_key)).ok()) return s;
  if (!(s = CheckPointer("dValue", args.d_value)).ok()) return s;
  if (!(s = CheckMhaParams(c, args.params, &args.grads)).ok()) return s;
  kernels::AttentionView mask_view;
  if (!(s = internal::ResolveMask(args.mask, args.batch, c.num_heads, args.lq,
                                  args.lk, &mask_view)).ok()) {
    return s;
  }
  for (int i = 0; i < 8; ++i) {
    if (args.grads.w[i] != nullptr) {
      std::memset(args.grads.w[i], 0, static_cast<size_t>(WeightElements(c, i)) * sizeof(float));
    }
  }
  RopeHolder rope;
  if (c.rope && !(s = MakeRope(c, std::max(args.lq, args.lk), &rope)).ok()) return s;
  train::MhaShape shape{args.batch, args.lq, args.lk, c.embed_dim, c.num_heads, c.kdim, c.vdim,
                        c.rope ? &rope.tables : nullptr, c.num_kv_heads};
  train::MhaActivations act;
  train::Workspace ws;
  internal::AlignedBuffer out;
  float* output = args.output;
  if (output == nullptr) {
    if (!out.Reserve(args.batch * args.lq * c.embed_dim)) return Oom("mha.backward");
    output = out.data();
  }
  if (!train::MhaForward(shape, args.params, args.query, args.key, args.value,
                         mask_view, nullptr, output, nullptr, &act, &ws) ||
      !train::MhaBackward(shape, args.params, args.query, args.key, args.value,
                          mask_view, nullptr, act, args.d_output, args.d_query,
                          args.d_key, args.d_value, args.grads, &ws)) {
    return Oom("mha.backward");
  }
  return Status::Ok();
}

Status SelfAttentionLayerBackward(const LayerBackwardArgs& args) {
  MhaConfig c = args.config;
  Status s;
  if (!(s = CheckMhaConfig(&c)).ok()) return s;
  if (c.kdim != c.embed_dim || c.vdim != c.embed_dim) {
    return Status::Invalid("layer.backward: kdim and vdim must equal embedDim");
  }
  if (c.num_kv_heads != c.num_heads || c.rope) {
    return Status::Invalid("layer.backward: a self-attention layer has no numKvHeads or rope");
  }
  if (!(args.dropout >= 0.0f && args.dropout < 1.0f)) {
    std::ostringstream os;
    os << "dropout must be a number in [0, 1) (got " << args.dropout << ")";
    return Status::Invalid(os.str());
  }
  if (!(args.eps > 0.0f) || !std::isfinite(args.eps)) {
    std::ostringstream os;
    os << "eps must be a finite number > 0 (got " << args.eps << ")";
    return Status::Invalid(os.str());
  }
  if (!(s = CheckDim("batch", args.batch, 1)).ok()) return s;
  if (!(s = CheckDim("L (sequence length)", args.seq_len, 1)).ok()) return s;
  const int64_t e = c.embed_dim;
  int64_t n = 0;
  if (!(s = TensorElements("x", {args.batch, args.seq_len, 4, e}, &n)).ok()) return s;
  n = args.batch * args.seq_len * e;
  if (!(s = CheckPointer("x", args.x)).ok()) return s;
  if (!(s = CheckPointer("dOutput", args.d_output)).ok()) return s;
  if (!(s = CheckPointer("dx", args.dx)).ok()) return s;
  if (!(s = CheckPointer("dGamma", args.d_gamma)).ok()) return s;
  if (!(s = CheckPointer("dBeta", args.d_beta)).ok()) return s;
  if (!(s = CheckMhaParams(c, args.params, &args.grads)).ok()) return s;
  kernels::AttentionView mask_view;
  if (!(s = internal::ResolveMask(args.mask, args.batch, c.num_heads,
                                  args.seq_len, args.seq_len, &mask_view)).ok()) {
    return s;
  }
  for (int i = 0; i < 8; ++i) {
    if (args.grads.w[i] != nullptr) {
      std::memset(args.grads.w[i], 0, static_cast<size_t>(WeightElements(c, i)) * sizeof(float));
    }
  }
  std::memset(args.d_gamma, 0, static_cast<size_t>(e) * sizeof(float));
  std::memset(args.d_beta, 0, static_cast<size_t>(e) * sizeof(float));

  internal::AlignedBuffer attn, y, dz, dtmp;
  if (!attn.Reserve(n) || !y.Reserve(n) || !dz.Reserve(n) || !dtmp.Reserve(n)) {
    return Oom("layer.backward");
  }
  train::MhaShape shape{args.batch, args.seq_len, args.seq_len, e, c.num_heads, e, e};
  train::MhaActivations act;
  train::Workspace ws;
  const bool drop = args.training && args.dropout > 0.0f;
  if (!train::MhaForward(shape, args.params, args.x, args.x, args.x, mask_view,
                         nullptr, attn.data(), nullptr, &act, &ws)) {
    return Oom("layer.backward");
  }
  if (drop) train::DropoutForward(n, args.dropout, args.dropout_seed, attn.data());
  float* out = args.output != nullptr ? args.output : y.data();
  train::ResidualLayerNormForward(args.batch * args.seq_len, e, args.x, attn.data(),
                                  args.gamma, args.beta, args.eps, out);
  train::ResidualLayerNormBackward(args.batch * args.seq_len, e, args.x, attn.data(),
                                   args.gamma, args.eps, args.d_output, dz.data(),
                                   args.d_gamma, args.d_beta);
  std::memcpy(args.dx, dz.data(), static_cast<size_t>(n) * sizeof(float));
  if (drop) train::DropoutBackward(n, args.dropout, args.dropout_seed, dz.data());
  float* d = dtmp.data();
  if (!train::MhaBackward(shape, args.params, args.x, args.x, args.x, mask_view,
                          nullptr, act, dz.data(), d, d, d, args.grads, &ws)) {
    return Oom("layer.backward");
  }
  for (int64_t i = 0; i < n; ++i) args.dx[i] += d[i];
  return Status::Ok();
}

}  // namespace attnlab

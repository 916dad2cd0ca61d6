// Scaled dot-product attention over N = B·H independent problems:
//   q [B,H,Lq,D], k [B,Hkv,Lk,D], v [B,Hkv,Lk,Dv] → output [B,H,Lq,Dv],
//   weights [B,H,Lq,Lk] = softmax(mask(softcap(q·kᵀ·scale))).
// GQA/MQA (Hkv < H): query head h reads kv head h·Hkv/H through strides.
#include <cmath>
#include <sstream>

#include "internal.h"

namespace attnlab {

namespace internal {

Status CheckSdpaArgs(const SdpaArgs& a, const char* out_name) {
  Status s;
  if (!(s = CheckDim("batch", a.batch, 1)).ok()) return s;
  if (!(s = CheckDim("heads", a.heads, 1)).ok()) return s;
  if (!(s = CheckDim("Lq (query length)", a.lq, 1)).ok()) return s;
  if (!(s = CheckDim("Lk (key length)", a.lk, 1)).ok()) return s;
  if (!(s = CheckDim("D (query/key width)", a.d, 1)).ok()) return s;
  if (!(s = CheckDim("Dv (value width)", a.dv, 1)).ok()) return s;
  const int64_t hkv = a.kv_heads == 0 ? a.heads : a.kv_heads;
  if (hkv < 1 || a.heads % hkv != 0) {
    std::ostringstream os;
    os << "k and v have " << hkv << " heads and q has " << a.heads
       << ": the query heads H must be a multiple of the key/value heads Hkv "
          "(GQA/MQA: H % Hkv == 0)";
    return Status::Invalid(os.str());
  }
  if (a.has_softcap && !(a.softcap > 0.0f && std::isfinite(a.softcap))) {
    std::ostringstream os;
    os << "softcap must be a finite number > 0 (got " << a.softcap << ")";
    return Status::Invalid(os.str());
  }
  int64_t n = 0;
  if (!(s = TensorElements("q", {a.batch, a.heads, a.lq, a.d}, &n)).ok()) return s;
  if (!(s = TensorElements("k", {a.batch, hkv, a.lk, a.d}, &n)).ok()) return s;
  if (!(s = TensorElements("v", {a.batch, hkv, a.lk, a.dv}, &n)).ok()) return s;
  if (!(s = TensorElements(out_name, {a.batch, a.heads, a.lq, a.dv}, &n)).ok()) return s;
  if (a.weights != nullptr &&
      !(s = TensorElements("weights", {a.batch, a.heads, a.lq, a.lk}, &n)).ok()) {
    return s;
  }
  if (a.has_scale && !std::isfinite(a.scale)) {
    std::ostringstream os;
    os << "scale must be a finite number (got " << a.scale << ")";
    return Status::Invalid(os.str());
  }
  if (!(s = CheckPointer("q", a.q)).ok()) return s;
  if (!(s = CheckPointer("k", a.k)).ok()) return s;
  return CheckPointer("v", a.v);
}

kernels::AttentionView SdpaView(const SdpaArgs& a) {
  // Dense [B, H, L, D] layouts; k and v have Hkv heads.
  kernels::AttentionView v;
  const int64_t hkv = a.kv_heads == 0 ? a.heads : a.kv_heads;
  v.batch = a.batch;
  v.heads = a.heads;
  v.kv_heads = hkv;
  v.lq = a.lq;
  v.lk = a.lk;
  v.d = a.d;
  v.dv = a.dv;
  v.q = a.q;
  v.q_sl = a.d, v.q_sh = a.lq * a.d, v.q_sb = a.heads * v.q_sh;
  v.k = a.k;
  v.k_sl = a.d, v.k_sh = a.lk * a.d, v.k_sb = hkv * v.k_sh;
  v.v = a.v;
  v.v_sl = a.dv, v.v_sh = a.lk * a.dv, v.v_sb = hkv * v.v_sh;
  v.softcap = a.has_softcap ? a.softcap : 0.0f;
  v.out = a.output;
  v.o_sl = a.dv, v.o_sh = a.lq * a.dv, v.o_sb = a.heads * v.o_sh;
  v.scale = a.has_scale ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.d));
  v.weights = a.weights;
  return v;
}

}  // namespace internal

Status ScaledDotProductAttention(const SdpaArgs& a) {
  Status s;
  if (!(s = internal::CheckSdpaArgs(a, "output")).ok()) return s;
  if (!(s = internal::CheckPointer("output", a.output)).ok()) return s;
  kernels::AttentionView view = internal::SdpaView(a);
  if (!(s = internal::ResolveMask(a.mask, a.batch, a.heads, a.lq, a.lk, &view)).ok()) {
    return s;
  }

  const ForwardTrace* t = a.trace;
  if (t != nullptr) {
    if (t->scores != nullptr || t->capped != nullptr || t->masked != nullptr) {
      kernels::AttentionTraceScores(view, t->scores, t->capped, t->masked);
    }
    if (t->weights != nullptr) view.weights = t->weights;
  }

  internal::AlignedBuffer scratch;
  if (!scratch.Reserve(kernels::AttentionScratchFloats(view))) {
    return Status::OutOfMemory("out of memory for scratch (wasm memory is limited to 4 GiB)");
  }
  kernels::AttentionCore(view, scratch.data());
  if (t != nullptr && t->weights != nullptr && a.weights != nullptr && a.weights != t->weights) {
    view.average_weights = false;
    kernels::CopyTraceWeights(view, t->weights, a.weights);
  }
  return Status::Ok();
}

}  // namespace attnlab

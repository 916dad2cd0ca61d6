// Scaled dot-product attention over N = B·H independent problems:
//   q [B,H,Lq,D], k [B,Hkv,Lk,D], v [B,Hkv,Lk,Dv] → output [B,H,Lq,Dv],
//   weights [B,H,Lq,Lk] = softmax(mask(softcap(q·kᵀ·scale))).
// GQA/MQA (Hkv < H): query head h reads kv head h·Hkv/H through strides.
#include <cmath>
#include <sstream>

#include "internal.h"

namespace attnlab {

Status ScaledDotProductAttention(const SdpaArgs& a) {
  Status s;
  if (!(s = internal::CheckDim("batch", a.batch, 1)).ok()) return s;
  if (!(s = internal::CheckDim("heads", a.heads, 1)).ok()) return s;
  if (!(s = internal::CheckDim("Lq (query length)", a.lq, 1)).ok()) return s;
  if (!(s = internal::CheckDim("Lk (key length)", a.lk, 1)).ok()) return s;
  if (!(s = internal::CheckDim("D (query/key width)", a.d, 1)).ok()) return s;
  if (!(s = internal::CheckDim("Dv (value width)", a.dv, 1)).ok()) return s;
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
  if (!(s = internal::TensorElements("q", {a.batch, a.heads, a.lq, a.d}, &n)).ok()) return s;
  if (!(s = internal::TensorElements("k", {a.batch, hkv, a.lk, a.d}, &n)).ok()) return s;
  if (!(s = internal::TensorElements("v", {a.batch, hkv, a.lk, a.dv}, &n)).ok()) return s;
  if (!(s = internal::TensorElements("output", {a.batch, a.heads, a.lq, a.dv}, &n)).ok()) return s;
  if (a.weights != nullptr &&
      !(s = internal::TensorElements("weights", {a.batch, a.heads, a.lq, a.lk}, &n)).ok()) {
    return s;
  }
  if (a.has_scale && !std::isfinite(a.scale)) {
    std::ostringstream os;
    os << "scale must be a finite number (got " << a.scale << ")";
    return Status::Invalid(os.str());
  }
  if (!(s = internal::CheckPointer("q", a.q)).ok()) return s;
  if (!(s = internal::CheckPointer("k", a.k)).ok()) return s;
  if (!(s = internal::CheckPointer("v", a.v)).ok()) return s;
  if (!(s = internal::CheckPointer("output", a.output)).ok()) return s;

  kernels::AttentionView view;
  view.batch = a.batch;
  view.heads = a.heads;
  view.lq = a.lq;
  view.lk = a.lk;
  view.d = a.d;
  view.dv = a.dv;
  view.q = a.q;
  view.q_sl = a.d;
  view.q_sh = a.lq * a.d;
  view.q_sb = a.heads * view.q_sh;
  view.k = a.k;
  view.k_sl = a.d;
  view.k_sh = a.lk * a.d;
  view.k_sb = hkv * view.k_sh;
  view.v = a.v;
  view.v_sl = a.dv;
  view.v_sh = a.lk * a.dv;
  view.v_sb = hkv * view.v_sh;
  view.kv_heads = hkv;
  view.softcap = a.has_softcap ? a.softcap : 0.0f;
  view.out = a.output;
  view.o_sl = a.dv;
  view.o_sh = a.lq * a.dv;
  view.o_sb = a.heads * view.o_sh;
  view.scale = a.has_scale ? a.scale
                            : 1.0f / std::sqrt(static_cast<float>(a.d));
  view.weights = a.weights;
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
    return Status::OutOfMemory("out of memory for scratch (wasm memory is limited to 2 GiB)");
  }
  kernels::AttentionCore(view, scratch.data());
  if (t != nullptr && t->weights != nullptr && a.weights != nullptr && a.weights != t->weights) {
    view.average_weights = false;
    kernels::CopyTraceWeights(view, t->weights, a.weights);
  }
  return Status::Ok();
}

}  // namespace attnlab

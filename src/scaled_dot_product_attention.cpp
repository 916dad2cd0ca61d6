// Scaled dot-product attention over N = B·H independent problems:
//   q [B,H,Lq,D], k [B,H,Lk,D], v [B,H,Lk,Dv] → output [B,H,Lq,Dv],
//   weights [B,H,Lq,Lk] = softmax(q·kᵀ·scale + mask).
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
  int64_t n = 0;
  if (!(s = internal::TensorElements("q", {a.batch, a.heads, a.lq, a.d}, &n)).ok()) return s;
  if (!(s = internal::TensorElements("k", {a.batch, a.heads, a.lk, a.d}, &n)).ok()) return s;
  if (!(s = internal::TensorElements("v", {a.batch, a.heads, a.lk, a.dv}, &n)).ok()) return s;
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
  view.k_sb = a.heads * view.k_sh;
  view.v = a.v;
  view.v_sl = a.dv;
  view.v_sh = a.lk * a.dv;
  view.v_sb = a.heads * view.v_sh;
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
    if (t->scores != nullptr || t->masked != nullptr) {
      kernels::AttentionTraceScores(view, t->scores, t->masked);
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

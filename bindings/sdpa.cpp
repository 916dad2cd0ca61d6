// Bindings of the functional ops: scaled dot-product attention and the
// positional encoding. Shape legend: B batch, H heads, Lq/Lk, D, Dv.
#include <emscripten/bind.h>

#include "common.h"

namespace attnlab_bind {
namespace {

// value_object "SdpaArgs": sizes are doubles (JS numbers), pointers are
// offsets into wasm memory (0 = absent).
struct JsSdpa {
  double batch = 1, heads = 1, lq = 0, lk = 0, d = 0, dv = 0;
  double kvHeads = 0;             // Hkv (GQA/MQA); 0: H
  uintptr_t q = 0, k = 0, v = 0;  // [B,H,Lq,D], [B,Hkv,Lk,D], [B,Hkv,Lk,Dv]
  bool hasScale = false;          // false: 1/sqrt(D)
  double scale = 1;
  bool hasSoftcap = false;        // softcap·tanh(s/softcap)
  double softcap = 0;
  JsMask mask;
  uintptr_t output = 0;   // [B,H,Lq,Dv]
  uintptr_t weights = 0;  // optional [B,H,Lq,Lk]
  uintptr_t trace = 0;          // optional trace buffers (scores, masked, weights)
};

int Sdpa(const JsSdpa& j) {
  attnlab::SdpaArgs a;
  a.batch = I64(j.batch);
  a.heads = I64(j.heads);
  a.lq = I64(j.lq);
  a.lk = I64(j.lk);
  a.d = I64(j.d);
  a.dv = I64(j.dv);
  a.q = Ptr<const float>(j.q);
  a.k = Ptr<const float>(j.k);
  a.v = Ptr<const float>(j.v);
  a.has_scale = j.hasScale;
  a.scale = static_cast<float>(j.scale);
  a.kv_heads = I64(j.kvHeads);
  a.has_softcap = j.hasSoftcap;
  a.softcap = static_cast<float>(j.softcap);
  a.mask = ToMask(j.mask);
  a.output = Ptr<float>(j.output);
  a.weights = Ptr<float>(j.weights);
  a.trace = ToTrace(j.trace);
  return Report(attnlab::ScaledDotProductAttention(a));
}

int PositionalEncoding(double seq_len, double d_model, double base, uintptr_t out) {
  return Report(attnlab::PositionalEncoding(I64(seq_len), I64(d_model), base, Ptr<float>(out)));
}

}  // namespace
}  // namespace attnlab_bind

EMSCRIPTEN_BINDINGS(attention_lab_sdpa) {
  using namespace emscripten;
  using attnlab_bind::JsSdpa;
  value_object<JsSdpa>("SdpaArgs")
      .field("batch", &JsSdpa::batch)
      .field("heads", &JsSdpa::heads)
      .field("lq", &JsSdpa::lq)
      .field("lk", &JsSdpa::lk)
      .field("d", &JsSdpa::d)
      .field("dv", &JsSdpa::dv)
      .field("q", &JsSdpa::q)
      .field("k", &JsSdpa::k)
      .field("v", &JsSdpa::v)
      .field("hasScale", &JsSdpa::hasScale)
      .field("scale", &JsSdpa::scale)
      .field("kvHeads", &JsSdpa::kvHeads)
      .field("hasSoftcap", &JsSdpa::hasSoftcap)
      .field("softcap", &JsSdpa::softcap)
      .field("mask", &JsSdpa::mask)
      .field("output", &JsSdpa::output)
      .field("weights", &JsSdpa::weights)
      .field("trace", &JsSdpa::trace);
  function("sdpa", &attnlab_bind::Sdpa);
  function("positionalEncoding", &attnlab_bind::PositionalEncoding);
}

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

// The sinusoidal encoding [seqLen, dModel] (output out); fields named as the
// op's bag in web/lib/ops.js (the wasm backend's generic `op` fills them).
struct PositionalEncodingCall {
  double seqLen = 0, dModel = 0, base = 10000;
  uintptr_t out = 0;
};

int PositionalEncoding(const PositionalEncodingCall& c) {
  return Report(attnlab::PositionalEncoding(I64(c.seqLen), I64(c.dModel), c.base, Ptr<float>(c.out)));
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
  using attnlab_bind::PositionalEncodingCall;
  value_object<PositionalEncodingCall>("PositionalEncodingCall")
      .field("seqLen", &PositionalEncodingCall::seqLen)
      .field("dModel", &PositionalEncodingCall::dModel)
      .field("base", &PositionalEncodingCall::base)
      .field("out", &PositionalEncodingCall::out);
  function("positionalEncoding", &attnlab_bind::PositionalEncoding);
}

// Embind bindings of the training core's backward ops (src/train/train.h):
// sdpaBackward, mhaBackward, layerBackward, and trainLastError() for every
// training binding file. Named structs (value_object) in, status codes out;
// pointers index wasm memory the JS wrapper (web/lib/train/) allocated.
#include <emscripten/bind.h>

#include <cstdint>
#include <string>

#include "common.h"
#include "train/train.h"
#include "train_common.h"

namespace attnlab_bind {
std::string& TrainError() {
  static std::string message;
  return message;
}
}  // namespace attnlab_bind

namespace {

using attnlab::Status;
using attnlab_bind::Ptr;
using attnlab_bind::TrainReport;

std::string TrainLastError() { return attnlab_bind::TrainError(); }

// Masks arrive as the shared "MaskArgs" value object (bindings/common.h,
// every variant of the forward's mask).
using MaskJs = attnlab_bind::JsMask;
using attnlab_bind::ToMask;

struct SdpaBackwardJs {
  double batch = 1, heads = 1, kvHeads = 0, lq = 0, lk = 0, d = 0, dv = 0;
  uintptr_t q = 0, k = 0, v = 0, dOutput = 0;
  uintptr_t dq = 0, dk = 0, dvOut = 0, output = 0;
  bool hasScale = false;
  double scale = 1;
  bool hasSoftcap = false;
  double softcap = 0;
  MaskJs mask;
};

int SdpaBackward(const SdpaBackwardJs& j) {
  attnlab::SdpaBackwardArgs a;
  a.forward.batch = static_cast<int64_t>(j.batch);
  a.forward.heads = static_cast<int64_t>(j.heads);
  a.forward.kv_heads = static_cast<int64_t>(j.kvHeads);
  a.forward.has_softcap = j.hasSoftcap;
  a.forward.softcap = static_cast<float>(j.softcap);
  a.forward.lq = static_cast<int64_t>(j.lq);
  a.forward.lk = static_cast<int64_t>(j.lk);
  a.forward.d = static_cast<int64_t>(j.d);
  a.forward.dv = static_cast<int64_t>(j.dv);
  a.forward.q = Ptr<const float>(j.q);
  a.forward.k = Ptr<const float>(j.k);
  a.forward.v = Ptr<const float>(j.v);
  a.forward.has_scale = j.hasScale;
  a.forward.scale = static_cast<float>(j.scale);
  a.forward.mask = ToMask(j.mask);
  a.forward.output = Ptr<float>(j.output);
  a.d_output = Ptr<const float>(j.dOutput);
  a.dq = Ptr<float>(j.dq);
  a.dk = Ptr<float>(j.dk);
  a.dv = Ptr<float>(j.dvOut);
  return TrainReport(attnlab::ScaledDotProductAttentionBackward(a));
}

// `params` and `grads` point to 8 uint32 pointers (wq, bq, wk, bk, wv, bv,
// wo, bo; 0 for absent biases).
struct MhaBackwardJs {
  double embedDim = 0, numHeads = 1, kdim = 0, vdim = 0, numKvHeads = 0;
  bool bias = true;
  bool rope = false;
  double ropeBase = 10000, ropeDim = 0;
  bool ropeInterleaved = false;
  double batch = 1, lq = 0, lk = 0;
  uintptr_t query = 0, key = 0, value = 0, dOutput = 0, output = 0;
  uintptr_t dQuery = 0, dKey = 0, dValue = 0, params = 0, grads = 0;
  MaskJs mask;
};

void ReadPointers(uintptr_t params, uintptr_t grads, attnlab::MhaParams* p,
                  attnlab::MhaGrads* g) {
  const uint32_t* pp = Ptr<const uint32_t>(params);
  const uint32_t* gp = Ptr<const uint32_t>(grads);
  for (int i = 0; i < 8; ++i) {
    p->w[i] = pp ? Ptr<const float>(pp[i]) : nullptr;
    g->w[i] = gp ? Ptr<float>(gp[i]) : nullptr;
  }
}

int MhaBackward(const MhaBackwardJs& j) {
  attnlab::MhaBackwardArgs a;
  a.config.embed_dim = static_cast<int64_t>(j.embedDim);
  a.config.num_heads = static_cast<int64_t>(j.numHeads);
  a.config.kdim = static_cast<int64_t>(j.kdim);
  a.config.vdim = static_cast<int64_t>(j.vdim);
  a.config.bias = j.bias;
  a.config.num_kv_heads = static_cast<int64_t>(j.numKvHeads);
  a.config.rope = j.rope;
  a.config.rope_base = j.ropeBase;
  a.config.rope_dim = static_cast<int64_t>(j.ropeDim);
  a.config.rope_interleaved = j.ropeInterleaved;
  ReadPointers(j.params, j.grads, &a.params, &a.grads);
  a.batch = static_cast<int64_t>(j.batch);
  a.lq = static_cast<int64_t>(j.lq);
  a.lk = static_cast<int64_t>(j.lk);
  a.query = Ptr<const float>(j.query);
  a.key = Ptr<const float>(j.key);
  a.value = Ptr<const float>(j.value);
  a.mask = ToMask(j.mask);
  a.d_output = Ptr<const float>(j.dOutput);
  a.output = Ptr<float>(j.output);
  a.d_query = Ptr<float>(j.dQuery);
  a.d_key = Ptr<float>(j.dKey);
  a.d_value = Ptr<float>(j.dValue);
  return TrainReport(attnlab::MultiHeadAttentionBackward(a));
}

struct LayerBackwardJs {
  double embedDim = 0, numHeads = 1;
  bool bias = true;
  uintptr_t params = 0, grads = 0, gamma = 0, beta = 0, dGamma = 0, dBeta = 0;
  double eps = 1e-5, dropout = 0;
  bool training = false;
  double dropoutSeed = 0, batch = 1, seqLen = 0;
  uintptr_t x = 0, dOutput = 0, output = 0, dx = 0;
  MaskJs mask;
};

int LayerBackward(const LayerBackwardJs& j) {
  attnlab::LayerBackwardArgs a;
  a.config.embed_dim = static_cast<int64_t>(j.embedDim);
  a.config.num_heads = static_cast<int64_t>(j.numHeads);
  a.config.bias = j.bias;
  ReadPointers(j.params, j.grads, &a.params, &a.grads);
  a.gamma = Ptr<const float>(j.gamma);
  a.beta = Ptr<const float>(j.beta);
  a.d_gamma = Ptr<float>(j.dGamma);
  a.d_beta = Ptr<float>(j.dBeta);
  a.eps = static_cast<float>(j.eps);
  a.dropout = static_cast<float>(j.dropout);
  a.training = j.training;
  a.dropout_seed = static_cast<uint32_t>(j.dropoutSeed);
  a.batch = static_cast<int64_t>(j.batch);
  a.seq_len = static_cast<int64_t>(j.seqLen);
  a.x = Ptr<const float>(j.x);
  a.mask = ToMask(j.mask);
  a.d_output = Ptr<const float>(j.dOutput);
  a.output = Ptr<float>(j.output);
  a.dx = Ptr<float>(j.dx);
  return TrainReport(attnlab::SelfAttentionLayerBackward(a));
}

// ---------------------------------------------------------------------------
// Transformer

}  // namespace

EMSCRIPTEN_BINDINGS(attention_lab_train_backward) {
  using emscripten::function;
  using emscripten::value_object;
  value_object<SdpaBackwardJs>("SdpaBackwardArgs")
      .field("batch", &SdpaBackwardJs::batch)
      .field("heads", &SdpaBackwardJs::heads)
      .field("kvHeads", &SdpaBackwardJs::kvHeads)
      .field("lq", &SdpaBackwardJs::lq)
      .field("lk", &SdpaBackwardJs::lk)
      .field("d", &SdpaBackwardJs::d)
      .field("dv", &SdpaBackwardJs::dv)
      .field("q", &SdpaBackwardJs::q)
      .field("k", &SdpaBackwardJs::k)
      .field("v", &SdpaBackwardJs::v)
      .field("dOutput", &SdpaBackwardJs::dOutput)
      .field("dq", &SdpaBackwardJs::dq)
      .field("dk", &SdpaBackwardJs::dk)
      .field("dvOut", &SdpaBackwardJs::dvOut)
      .field("output", &SdpaBackwardJs::output)
      .field("hasScale", &SdpaBackwardJs::hasScale)
      .field("scale", &SdpaBackwardJs::scale)
      .field("hasSoftcap", &SdpaBackwardJs::hasSoftcap)
      .field("softcap", &SdpaBackwardJs::softcap)
      .field("mask", &SdpaBackwardJs::mask);
  value_object<MhaBackwardJs>("MhaBackwardArgs")
      .field("embedDim", &MhaBackwardJs::embedDim)
      .field("numHeads", &MhaBackwardJs::numHeads)
      .field("kdim", &MhaBackwardJs::kdim)
      .field("vdim", &MhaBackwardJs::vdim)
      .field("numKvHeads", &MhaBackwardJs::numKvHeads)
      .field("rope", &MhaBackwardJs::rope)
      .field("ropeBase", &MhaBackwardJs::ropeBase)
      .field("ropeDim", &MhaBackwardJs::ropeDim)
      .field("ropeInterleaved", &MhaBackwardJs::ropeInterleaved)
      .field("bias", &MhaBackwardJs::bias)
      .field("batch", &MhaBackwardJs::batch)
      .field("lq", &MhaBackwardJs::lq)
      .field("lk", &MhaBackwardJs::lk)
      .field("query", &MhaBackwardJs::query)
      .field("key", &MhaBackwardJs::key)
      .field("value", &MhaBackwardJs::value)
      .field("dOutput", &MhaBackwardJs::dOutput)
      .field("output", &MhaBackwardJs::output)
      .field("dQuery", &MhaBackwardJs::dQuery)
      .field("dKey", &MhaBackwardJs::dKey)
      .field("dValue", &MhaBackwardJs::dValue)
      .field("params", &MhaBackwardJs::params)
      .field("grads", &MhaBackwardJs::grads)
      .field("mask", &MhaBackwardJs::mask);
  value_object<LayerBackwardJs>("LayerBackwardArgs")
      .field("embedDim", &LayerBackwardJs::embedDim)
      .field("numHeads", &LayerBackwardJs::numHeads)
      .field("bias", &LayerBackwardJs::bias)
      .field("params", &LayerBackwardJs::params)
      .field("grads", &LayerBackwardJs::grads)
      .field("gamma", &LayerBackwardJs::gamma)
      .field("beta", &LayerBackwardJs::beta)
      .field("dGamma", &LayerBackwardJs::dGamma)
      .field("dBeta", &LayerBackwardJs::dBeta)
      .field("eps", &LayerBackwardJs::eps)
      .field("dropout", &LayerBackwardJs::dropout)
      .field("training", &LayerBackwardJs::training)
      .field("dropoutSeed", &LayerBackwardJs::dropoutSeed)
      .field("batch", &LayerBackwardJs::batch)
      .field("seqLen", &LayerBackwardJs::seqLen)
      .field("x", &LayerBackwardJs::x)
      .field("dOutput", &LayerBackwardJs::dOutput)
      .field("output", &LayerBackwardJs::output)
      .field("dx", &LayerBackwardJs::dx)
      .field("mask", &LayerBackwardJs::mask);
  function("trainLastError", &TrainLastError);
  function("sdpaBackward", &SdpaBackward);
  function("mhaBackward", &MhaBackward);
  function("layerBackward", &LayerBackward);
}

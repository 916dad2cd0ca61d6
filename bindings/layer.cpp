// Bindings of SelfAttentionLayer and of the layer's parts exposed alone
// (addLayerNorm, dropoutUniform). Shape legend: B batch, L sequence, E embed.
#include <emscripten/bind.h>

#include "common.h"

namespace attnlab_bind {
namespace {

using attnlab::SelfAttentionLayer;

// value_object "LayerConfigArgs" (kdim = vdim = E).
struct JsLayerConfig {
  double embedDim = 0, numHeads = 0;
  bool bias = true;
  double seed = 0;  // uint32
  double dropout = 0.1, eps = 1e-5;
};

// value_object "LayerForwardArgs".
struct JsLayerForward {
  double batch = 1, seqLen = 0;
  uintptr_t x = 0;        // [B,L,E]
  JsMask mask;            // over [B,H,L,L]
  bool training = false;
  double dropoutSeed = 0;  // uint32
  uintptr_t output = 0;   // [B,L,E]
  uintptr_t weights = 0;  // optional [B,H,L,L] or [B,L,L]
  bool averageWeights = false;
  uintptr_t trace = 0;          // optional trace buffers
};

uintptr_t LayerCreate(const JsLayerConfig& j) {
  attnlab::LayerConfig c;
  c.mha.embed_dim = I64(j.embedDim);
  c.mha.num_heads = I64(j.numHeads);
  c.mha.bias = j.bias;
  c.mha.seed = static_cast<uint32_t>(j.seed);
  c.dropout = static_cast<float>(j.dropout);
  c.eps = static_cast<float>(j.eps);
  attnlab::Status s;
  auto l = SelfAttentionLayer::Create(c, &s);
  if (!l) {
    Report(s);
    return 0;
  }
  return reinterpret_cast<uintptr_t>(l.release());
}

void LayerDestroy(uintptr_t h) { delete Ptr<SelfAttentionLayer>(h); }

// The layer's MHA, as a handle for the mha* weight functions (owned by the
// layer: never pass it to mhaDestroy).
uintptr_t LayerMha(uintptr_t h) {
  return reinterpret_cast<uintptr_t>(&Ptr<SelfAttentionLayer>(h)->mha());
}

int LayerSetNorm(uintptr_t h, uintptr_t gamma, uintptr_t beta) {
  return Report(Ptr<SelfAttentionLayer>(h)->SetNorm(Ptr<const float>(gamma), Ptr<const float>(beta)));
}

int LayerGetNorm(uintptr_t h, uintptr_t gamma, uintptr_t beta) {
  return Report(Ptr<SelfAttentionLayer>(h)->GetNorm(Ptr<float>(gamma), Ptr<float>(beta)));
}

double LayerHeldBytes(uintptr_t h) {
  return static_cast<double>(Ptr<SelfAttentionLayer>(h)->HeldBytes());
}

int LayerForward(uintptr_t h, const JsLayerForward& j) {
  attnlab::LayerForwardArgs a;
  a.batch = I64(j.batch);
  a.seq_len = I64(j.seqLen);
  a.x = Ptr<const float>(j.x);
  a.mask = ToMask(j.mask);
  a.training = j.training;
  a.dropout_seed = static_cast<uint32_t>(j.dropoutSeed);
  a.output = Ptr<float>(j.output);
  a.weights = Ptr<float>(j.weights);
  a.average_weights = j.averageWeights;
  a.trace = ToTrace(j.trace);
  return Report(Ptr<SelfAttentionLayer>(h)->Forward(a));
}

// y [rows, dim] = LayerNorm(x + residual)·gamma + beta (residual, gamma, beta may be 0).
int AddLayerNorm(double rows, double dim, uintptr_t x, uintptr_t residual,
                 uintptr_t gamma, uintptr_t beta, double eps, uintptr_t y) {
  return Report(attnlab::AddLayerNorm(
      I64(rows), I64(dim), Ptr<const float>(x), Ptr<const float>(residual),
      Ptr<const float>(gamma), Ptr<const float>(beta), static_cast<float>(eps), Ptr<float>(y)));
}

double DropoutUniform(double seed, double i) {
  return attnlab::DropoutUniform(static_cast<uint32_t>(seed), static_cast<uint32_t>(i));
}

}  // namespace
}  // namespace attnlab_bind

EMSCRIPTEN_BINDINGS(attention_lab_layer) {
  using namespace emscripten;
  using attnlab_bind::JsLayerConfig;
  using attnlab_bind::JsLayerForward;
  value_object<JsLayerConfig>("LayerConfigArgs")
      .field("embedDim", &JsLayerConfig::embedDim)
      .field("numHeads", &JsLayerConfig::numHeads)
      .field("bias", &JsLayerConfig::bias)
      .field("seed", &JsLayerConfig::seed)
      .field("dropout", &JsLayerConfig::dropout)
      .field("eps", &JsLayerConfig::eps);
  value_object<JsLayerForward>("LayerForwardArgs")
      .field("batch", &JsLayerForward::batch)
      .field("seqLen", &JsLayerForward::seqLen)
      .field("x", &JsLayerForward::x)
      .field("mask", &JsLayerForward::mask)
      .field("training", &JsLayerForward::training)
      .field("dropoutSeed", &JsLayerForward::dropoutSeed)
      .field("output", &JsLayerForward::output)
      .field("weights", &JsLayerForward::weights)
      .field("averageWeights", &JsLayerForward::averageWeights)
      .field("trace", &JsLayerForward::trace);
  function("layerCreate", &attnlab_bind::LayerCreate);
  function("layerDestroy", &attnlab_bind::LayerDestroy);
  function("layerMha", &attnlab_bind::LayerMha);
  function("layerSetNorm", &attnlab_bind::LayerSetNorm);
  function("layerGetNorm", &attnlab_bind::LayerGetNorm);
  function("layerHeldBytes", &attnlab_bind::LayerHeldBytes);
  function("layerForward", &attnlab_bind::LayerForward);
  function("addLayerNorm", &attnlab_bind::AddLayerNorm);
  function("dropoutUniform", &attnlab_bind::DropoutUniform);
}

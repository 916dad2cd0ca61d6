// Bindings of MultiHeadAttention and its KV cache: opaque handles (0 on
// failure: see lastError()) that the JS wrapper frees with mhaDestroy /
// kvCacheDestroy. Shape legend: B batch, Lq/Lk, E embed, H heads.
#include <emscripten/bind.h>

#include "common.h"

namespace attnlab_bind {
namespace {

using attnlab::KvCache;
using attnlab::MultiHeadAttention;

// value_object "MhaConfigArgs".
struct JsMhaConfig {
  double embedDim = 0, numHeads = 0, kdim = 0, vdim = 0;
  bool bias = true;
  double seed = 0;  // uint32
  double numKvHeads = 0;  // Hkv (GQA/MQA); 0: H
  bool rope = false;      // rotary embedding of Q and K
  double ropeBase = 10000, ropeDim = 0;
  bool ropeInterleaved = false;
};

// value_object "MhaForwardArgs".
struct JsMhaForward {
  double batch = 1, lq = 0, lk = 0;    // lk: new keys (with a cache)
  uintptr_t query = 0, key = 0, value = 0;  // [B,Lq,E], [B,Lk,kdim], [B,Lk,vdim]
  JsMask mask;                          // over [B,H,Lq,Lk_total]
  uintptr_t output = 0;                 // [B,Lq,E]
  uintptr_t weights = 0;                // optional [B,H,Lq,Lk_total] or [B,Lq,Lk_total]
  bool averageWeights = false;
  uintptr_t cache = 0;                  // a kvCacheCreate handle or 0
  uintptr_t trace = 0;                        // optional trace buffers
  bool startOutputOnly = false;         // threads: joinTasks() must follow
};

uintptr_t MhaCreate(const JsMhaConfig& j) {
  attnlab::MhaConfig c;
  c.embed_dim = I64(j.embedDim);
  c.num_heads = I64(j.numHeads);
  c.kdim = I64(j.kdim);
  c.vdim = I64(j.vdim);
  c.bias = j.bias;
  c.seed = static_cast<uint32_t>(j.seed);
  c.num_kv_heads = I64(j.numKvHeads);
  c.rope = j.rope;
  c.rope_base = j.ropeBase;
  c.rope_dim = I64(j.ropeDim);
  c.rope_interleaved = j.ropeInterleaved;
  attnlab::Status s;
  auto m = MultiHeadAttention::Create(c, &s);
  if (!m) {
    Report(s);
    return 0;
  }
  return reinterpret_cast<uintptr_t>(m.release());
}

void MhaDestroy(uintptr_t h) { delete Ptr<MultiHeadAttention>(h); }

int MhaSetWeight(uintptr_t h, int id, uintptr_t data, int layout) {
  return Report(Ptr<MultiHeadAttention>(h)->SetWeight(
      static_cast<attnlab::WeightId>(id), Ptr<const float>(data),
      static_cast<attnlab::WeightLayout>(layout)));
}

int MhaGetWeight(uintptr_t h, int id, int layout, uintptr_t out) {
  return Report(Ptr<MultiHeadAttention>(h)->GetWeight(
      static_cast<attnlab::WeightId>(id),
      static_cast<attnlab::WeightLayout>(layout), Ptr<float>(out)));
}

double MhaHeldBytes(uintptr_t h) {
  return static_cast<double>(Ptr<MultiHeadAttention>(h)->HeldBytes());
}

int MhaForward(uintptr_t h, const JsMhaForward& j) {
  attnlab::MhaForwardArgs a;
  a.batch = I64(j.batch);
  a.lq = I64(j.lq);
  a.lk = I64(j.lk);
  a.query = Ptr<const float>(j.query);
  a.key = Ptr<const float>(j.key);
  a.value = Ptr<const float>(j.value);
  a.mask = ToMask(j.mask);
  a.output = Ptr<float>(j.output);
  a.weights = Ptr<float>(j.weights);
  a.average_weights = j.averageWeights;
  a.cache = Ptr<KvCache>(j.cache);
  a.trace = ToTrace(j.trace);
  a.start_output_only = j.startOutputOnly;
  return Report(Ptr<MultiHeadAttention>(h)->Forward(a));
}

// A key/value cache of the MHA `h` (0 on failure: see lastError()).
uintptr_t KvCacheCreate(uintptr_t h, double batch, double max_length) {
  attnlab::Status s;
  auto c = Ptr<MultiHeadAttention>(h)->CreateKvCache(I64(batch), I64(max_length), &s);
  if (!c) {
    Report(s);
    return 0;
  }
  return reinterpret_cast<uintptr_t>(c.release());
}

void KvCacheDestroy(uintptr_t c) { delete Ptr<KvCache>(c); }
void KvCacheReset(uintptr_t c) { Ptr<KvCache>(c)->Reset(); }
int KvCacheTruncate(uintptr_t c, double length) {
  return Report(Ptr<KvCache>(c)->Truncate(I64(length)));
}
double KvCacheLength(uintptr_t c) { return static_cast<double>(Ptr<KvCache>(c)->length()); }
double KvCacheHeldBytes(uintptr_t c) { return static_cast<double>(Ptr<KvCache>(c)->HeldBytes()); }

}  // namespace
}  // namespace attnlab_bind

EMSCRIPTEN_BINDINGS(attention_lab_mha) {
  using namespace emscripten;
  using attnlab_bind::JsMhaConfig;
  using attnlab_bind::JsMhaForward;
  value_object<JsMhaConfig>("MhaConfigArgs")
      .field("embedDim", &JsMhaConfig::embedDim)
      .field("numHeads", &JsMhaConfig::numHeads)
      .field("kdim", &JsMhaConfig::kdim)
      .field("vdim", &JsMhaConfig::vdim)
      .field("bias", &JsMhaConfig::bias)
      .field("seed", &JsMhaConfig::seed)
      .field("numKvHeads", &JsMhaConfig::numKvHeads)
      .field("rope", &JsMhaConfig::rope)
      .field("ropeBase", &JsMhaConfig::ropeBase)
      .field("ropeDim", &JsMhaConfig::ropeDim)
      .field("ropeInterleaved", &JsMhaConfig::ropeInterleaved);
  value_object<JsMhaForward>("MhaForwardArgs")
      .field("batch", &JsMhaForward::batch)
      .field("lq", &JsMhaForward::lq)
      .field("lk", &JsMhaForward::lk)
      .field("query", &JsMhaForward::query)
      .field("key", &JsMhaForward::key)
      .field("value", &JsMhaForward::value)
      .field("mask", &JsMhaForward::mask)
      .field("output", &JsMhaForward::output)
      .field("weights", &JsMhaForward::weights)
      .field("averageWeights", &JsMhaForward::averageWeights)
      .field("cache", &JsMhaForward::cache)
      .field("trace", &JsMhaForward::trace)
      .field("startOutputOnly", &JsMhaForward::startOutputOnly);
  function("mhaCreate", &attnlab_bind::MhaCreate);
  function("mhaDestroy", &attnlab_bind::MhaDestroy);
  function("mhaSetWeight", &attnlab_bind::MhaSetWeight);
  function("mhaGetWeight", &attnlab_bind::MhaGetWeight);
  function("mhaHeldBytes", &attnlab_bind::MhaHeldBytes);
  function("mhaForward", &attnlab_bind::MhaForward);
  function("kvCacheCreate", &attnlab_bind::KvCacheCreate);
  function("kvCacheDestroy", &attnlab_bind::KvCacheDestroy);
  function("kvCacheReset", &attnlab_bind::KvCacheReset);
  function("kvCacheTruncate", &attnlab_bind::KvCacheTruncate);
  function("kvCacheLength", &attnlab_bind::KvCacheLength);
  function("kvCacheHeldBytes", &attnlab_bind::KvCacheHeldBytes);
}

// Embind bindings of the training core (src/train/train.h). Thin like
// bindings.cpp: named structs (value_object) in, status codes out, the last
// failure's message through trainLastError(); pointers index wasm memory the
// JS wrapper (web/lib/train/) allocated. The transformer is an opaque handle
// the wrapper frees with transformerDestroy.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>

#include "common.h"
#include "train/train.h"

namespace {

using attnlab::Status;

std::string g_train_error;

int Report(const Status& s) {
  if (s.ok()) return 0;
  g_train_error = s.message;
  return static_cast<int>(s.code);
}

template <class T>
T* Ptr(uintptr_t p) {
  return reinterpret_cast<T*>(p);
}

std::string TrainLastError() { return g_train_error; }

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
  return Report(attnlab::ScaledDotProductAttentionBackward(a));
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
  return Report(attnlab::MultiHeadAttentionBackward(a));
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
  return Report(attnlab::SelfAttentionLayerBackward(a));
}

// ---------------------------------------------------------------------------
// Transformer

// The bag of attnlab::TransformerConfig, expanded from its field list
// (ATTNLAB_TRANSFORMER_CONFIG_FIELDS): JS numbers arrive as doubles (int64_t
// would need BigInt), the enums as their ids.
template <typename T>
struct JsOf {
  using type = double;
};
template <>
struct JsOf<bool> {
  using type = bool;
};
template <typename T>
typename JsOf<T>::type ToJs(T v) {
  if constexpr (std::is_enum_v<T>) {
    return static_cast<double>(static_cast<int64_t>(v));
  } else {
    return static_cast<typename JsOf<T>::type>(v);
  }
}
template <typename T>
T FromJs(typename JsOf<T>::type v) {
  if constexpr (std::is_enum_v<T>) {
    return static_cast<T>(static_cast<int64_t>(v));
  } else {
    return static_cast<T>(v);
  }
}

struct TransformerConfigJs {
#define ATTNLAB_JS_MEMBER(cpp, field, js, def, doc) typename JsOf<cpp>::type js = ToJs<cpp>(def);
  ATTNLAB_TRANSFORMER_CONFIG_FIELDS(ATTNLAB_JS_MEMBER)
#undef ATTNLAB_JS_MEMBER
};

// Every field's default under its JS name: the JS side takes its defaults
// from here instead of restating them.
emscripten::val TransformerConfigDefaults() {
  const attnlab::TransformerConfig c;
  emscripten::val o = emscripten::val::object();
#define ATTNLAB_JS_DEFAULT(type, field, js, def, doc) o.set(#js, ToJs<type>(c.field));
  ATTNLAB_TRANSFORMER_CONFIG_FIELDS(ATTNLAB_JS_DEFAULT)
#undef ATTNLAB_JS_DEFAULT
  return o;
}

uintptr_t TransformerCreate(const TransformerConfigJs& j) {
  attnlab::TransformerConfig c;
#define ATTNLAB_FROM_JS(type, field, js, def, doc) c.field = FromJs<type>(j.js);
  ATTNLAB_TRANSFORMER_CONFIG_FIELDS(ATTNLAB_FROM_JS)
#undef ATTNLAB_FROM_JS
  Status s;
  auto t = attnlab::Transformer::Create(c, &s);
  if (!t) {
    Report(s);
    return 0;
  }
  return reinterpret_cast<uintptr_t>(t.release());
}

attnlab::Transformer* T(uintptr_t h) { return reinterpret_cast<attnlab::Transformer*>(h); }

void TransformerDestroy(uintptr_t h) { delete T(h); }
double TransformerParamCount(uintptr_t h) { return static_cast<double>(T(h)->ParamCount()); }
double TransformerHeldBytes(uintptr_t h) { return static_cast<double>(T(h)->HeldBytes()); }
double TransformerHeadCopyBytes(uintptr_t h) { return static_cast<double>(T(h)->HeadCopyBytes()); }

// [{"name":…,"shape":[…],"offset":…,"decay":…}, …]
std::string TransformerParamInfo(uintptr_t h) {
  std::ostringstream os;
  os << '[';
  bool first = true;
  for (const auto& p : T(h)->params()) {
    os << (first ? "" : ",") << "{\"name\":\"" << p.name << "\",\"shape\":[";
    for (size_t i = 0; i < p.shape.size(); ++i) os << (i ? "," : "") << p.shape[i];
    os << "],\"offset\":" << p.offset << ",\"decay\":" << (p.decay ? "true" : "false")
       << ",\"packed\":" << (p.packed ? "true" : "false") << '}';
    first = false;
  }
  os << ']';
  return os.str();
}

void TransformerGetParams(uintptr_t h, uintptr_t out) { T(h)->CopyParams(Ptr<float>(out)); }

// One chunk of a checkpoint tensor (web/lib/model/load.js): float32 values
// (half 0), or 16-bit ones (half 1: F16, 2: BF16; src holds uint16).
struct WriteParamJs {
  double index = 0, first = 0, rows = 0, ld = 0;
  uintptr_t src = 0;
  bool transposed = false;
  int half = 0;
};
int TransformerWriteParam(uintptr_t h, const WriteParamJs& j) {
  const auto index = static_cast<int64_t>(j.index), first = static_cast<int64_t>(j.first),
             rows = static_cast<int64_t>(j.rows), ld = static_cast<int64_t>(j.ld);
  if (j.half != 0) {
    return Report(T(h)->WriteParamHalf(index, first, rows, Ptr<const uint16_t>(j.src), ld, j.transposed, j.half));
  }
  return Report(T(h)->WriteParam(index, first, rows, Ptr<const float>(j.src), ld, j.transposed));
}
void TransformerGetGradients(uintptr_t h, uintptr_t out) {
  const auto* t = T(h);
  if (t->Gradients() == nullptr) {
    std::fill(Ptr<float>(out), Ptr<float>(out) + t->ParamCount(), 0.0f);
    return;
  }
  std::copy(t->Gradients(), t->Gradients() + t->ParamCount(), Ptr<float>(out));
}
int TransformerCheckParams(uintptr_t h) { return Report(T(h)->CheckParams()); }
double TransformerCached(uintptr_t h) { return static_cast<double>(T(h)->Cached()); }

// Outputs of a model forward; 0 for those not wanted.
// layerInputs: optional [N, rows, E], every block's input (Transformer::LayerInputs).
struct ModelRunJs {
  double batch = 1, length = 0, keep = 0;
  uintptr_t tokens = 0, logits = 0, attention = 0, hidden = 0, layerInputs = 0;
  bool cached = false, lastOnly = false;
};
int TransformerRun(uintptr_t h, const ModelRunJs& j) {
  const Status s = !j.cached
      ? T(h)->Forward(static_cast<int64_t>(j.batch), static_cast<int64_t>(j.length),
                      Ptr<const int32_t>(j.tokens), Ptr<float>(j.logits), Ptr<float>(j.attention),
                      Ptr<float>(j.hidden))
      : T(h)->Extend(static_cast<int64_t>(j.keep), static_cast<int64_t>(j.length),
                     Ptr<const int32_t>(j.tokens), j.lastOnly, Ptr<float>(j.logits),
                     Ptr<float>(j.attention), Ptr<float>(j.hidden));
  if (s.ok() && j.layerInputs != 0) T(h)->LayerInputs(Ptr<float>(j.layerInputs));
  return Report(s);
}
int TransformerSetParams(uintptr_t h, uintptr_t data) {
  return Report(T(h)->SetParams(Ptr<const float>(data)));
}
int TransformerSetHeadEnabled(uintptr_t h, double layer, double head, bool enabled) {
  return Report(T(h)->SetHeadEnabled(static_cast<int64_t>(layer), static_cast<int64_t>(head), enabled));
}

struct AdamWJs {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weightDecay = 0.01, warmup = 0, clip = 1;
};

int TransformerConfigureOptimizer(uintptr_t h, const AdamWJs& j) {
  attnlab::AdamWConfig c;
  c.lr = static_cast<float>(j.lr);
  c.beta1 = static_cast<float>(j.beta1);
  c.beta2 = static_cast<float>(j.beta2);
  c.eps = static_cast<float>(j.eps);
  c.weight_decay = static_cast<float>(j.weightDecay);
  c.warmup = static_cast<int64_t>(j.warmup);
  c.clip = static_cast<float>(j.clip);
  return Report(T(h)->ConfigureOptimizer(c));
}
void TransformerResetOptimizer(uintptr_t h) { T(h)->ResetOptimizer(); }

struct StepJs {
  double batch = 1, length = 0;
  uintptr_t tokens = 0, targets = 0, lossMask = 0;
};
struct StepResultJs {
  int code = 0;
  double loss = 0, accuracy = 0, sequenceAccuracy = 0, gradNorm = 0, lr = 0, step = 0;
};

StepResultJs ToJs(const Status& s, const attnlab::StepResult& r) {
  StepResultJs j;
  j.code = Report(s);
  j.loss = r.loss;
  j.accuracy = r.accuracy;
  j.sequenceAccuracy = r.sequence_accuracy;
  j.gradNorm = r.grad_norm;
  j.lr = r.lr;
  j.step = static_cast<double>(r.step);
  return j;
}

StepResultJs TransformerStep(uintptr_t h, const StepJs& j) {
  attnlab::StepResult r;
  const Status s = T(h)->Step(static_cast<int64_t>(j.batch), static_cast<int64_t>(j.length),
                              Ptr<const int32_t>(j.tokens), Ptr<const int32_t>(j.targets),
                              Ptr<const float>(j.lossMask), &r);
  return ToJs(s, r);
}
StepResultJs TransformerEvaluate(uintptr_t h, const StepJs& j) {
  attnlab::StepResult r;
  const Status s = T(h)->Evaluate(static_cast<int64_t>(j.batch), static_cast<int64_t>(j.length),
                                  Ptr<const int32_t>(j.tokens), Ptr<const int32_t>(j.targets),
                                  Ptr<const float>(j.lossMask), &r);
  return ToJs(s, r);
}

int GenerateTask(int kind, double batch, double length, double vocab, double seed,
                 uintptr_t tokens, uintptr_t targets, uintptr_t mask) {
  return Report(attnlab::GenerateTask(static_cast<attnlab::TaskKind>(kind), static_cast<int64_t>(batch),
                                      static_cast<int64_t>(length), static_cast<int64_t>(vocab),
                                      static_cast<uint32_t>(seed), Ptr<int32_t>(tokens), Ptr<int32_t>(targets),
                                      Ptr<float>(mask)));
}

}  // namespace

EMSCRIPTEN_BINDINGS(attention_lab_train) {
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
  {
    value_object<TransformerConfigJs> bag("TransformerConfig");
#define ATTNLAB_JS_FIELD(type, member, js, def, doc) bag.field(#js, &TransformerConfigJs::js);
    ATTNLAB_TRANSFORMER_CONFIG_FIELDS(ATTNLAB_JS_FIELD)
#undef ATTNLAB_JS_FIELD
  }
  value_object<WriteParamJs>("WriteParamArgs")
      .field("index", &WriteParamJs::index)
      .field("first", &WriteParamJs::first)
      .field("rows", &WriteParamJs::rows)
      .field("ld", &WriteParamJs::ld)
      .field("src", &WriteParamJs::src)
      .field("transposed", &WriteParamJs::transposed)
      .field("half", &WriteParamJs::half);
  value_object<ModelRunJs>("ModelRunArgs")
      .field("batch", &ModelRunJs::batch)
      .field("length", &ModelRunJs::length)
      .field("keep", &ModelRunJs::keep)
      .field("tokens", &ModelRunJs::tokens)
      .field("logits", &ModelRunJs::logits)
      .field("attention", &ModelRunJs::attention)
      .field("hidden", &ModelRunJs::hidden)
      .field("layerInputs", &ModelRunJs::layerInputs)
      .field("cached", &ModelRunJs::cached)
      .field("lastOnly", &ModelRunJs::lastOnly);
  value_object<AdamWJs>("AdamWConfig")
      .field("lr", &AdamWJs::lr)
      .field("beta1", &AdamWJs::beta1)
      .field("beta2", &AdamWJs::beta2)
      .field("eps", &AdamWJs::eps)
      .field("weightDecay", &AdamWJs::weightDecay)
      .field("warmup", &AdamWJs::warmup)
      .field("clip", &AdamWJs::clip);
  value_object<StepJs>("TrainStepArgs")
      .field("batch", &StepJs::batch)
      .field("length", &StepJs::length)
      .field("tokens", &StepJs::tokens)
      .field("targets", &StepJs::targets)
      .field("lossMask", &StepJs::lossMask);
  value_object<StepResultJs>("TrainStepResult")
      .field("code", &StepResultJs::code)
      .field("loss", &StepResultJs::loss)
      .field("accuracy", &StepResultJs::accuracy)
      .field("sequenceAccuracy", &StepResultJs::sequenceAccuracy)
      .field("gradNorm", &StepResultJs::gradNorm)
      .field("lr", &StepResultJs::lr)
      .field("step", &StepResultJs::step);

  function("trainLastError", &TrainLastError);
  function("sdpaBackward", &SdpaBackward);
  function("mhaBackward", &MhaBackward);
  function("layerBackward", &LayerBackward);
  function("transformerCreate", &TransformerCreate);
  function("transformerConfigDefaults", &TransformerConfigDefaults);
  function("transformerDestroy", &TransformerDestroy);
  function("transformerParamCount", &TransformerParamCount);
  function("transformerHeldBytes", &TransformerHeldBytes);
  function("transformerHeadCopyBytes", &TransformerHeadCopyBytes);
  function("transformerParamInfo", &TransformerParamInfo);
  function("transformerGetParams", &TransformerGetParams);
  function("transformerGetGradients", &TransformerGetGradients);
  function("transformerSetParams", &TransformerSetParams);
  function("transformerSetHeadEnabled", &TransformerSetHeadEnabled);
  function("transformerCheckParams", &TransformerCheckParams);
  function("transformerWriteParam", &TransformerWriteParam);
  function("transformerCached", &TransformerCached);
  function("transformerRun", &TransformerRun);
  function("transformerConfigureOptimizer", &TransformerConfigureOptimizer);
  function("transformerResetOptimizer", &TransformerResetOptimizer);
  function("transformerStep", &TransformerStep);
  function("transformerEvaluate", &TransformerEvaluate);
  function("generateTask", &GenerateTask);
}

// Embind bindings of attnlab::Transformer (src/train/train.h): an opaque
// handle the JS wrapper (web/lib/train/transformer.js) frees with
// transformerDestroy; named structs (value_object) in, status codes out, the
// failure's message through trainLastError().
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>

#include "common.h"
#include "train/train.h"
#include "train_common.h"

namespace {

using attnlab::Status;
using attnlab_bind::Ptr;
using attnlab_bind::TrainReport;

// The bag of attnlab::TransformerConfig, expanded from its field list
// (ATTNLAB_TRANSFORMER_CONFIG_FIELDS): JS numbers arrive as doubles (int64_t
// would need BigInt), the enums as their ids, strings as strings.
template <typename T>
struct JsOf {
  using type = double;
};
template <>
struct JsOf<bool> {
  using type = bool;
};
template <>
struct JsOf<std::string> {
  using type = std::string;
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
    TrainReport(s);
    return 0;
  }
  return reinterpret_cast<uintptr_t>(t.release());
}

attnlab::Transformer* T(uintptr_t h) { return reinterpret_cast<attnlab::Transformer*>(h); }

void TransformerDestroy(uintptr_t h) { delete T(h); }
double TransformerParamCount(uintptr_t h) { return static_cast<double>(T(h)->ParamCount()); }
double TransformerHeldBytes(uintptr_t h) { return static_cast<double>(T(h)->HeldBytes()); }
double TransformerHeadCopyBytes(uintptr_t h) { return static_cast<double>(T(h)->HeadCopyBytes()); }
int TransformerParamQuantKind(uintptr_t h, double index) { return T(h)->ParamQuantKind(static_cast<int64_t>(index)); }
// The blocks a parameter is held in, copied to out (capacity bytes); their bytes, or 0.
double TransformerCopyParamBlocks(uintptr_t h, double index, uintptr_t out, double capacity) {
  return static_cast<double>(T(h)->CopyParamBlocks(static_cast<int64_t>(index), Ptr<uint8_t>(out), static_cast<int64_t>(capacity)));
}

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
    return TrainReport(T(h)->WriteParamHalf(index, first, rows, Ptr<const uint16_t>(j.src), ld, j.transposed, j.half));
  }
  return TrainReport(T(h)->WriteParam(index, first, rows, Ptr<const float>(j.src), ld, j.transposed));
}
// Rows of a checkpoint tensor as GGML blocks (GGUF Q8_0 / Q4_0 data; kind
// the ggml type id, 8 or 2): `bytes` bytes at src, whole rows of blocks.
struct WriteParamQuantJs {
  double index = 0, first = 0, rows = 0, bytes = 0;
  int kind = 0;
  uintptr_t src = 0;
};
int TransformerWriteParamQuant(uintptr_t h, const WriteParamQuantJs& j) {
  return TrainReport(T(h)->WriteParamQuant(static_cast<int64_t>(j.index), static_cast<int64_t>(j.first),
                                           static_cast<int64_t>(j.rows), j.kind, Ptr<const uint8_t>(j.src),
                                           static_cast<int64_t>(j.bytes)));
}
void TransformerGetGradients(uintptr_t h, uintptr_t out) {
  const auto* t = T(h);
  if (t->Gradients() == nullptr) {
    std::fill(Ptr<float>(out), Ptr<float>(out) + t->ParamCount(), 0.0f);
    return;
  }
  std::copy(t->Gradients(), t->Gradients() + t->ParamCount(), Ptr<float>(out));
}
int TransformerCheckParams(uintptr_t h) { return TrainReport(T(h)->CheckParams()); }
double TransformerCached(uintptr_t h) { return static_cast<double>(T(h)->Cached()); }

// Outputs of a model forward; 0 for those not wanted.
// layerInputs: optional [N, rows, E], every block's input (Transformer::LayerInputs);
// cross: optional N·[B, H, L, Le], the cross-attention weights (crossAttention).
struct ModelRunJs {
  double batch = 1, length = 0, keep = 0;
  uintptr_t tokens = 0, logits = 0, attention = 0, hidden = 0, layerInputs = 0, cross = 0;
  bool cached = false, lastOnly = false;
};
int TransformerRun(uintptr_t h, const ModelRunJs& j) {
  const Status s = !j.cached
      ? T(h)->Forward(static_cast<int64_t>(j.batch), static_cast<int64_t>(j.length),
                      Ptr<const int32_t>(j.tokens), Ptr<float>(j.logits), Ptr<float>(j.attention),
                      Ptr<float>(j.hidden), Ptr<float>(j.cross))
      : T(h)->Extend(static_cast<int64_t>(j.keep), static_cast<int64_t>(j.length),
                     Ptr<const int32_t>(j.tokens), j.lastOnly, Ptr<float>(j.logits),
                     Ptr<float>(j.attention), Ptr<float>(j.hidden), Ptr<float>(j.cross));
  if (s.ok() && j.layerInputs != 0) T(h)->LayerInputs(Ptr<float>(j.layerInputs));
  return TrainReport(s);
}

// The memory of a cross-attention decoder: [batch, length, E] (Transformer::SetMemory).
struct MemoryJs {
  double batch = 1, length = 0;
  uintptr_t memory = 0;
};
int TransformerSetMemory(uintptr_t h, const MemoryJs& j) {
  return TrainReport(T(h)->SetMemory(static_cast<int64_t>(j.batch), static_cast<int64_t>(j.length),
                                     Ptr<const float>(j.memory)));
}
double TransformerMemoryLength(uintptr_t h) { return static_cast<double>(T(h)->MemoryLength()); }
int TransformerSetParams(uintptr_t h, uintptr_t data) {
  return TrainReport(T(h)->SetParams(Ptr<const float>(data)));
}
int TransformerSetHeadEnabled(uintptr_t h, double layer, double head, bool enabled) {
  return TrainReport(T(h)->SetHeadEnabled(static_cast<int64_t>(layer), static_cast<int64_t>(head), enabled));
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
  return TrainReport(T(h)->ConfigureOptimizer(c));
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
  j.code = TrainReport(s);
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

}  // namespace

EMSCRIPTEN_BINDINGS(attention_lab_transformer) {
  using emscripten::function;
  using emscripten::value_object;
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
  value_object<WriteParamQuantJs>("WriteParamQuantArgs")
      .field("index", &WriteParamQuantJs::index)
      .field("first", &WriteParamQuantJs::first)
      .field("rows", &WriteParamQuantJs::rows)
      .field("kind", &WriteParamQuantJs::kind)
      .field("src", &WriteParamQuantJs::src)
      .field("bytes", &WriteParamQuantJs::bytes);
  value_object<ModelRunJs>("ModelRunArgs")
      .field("batch", &ModelRunJs::batch)
      .field("length", &ModelRunJs::length)
      .field("keep", &ModelRunJs::keep)
      .field("tokens", &ModelRunJs::tokens)
      .field("logits", &ModelRunJs::logits)
      .field("attention", &ModelRunJs::attention)
      .field("hidden", &ModelRunJs::hidden)
      .field("layerInputs", &ModelRunJs::layerInputs)
      .field("cross", &ModelRunJs::cross)
      .field("cached", &ModelRunJs::cached)
      .field("lastOnly", &ModelRunJs::lastOnly);
  value_object<MemoryJs>("MemoryArgs")
      .field("batch", &MemoryJs::batch)
      .field("length", &MemoryJs::length)
      .field("memory", &MemoryJs::memory);
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

  function("transformerCreate", &TransformerCreate);
  function("transformerConfigDefaults", &TransformerConfigDefaults);
  function("transformerDestroy", &TransformerDestroy);
  function("transformerParamCount", &TransformerParamCount);
  function("transformerHeldBytes", &TransformerHeldBytes);
  function("transformerHeadCopyBytes", &TransformerHeadCopyBytes);
  function("transformerParamQuantKind", &TransformerParamQuantKind);
  function("transformerCopyParamBlocks", &TransformerCopyParamBlocks);
  function("transformerParamInfo", &TransformerParamInfo);
  function("transformerGetParams", &TransformerGetParams);
  function("transformerGetGradients", &TransformerGetGradients);
  function("transformerSetParams", &TransformerSetParams);
  function("transformerSetHeadEnabled", &TransformerSetHeadEnabled);
  function("transformerCheckParams", &TransformerCheckParams);
  function("transformerWriteParam", &TransformerWriteParam);
  function("transformerWriteParamQuant", &TransformerWriteParamQuant);
  function("transformerCached", &TransformerCached);
  function("transformerRun", &TransformerRun);
  function("transformerSetMemory", &TransformerSetMemory);
  function("transformerMemoryLength", &TransformerMemoryLength);
  function("transformerConfigureOptimizer", &TransformerConfigureOptimizer);
  function("transformerResetOptimizer", &TransformerResetOptimizer);
  function("transformerStep", &TransformerStep);
  function("transformerEvaluate", &TransformerEvaluate);
}

// Embind bindings of the block graph's interpretability calls
// (src/train/transformer_interp.cpp): named structs in, status codes out
// (the message through trainLastError()), outputs written into caller
// buffers. The JS wrapper is web/lib/model/interp.js.
#include <emscripten/bind.h>

#include <cstdint>

#include "common.h"
#include "train/train.h"
#include "train_common.h"

namespace {

using attnlab_bind::Ptr;
using attnlab_bind::TrainReport;

attnlab::Transformer* T(uintptr_t h) { return reinterpret_cast<attnlab::Transformer*>(h); }

// triples: count (layer, head, mode) int32 triples (mode 1 zero, 2 mean).
struct AblationsJs {
  double count = 0;
  uintptr_t triples = 0;
};
int TransformerSetAblations(uintptr_t h, const AblationsJs& j) {
  return TrainReport(T(h)->SetAblations(static_cast<int64_t>(j.count), Ptr<const int32_t>(j.triples)));
}

// topIds int32 / topProbs float [N + 1, L, k]; logits optional [N + 1, L, V].
struct LogitLensJs {
  double length = 0, k = 5;
  uintptr_t tokens = 0, topIds = 0, topProbs = 0, logits = 0;
};
int TransformerLogitLens(uintptr_t h, const LogitLensJs& j) {
  return TrainReport(T(h)->LogitLens(static_cast<int64_t>(j.length), Ptr<const int32_t>(j.tokens),
                                     static_cast<int64_t>(j.k), Ptr<int32_t>(j.topIds),
                                     Ptr<float>(j.topProbs), Ptr<float>(j.logits)));
}

// out float [N·H + 2N + 3] (Transformer::Attribute).
struct AttributeJs {
  double length = 0, position = 0, target = 0, baseline = 0;
  uintptr_t tokens = 0, out = 0;
};
int TransformerAttribute(uintptr_t h, const AttributeJs& j) {
  return TrainReport(T(h)->Attribute(static_cast<int64_t>(j.length), Ptr<const int32_t>(j.tokens),
                                     static_cast<int64_t>(j.position), static_cast<int32_t>(j.target),
                                     static_cast<int32_t>(j.baseline), Ptr<float>(j.out)));
}

// over 0 heads (out [N, H]), 1 residual (out [N, L]); ld: float64 [2].
struct PatchJs {
  double length = 0, target = 0, baseline = 0, over = 0;
  uintptr_t clean = 0, corrupted = 0, out = 0, ld = 0;
};
int TransformerPatch(uintptr_t h, const PatchJs& j) {
  return TrainReport(T(h)->Patch(static_cast<int64_t>(j.length), Ptr<const int32_t>(j.clean),
                                 Ptr<const int32_t>(j.corrupted), static_cast<int32_t>(j.target),
                                 static_cast<int32_t>(j.baseline), static_cast<int32_t>(j.over),
                                 Ptr<float>(j.out), Ptr<double>(j.ld)));
}

}  // namespace

EMSCRIPTEN_BINDINGS(attention_lab_interp) {
  using emscripten::function;
  using emscripten::value_object;
  value_object<AblationsJs>("AblationsArgs")
      .field("count", &AblationsJs::count)
      .field("triples", &AblationsJs::triples);
  value_object<LogitLensJs>("LogitLensArgs")
      .field("length", &LogitLensJs::length)
      .field("k", &LogitLensJs::k)
      .field("tokens", &LogitLensJs::tokens)
      .field("topIds", &LogitLensJs::topIds)
      .field("topProbs", &LogitLensJs::topProbs)
      .field("logits", &LogitLensJs::logits);
  value_object<AttributeJs>("AttributeArgs")
      .field("length", &AttributeJs::length)
      .field("position", &AttributeJs::position)
      .field("target", &AttributeJs::target)
      .field("baseline", &AttributeJs::baseline)
      .field("tokens", &AttributeJs::tokens)
      .field("out", &AttributeJs::out);
  value_object<PatchJs>("PatchArgs")
      .field("length", &PatchJs::length)
      .field("target", &PatchJs::target)
      .field("baseline", &PatchJs::baseline)
      .field("over", &PatchJs::over)
      .field("clean", &PatchJs::clean)
      .field("corrupted", &PatchJs::corrupted)
      .field("out", &PatchJs::out)
      .field("ld", &PatchJs::ld);
  function("transformerSetAblations", &TransformerSetAblations);
  function("transformerLogitLens", &TransformerLogitLens);
  function("transformerAttribute", &TransformerAttribute);
  function("transformerPatch", &TransformerPatch);
}

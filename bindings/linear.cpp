// Embind binding of Linear: one value_object whose fields are the op's bag
// in web/lib/ops.js (output `y` included), status code (message: lastError()).
#include <emscripten/bind.h>

#include <cstdint>

#include "common.h"

namespace attnlab_bind {
namespace {

struct LinearCall {
  double rows = 0, in = 0, out = 0;
  uintptr_t x = 0, weight = 0, bias = 0;
  int layout = 0;
  uintptr_t y = 0;
};

int Linear(const LinearCall& c) {
  attnlab::LinearArgs a;
  a.rows = static_cast<int64_t>(c.rows);
  a.in = static_cast<int64_t>(c.in);
  a.out = static_cast<int64_t>(c.out);
  a.x = Ptr<const float>(c.x);
  a.weight = Ptr<const float>(c.weight);
  a.bias = Ptr<const float>(c.bias);
  a.layout = static_cast<attnlab::WeightLayout>(c.layout);
  a.y = Ptr<float>(c.y);
  return Report(attnlab::Linear(a));
}

}  // namespace
}  // namespace attnlab_bind

EMSCRIPTEN_BINDINGS(attention_lab_linear) {
  using attnlab_bind::LinearCall;
  emscripten::value_object<LinearCall>("LinearCall")
      .field("rows", &LinearCall::rows)
      .field("in", &LinearCall::in)
      .field("out", &LinearCall::out)
      .field("x", &LinearCall::x)
      .field("weight", &LinearCall::weight)
      .field("bias", &LinearCall::bias)
      .field("layout", &LinearCall::layout)
      .field("y", &LinearCall::y);
  emscripten::function("linear", &attnlab_bind::Linear);
}

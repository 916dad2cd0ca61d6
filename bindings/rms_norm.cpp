// Embind binding of RMSNorm: one value_object whose fields are the op's bag
// in web/lib/ops.js (output `y` included; the wasm backend's generic `op`
// fills the pointers by name), status code (message: lastError()).
#include <emscripten/bind.h>

#include <cstdint>

#include "common.h"

namespace attnlab_bind {
namespace {

struct RmsNormCall {
  double rows = 0, dim = 0;
  uintptr_t x = 0, weight = 0;
  double eps = 1e-5;
  uintptr_t y = 0;
};

int RmsNorm(const RmsNormCall& c) {
  attnlab::RmsNormArgs a;
  a.rows = static_cast<int64_t>(c.rows);
  a.dim = static_cast<int64_t>(c.dim);
  a.x = Ptr<const float>(c.x);
  a.weight = Ptr<const float>(c.weight);
  a.eps = c.eps;
  a.y = Ptr<float>(c.y);
  return Report(attnlab::RmsNorm(a));
}

}  // namespace
}  // namespace attnlab_bind

EMSCRIPTEN_BINDINGS(attention_lab_rms_norm) {
  using attnlab_bind::RmsNormCall;
  emscripten::value_object<RmsNormCall>("RmsNormCall")
      .field("rows", &RmsNormCall::rows)
      .field("dim", &RmsNormCall::dim)
      .field("x", &RmsNormCall::x)
      .field("weight", &RmsNormCall::weight)
      .field("eps", &RmsNormCall::eps)
      .field("y", &RmsNormCall::y);
  emscripten::function("rmsNorm", &attnlab_bind::RmsNorm);
}

// Embind bindings of the rotary embedding and ALiBi helpers: one named
// argument struct per call (value_object), pointers into wasm memory that the
// JS wrapper allocated, status codes (message: lastError()).
#include <emscripten/bind.h>

#include <cstdint>

#include "common.h"

namespace attnlab_bind {
namespace {

// Mirrors attnlab::RotaryArgs; sizes as doubles (JS numbers).
struct RotaryCall {
  double batch = 1, heads = 1, seqLen = 0, headDim = 0;
  bool seqMajor = false;
  double rotaryDim = 0;
  bool interleaved = false;
  uintptr_t x = 0, out = 0, positionIds = 0, cos = 0, sin = 0;
  double maxPosition = 0, base = 10000;
};

int RotaryEmbedding(const RotaryCall& c) {
  attnlab::RotaryArgs a;
  a.batch = static_cast<int64_t>(c.batch);
  a.heads = static_cast<int64_t>(c.heads);
  a.seq_len = static_cast<int64_t>(c.seqLen);
  a.head_dim = static_cast<int64_t>(c.headDim);
  a.seq_major = c.seqMajor;
  a.rotary_dim = static_cast<int64_t>(c.rotaryDim);
  a.interleaved = c.interleaved;
  a.x = Ptr<const float>(c.x);
  a.out = Ptr<float>(c.out);
  a.position_ids = Ptr<const int32_t>(c.positionIds);
  a.cos = Ptr<const float>(c.cos);
  a.sin = Ptr<const float>(c.sin);
  a.max_position = static_cast<int64_t>(c.maxPosition);
  a.base = c.base;
  return Report(attnlab::RotaryEmbedding(a));
}

int RotaryCache(double max_position, double rotary_dim, double base,
                uintptr_t cos, uintptr_t sin) {
  return Report(attnlab::RotaryCache(static_cast<int64_t>(max_position),
                                           static_cast<int64_t>(rotary_dim), base,
                                           Ptr<float>(cos), Ptr<float>(sin)));
}

int AlibiSlopes(double heads, uintptr_t out) {
  return Report(attnlab::AlibiSlopes(static_cast<int64_t>(heads), Ptr<float>(out)));
}

}  // namespace
}  // namespace attnlab_bind

EMSCRIPTEN_BINDINGS(attention_lab_rotary) {
  using attnlab_bind::RotaryCall;
  emscripten::value_object<RotaryCall>("RotaryCall")
      .field("batch", &RotaryCall::batch)
      .field("heads", &RotaryCall::heads)
      .field("seqLen", &RotaryCall::seqLen)
      .field("headDim", &RotaryCall::headDim)
      .field("seqMajor", &RotaryCall::seqMajor)
      .field("rotaryDim", &RotaryCall::rotaryDim)
      .field("interleaved", &RotaryCall::interleaved)
      .field("x", &RotaryCall::x)
      .field("out", &RotaryCall::out)
      .field("positionIds", &RotaryCall::positionIds)
      .field("cos", &RotaryCall::cos)
      .field("sin", &RotaryCall::sin)
      .field("maxPosition", &RotaryCall::maxPosition)
      .field("base", &RotaryCall::base);
  emscripten::function("rotaryEmbedding", &attnlab_bind::RotaryEmbedding);
  emscripten::function("rotaryCache", &attnlab_bind::RotaryCache);
  emscripten::function("alibiSlopes", &attnlab_bind::AlibiSlopes);
}

// Embind bindings of the rotary embedding and ALiBi helpers: one named
// argument struct per call (value_object, fields named as the op's bag in
// web/lib/ops.js, output pointers included: the wasm backend's generic `op`
// fills them by name), pointers into wasm memory that the JS wrapper
// allocated, status codes (message: lastError()).
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

// The cos/sin tables [maxPosition, rotaryDim/2] (outputs cos, sin).
struct RotaryCacheCall {
  double maxPosition = 0, rotaryDim = 0, base = 10000;
  uintptr_t cos = 0, sin = 0;
};

int RotaryCache(const RotaryCacheCall& c) {
  return Report(attnlab::RotaryCache(static_cast<int64_t>(c.maxPosition),
                                     static_cast<int64_t>(c.rotaryDim), c.base,
                                     Ptr<float>(c.cos), Ptr<float>(c.sin)));
}

// The ALiBi slopes [heads] (output out).
struct AlibiSlopesCall {
  double heads = 0;
  uintptr_t out = 0;
};

int AlibiSlopes(const AlibiSlopesCall& c) {
  return Report(attnlab::AlibiSlopes(static_cast<int64_t>(c.heads), Ptr<float>(c.out)));
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
  using attnlab_bind::RotaryCacheCall;
  emscripten::value_object<RotaryCacheCall>("RotaryCacheCall")
      .field("maxPosition", &RotaryCacheCall::maxPosition)
      .field("rotaryDim", &RotaryCacheCall::rotaryDim)
      .field("base", &RotaryCacheCall::base)
      .field("cos", &RotaryCacheCall::cos)
      .field("sin", &RotaryCacheCall::sin);
  using attnlab_bind::AlibiSlopesCall;
  emscripten::value_object<AlibiSlopesCall>("AlibiSlopesCall")
      .field("heads", &AlibiSlopesCall::heads)
      .field("out", &AlibiSlopesCall::out);
  emscripten::function("rotaryEmbedding", &attnlab_bind::RotaryEmbedding);
  emscripten::function("rotaryCache", &attnlab_bind::RotaryCache);
  emscripten::function("alibiSlopes", &attnlab_bind::AlibiSlopes);
}

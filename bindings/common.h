// Shared by the Embind binding files (bindings/*.cpp, one per area).
//
// Bindings are thin by design: every function takes a named structure
// (Embind value_object: a plain JS object whose fields are sizes, flags and
// pointers into wasm memory that the JS wrapper allocated) or at most 8
// plain arguments, calls the C++ core and returns a status code; the message
// of the last failure is read with lastError(). No C++ exception or JS
// exception crosses this layer, so nothing is left allocated when a call
// fails. Objects are opaque handles that the JS wrapper owns and frees with
// *Destroy.
//
// Adding a binding file: create bindings/<area>.cpp with its own
// EMSCRIPTEN_BINDINGS(<area>) block (CMake globs bindings/*.cpp); structures
// used by several areas (JsMask) are registered once, in common.cpp.
#pragma once

#include <array>
#include <cstdint>

#include "attention_lab.h"

namespace attnlab_bind {

// Records s's message for lastError(); returns 0 or the status code.
int Report(const attnlab::Status& s);

template <class T>
T* Ptr(uintptr_t p) {
  return reinterpret_cast<T*>(p);
}

inline int64_t I64(double v) { return static_cast<int64_t>(v); }

// The mask spec (lib/mask.js normalised form): value_object "MaskArgs".
struct JsMask {
  bool causal = false;
  uintptr_t lengths = 0;           // int32 [B] or 0
  int kind = 0;                    // attnlab::MaskKind
  uintptr_t data = 0;              // float [mB, mH, mLq, mLk] or 0
  std::array<double, 4> shape{};   // [mB, mH, mLq, mLk]
  // Attention variants (docs/attention-variants.md); align: 0 top-left,
  // 1 bottom-right; window sides -1 = unbounded.
  int causalAlign = 0;
  double causalOffset = 0;
  bool window = false;
  double windowLeft = -1, windowRight = -1;
  int windowAlign = 0;
  double windowOffset = 0;
  bool alibi = false;
  uintptr_t alibiSlopes = 0;       // float [H] or 0 (the paper's slopes)
  double fill = attnlab::kMaskFill;
};

attnlab::MaskSpec ToMask(const JsMask& m);

// The trace buffers (forward(…, { trace: 'values' })): the field `trace` of
// the forward structures is 0, or the address of an attnlab::ForwardTrace
// (11 pointers, in its field order) that the wrapper wrote into wasm memory:
// one number per call instead of a nested structure.
inline const attnlab::ForwardTrace* ToTrace(uintptr_t p) {
  static_assert(sizeof(attnlab::ForwardTrace) == 11 * sizeof(float*), "ForwardTrace: 11 pointers");
  return Ptr<const attnlab::ForwardTrace>(p);
}

}  // namespace attnlab_bind

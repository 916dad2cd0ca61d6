// Bindings shared by every area: lastError, kernelArch, heapBytesInUse,
// heapMaxBytes and
// the mask spec structure.
#include "common.h"

#include <emscripten/bind.h>
#include <emscripten/heap.h>
#include <malloc.h>

#include <cstdint>
#include <string>

#include "kernels/kernels.h"

namespace attnlab_bind {
namespace {

std::string g_last_error;

std::string LastError() { return g_last_error; }

// Bytes currently allocated from the wasm heap by malloc (dlmalloc's
// mallinfo().uordblks): the leak tests compare it before and after. The field
// is an int in musl's struct mallinfo; read as 32 unsigned bits it stays right
// above 2 GiB (the heap is below 4 GiB).
double HeapBytesInUse() { return static_cast<double>(static_cast<uint32_t>(mallinfo().uordblks)); }

// The most the heap may grow to: the build's MAXIMUM_MEMORY, which
// Emscripten caps one 64 KiB page short of 4 GiB (an engine may grant less).
double HeapMaxBytes() { return static_cast<double>(emscripten_get_heap_max()); }

std::string KernelArchName() { return attnlab::KernelArch(); }

}  // namespace

int Report(const attnlab::Status& s) {
  if (s.ok()) return 0;
  g_last_error = s.message;
  return static_cast<int>(s.code);
}

attnlab::MaskSpec ToMask(const JsMask& j) {
  attnlab::MaskSpec m;
  m.causal = j.causal;
  m.lengths = Ptr<const int32_t>(j.lengths);
  m.kind = static_cast<attnlab::MaskKind>(j.kind);
  m.data = Ptr<const float>(j.data);
  for (int i = 0; i < 4; ++i) m.shape[i] = I64(j.shape[static_cast<size_t>(i)]);
  m.causal_align = static_cast<attnlab::Align>(j.causalAlign);
  m.causal_offset = I64(j.causalOffset);
  m.window = j.window;
  m.window_left = I64(j.windowLeft);
  m.window_right = I64(j.windowRight);
  m.window_align = static_cast<attnlab::Align>(j.windowAlign);
  m.window_offset = I64(j.windowOffset);
  m.alibi = j.alibi;
  m.alibi_slopes = Ptr<const float>(j.alibiSlopes);
  m.fill = static_cast<float>(j.fill);
  return m;
}

}  // namespace attnlab_bind

EMSCRIPTEN_BINDINGS(attention_lab_common) {
  using namespace emscripten;
  using attnlab_bind::JsMask;
  function("lastError", &attnlab_bind::LastError);
  function("kernelArch", &attnlab_bind::KernelArchName);
  function("heapBytesInUse", &attnlab_bind::HeapBytesInUse);
  function("heapMaxBytes", &attnlab_bind::HeapMaxBytes);
  value_array<std::array<double, 4>>("MaskShape")
      .element(emscripten::index<0>())
      .element(emscripten::index<1>())
      .element(emscripten::index<2>())
      .element(emscripten::index<3>());
  value_object<JsMask>("MaskArgs")
      .field("causal", &JsMask::causal)
      .field("lengths", &JsMask::lengths)
      .field("kind", &JsMask::kind)
      .field("data", &JsMask::data)
      .field("shape", &JsMask::shape)
      .field("causalAlign", &JsMask::causalAlign)
      .field("causalOffset", &JsMask::causalOffset)
      .field("window", &JsMask::window)
      .field("windowLeft", &JsMask::windowLeft)
      .field("windowRight", &JsMask::windowRight)
      .field("windowAlign", &JsMask::windowAlign)
      .field("windowOffset", &JsMask::windowOffset)
      .field("alibi", &JsMask::alibi)
      .field("alibiSlopes", &JsMask::alibiSlopes)
      .field("fill", &JsMask::fill);
}

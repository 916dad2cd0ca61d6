// Embind binding of the synthetic training tasks (attnlab::GenerateTask):
// tokens, targets and loss mask written into wasm memory the JS wrapper
// allocated; the failure's message through trainLastError().
#include <emscripten/bind.h>

#include <cstdint>

#include "common.h"
#include "train/train.h"
#include "train_common.h"

namespace {

using attnlab::Status;
using attnlab_bind::Ptr;
using attnlab_bind::TrainReport;

int GenerateTask(int kind, double batch, double length, double vocab, double seed,
                 uintptr_t tokens, uintptr_t targets, uintptr_t mask) {
  return TrainReport(attnlab::GenerateTask(static_cast<attnlab::TaskKind>(kind), static_cast<int64_t>(batch),
                                      static_cast<int64_t>(length), static_cast<int64_t>(vocab),
                                      static_cast<uint32_t>(seed), Ptr<int32_t>(tokens), Ptr<int32_t>(targets),
                                      Ptr<float>(mask)));
}

}  // namespace

EMSCRIPTEN_BINDINGS(attention_lab_train_tasks) {
  using emscripten::function;
  function("generateTask", &GenerateTask);
}

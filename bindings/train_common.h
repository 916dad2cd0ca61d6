// Shared by the training binding files (train_backward.cpp, transformer.cpp,
// tasks.cpp): their failures go to one message, read by trainLastError(),
// apart from the inference bindings' lastError().
#pragma once

#include <string>

#include "attention_lab.h"

namespace attnlab_bind {

std::string& TrainError();  // defined in train_backward.cpp

// Records s's message for trainLastError(); returns 0 or the status code.
inline int TrainReport(const attnlab::Status& s) {
  if (s.ok()) return 0;
  TrainError() = s.message;
  return static_cast<int>(s.code);
}

}  // namespace attnlab_bind

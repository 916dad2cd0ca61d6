// Threads the kernels use (src/thread_pool.h). The threaded build needs a
// pthread pool of n - 1 workers before setThreadCount(n): web/lib/loader.js
// starts it with the module (Module.attnlabPoolSize).
#include <emscripten/bind.h>

#include "common.h"
#include "thread_pool.h"

namespace {

// 0 on success, else a status code (message in lastError()).
int SetThreadCount(double n) {
  return attnlab_bind::Report(attnlab::SetThreadCount(n >= 0 && n <= 1024 ? static_cast<int>(n) : -1));
}
int ThreadCount() { return attnlab::ThreadCount(); }
// Finishes what mhaForward({ startOutputOnly: true }) left to the workers.
void JoinTasks() { attnlab::JoinTasks(); }

}  // namespace

EMSCRIPTEN_BINDINGS(threads) {
  emscripten::function("setThreadCount", &SetThreadCount);
  emscripten::function("threadCount", &ThreadCount);
  emscripten::function("joinTasks", &JoinTasks);
}

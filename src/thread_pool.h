// A small, persistent pool of worker threads for the kernels.
//
// The kernels split their work into a fixed list of tasks whose boundaries
// depend only on the problem (never on the thread count or on timing); each
// task writes its own outputs, in the same order as a single thread would.
// Results are therefore bit-identical for any thread count. Threads only pick
// which task runs where (dynamic scheduling by an atomic counter).
//
// The calling thread takes part as worker 0; SetThreadCount(n) keeps n - 1
// workers waiting on a condition variable. In wasm the workers are
// Emscripten pthreads: the JS side must start the module with a pthread pool
// of at least n - 1 workers (PTHREAD_POOL_SIZE) before asking for n threads,
// because a browser's main thread cannot wait for a Worker to start.
// Calls from inside a task (e.g. a GEMM inside an attention task) run inline.
#ifndef ATTNLAB_THREAD_POOL_H_
#define ATTNLAB_THREAD_POOL_H_

#include <cstdint>

#include "attention_lab.h"

namespace attnlab {

constexpr int kMaxThreads = 16;

// Sets the number of threads the kernels use: 1 = the calling thread only.
// Joins the current workers and starts n - 1 new ones. n in [1, kMaxThreads].
// Not to be called while another thread runs a kernel.
Status SetThreadCount(int n);
int ThreadCount();

// Finishes the batch that a call made under DetachNextBatch left running on
// the workers (see below): runs its remaining tasks on the calling thread and
// returns when all have finished. A no-op when nothing was left running.
void JoinTasks();

namespace internal {

using TaskFn = void (*)(void* ctx, int64_t task, int worker);

// Runs fn(ctx, t, worker) for every t in [0, tasks) and returns when all have
// finished. `worker` is in [0, ThreadCount()) and is the same for no two tasks
// running at once (per-worker scratch). Runs inline on the calling thread
// when there is one task, one thread, or when called from inside a task.
void RunTasks(int64_t tasks, TaskFn fn, void* ctx);

// While one lives on the calling thread, the next batch that would run on the
// workers is only started: RunTasks-style kernels that support it (the SIMD
// GEMM) return as soon as their tasks are announced, and the caller must call
// JoinTasks() before it reads that kernel's output or frees its inputs. The
// JS wrapper uses it for an MHA's output projection, to allocate the result's
// JS array while the workers compute it (docs/threads.md).
class DetachNextBatch {
 public:
  explicit DetachNextBatch(bool on);
  ~DetachNextBatch();
  DetachNextBatch(const DetachNextBatch&) = delete;
  DetachNextBatch& operator=(const DetachNextBatch&) = delete;
};

// For a kernel about to start a parallel batch: true (once) when a
// DetachNextBatch is alive on this thread and the batch would reach the
// workers; the kernel then copies its task context somewhere that outlives
// the call and uses StartTasks. Joins this thread's previous started batch.
bool TakeDetach();

// Announces fn over [0, tasks) to the workers and returns; JoinTasks()
// finishes it. ctx must stay valid until then.
void StartTasks(int64_t tasks, TaskFn fn, void* ctx);

// The threads a call of `work` units (multiply-adds) should use: 1 below
// `min_work`, inside a task, or with a one-thread pool; else ThreadCount().
int ThreadsFor(int64_t work, int64_t min_work);

// The TaskFn that calls the callable F at ctx: f(int64_t task, int worker).
template <class F>
void CallTask(void* ctx, int64_t t, int w) {
  (*static_cast<F*>(ctx))(t, w);
}

// RunTasks over a callable f(int64_t task, int worker).
template <class F>
void ParallelFor(int64_t tasks, F& f) {
  RunTasks(tasks, &CallTask<F>, &f);
}

// StartTasks over a callable; f must outlive JoinTasks().
template <class F>
void StartParallelFor(int64_t tasks, F& f) {
  StartTasks(tasks, &CallTask<F>, &f);
}

}  // namespace internal
}  // namespace attnlab

#endif  // ATTNLAB_THREAD_POOL_H_

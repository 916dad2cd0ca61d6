// The worker pool behind thread_pool.h. One generation counter announces a
// new batch of tasks; workers take task indices from an atomic ticket tagged
// with the batch's generation and count finished tasks, so the caller never
// waits for a worker that woke too late to get one. Natively these are std::threads; in wasm,
// Emscripten pthreads (Web Workers sharing the module's memory).
#include "thread_pool.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

namespace attnlab {
namespace {

// -1 outside a task; the worker index inside one (nested calls run inline).
thread_local int tls_worker = -1;

// Checks of an atomic before a thread sleeps on a condition variable: the
// kernels of one forward (projections, attention, output projection) follow
// each other within microseconds, and waking a sleeping Web Worker costs far
// more than that (tens of microseconds). About 50-100 µs of polling.
constexpr int kSpinChecks = 1 << 15;

class Pool {
 public:
  ~Pool() { Stop(); }

  int size() const { return static_cast<int>(threads_.size()) + 1; }

  void Resize(int n) {
    Join();
    if (n == size()) return;
    Stop();
    threads_.reserve(static_cast<size_t>(n - 1));
    // A worker waits for the generation after the current one: read here, not
    // in the new thread, which may start after the next Run has begun.
    const uint64_t current = generation_;
    for (int i = 1; i < n; ++i) {
      threads_.emplace_back([this, i, current] { WorkerLoop(i, current); });
    }
  }

  void Run(int64_t tasks, internal::TaskFn fn, void* ctx) {
    Join();  // this thread's started batch first
    std::lock_guard<std::mutex> run_lock(run_mu_);  // one batch at a time
    const uint64_t gen = Announce(tasks, fn, ctx);
    Finish(gen, fn, ctx, tasks);
  }

  // Announces a batch and returns at once: the workers take its tasks while
  // the caller does something else; Join() runs what is left on the calling
  // thread and waits for the rest. One started batch per calling thread;
  // other batches wait for it (run_mu_ stays locked until Join).
  void Start(int64_t tasks, internal::TaskFn fn, void* ctx) {
    Join();
    run_mu_.lock();
    tls_started = {Announce(tasks, fn, ctx), fn, ctx, tasks, true};
  }

  void Join() {
    if (!tls_started.active) return;
    const Started s = tls_started;
    tls_started.active = false;
    Finish(s.gen, s.fn, s.ctx, s.tasks);
    run_mu_.unlock();
  }

 private:
  struct Started {
    uint64_t gen = 0;
    internal::TaskFn fn = nullptr;
    void* ctx = nullptr;
    int64_t tasks = 0;
    bool active = false;
  };
  static thread_local Started tls_started;

  uint64_t Announce(int64_t tasks, internal::TaskFn fn, void* ctx) {
    uint64_t gen = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = fn;
      ctx_ = ctx;
      tasks_ = tasks;
      gen = ++generation_;
      announced_.store(gen, std::memory_order_release);
      done_.store(0, std::memory_order_relaxed);
      ticket_.store(gen << 32, std::memory_order_release);
    }
    work_cv_.notify_all();
    return gen;
  }

  // Takes the batch's remaining tasks on the calling thread, then waits until
  // every task has finished; a worker that wakes after that finds the ticket
  // of a newer batch (or none left) and touches nothing.
  void Finish(uint64_t gen, internal::TaskFn fn, void* ctx, int64_t tasks) {
    Drain(0, gen, fn, ctx, tasks);
    for (int i = 0; i < kSpinChecks; ++i) {
      if (done_.load(std::memory_order_acquire) == tasks) return;
    }
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return done_.load(std::memory_order_acquire) == tasks; });
  }

  // Takes tasks of batch `gen` until none is left. The ticket holds the
  // batch's generation (high 32 bits) and its next task (low 32 bits).
  void Drain(int worker, uint64_t gen, internal::TaskFn fn, void* ctx, int64_t tasks) {
    tls_worker = worker;
    uint64_t cur = ticket_.load(std::memory_order_acquire);
    for (;;) {
      if ((cur >> 32) != (gen & 0xffffffffu) ||
          static_cast<int64_t>(cur & 0xffffffffu) >= tasks) {
        break;
      }
      if (!ticket_.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel)) continue;
      fn(ctx, static_cast<int64_t>(cur & 0xffffffffu), worker);
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == tasks) {
        std::lock_guard<std::mutex> lock(mu_);
        done_cv_.notify_one();
      }
      cur = ticket_.load(std::memory_order_acquire);
    }
    tls_worker = -1;
  }

  void WorkerLoop(int index, uint64_t seen) {
    for (;;) {
      internal::TaskFn fn = nullptr;
      void* ctx = nullptr;
      int64_t tasks = 0;
      for (int i = 0; i < kSpinChecks; ++i) {
        if (announced_.load(std::memory_order_acquire) != seen) break;
      }
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        fn = fn_;
        ctx = ctx_;
        tasks = tasks_;
      }
      Drain(index, seen, fn, ctx, tasks);
    }
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      announced_.store(~uint64_t{0}, std::memory_order_release);  // ends polling
    }
    work_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
    announced_.store(generation_, std::memory_order_release);
  }

  std::vector<std::thread> threads_;
  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  uint64_t generation_ = 0;  // guarded by mu_
  std::atomic<uint64_t> announced_{0};  // generation_, for polling without mu_
  bool stop_ = false;
  internal::TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t tasks_ = 0;
  std::atomic<uint64_t> ticket_{0};
  std::atomic<int64_t> done_{0};
};

thread_local Pool::Started Pool::tls_started;

// Set by DetachNextBatch on the calling thread.
thread_local bool tls_detach_next = false;

Pool& ThePool() {
  static Pool* pool = new Pool;  // never destroyed: no joins at exit
  return *pool;
}

}  // namespace

Status SetThreadCount(int n) {
  if (n < 1 || n > kMaxThreads) {
    std::ostringstream os;
    os << "threads must be an integer in [1, " << kMaxThreads << "], got " << n;
    return Status::Invalid(os.str());
  }
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
  if (n > 1) {
    return Status::Invalid("threads: this wasm build is single-threaded; only 1 is allowed here (init({ threads }) loads the threaded build)");
  }
#endif
  ThePool().Resize(n);
  return Status::Ok();
}

int ThreadCount() { return ThePool().size(); }

void JoinTasks() { ThePool().Join(); }

namespace internal {

void RunTasks(int64_t tasks, TaskFn fn, void* ctx) {
  if (tasks <= 0) return;
  Pool& pool = ThePool();
  if (tls_worker < 0) pool.Join();
  if (tasks == 1 || pool.size() == 1 || tls_worker >= 0) {
    const int worker = tls_worker >= 0 ? tls_worker : 0;
    for (int64_t t = 0; t < tasks; ++t) fn(ctx, t, worker);
    return;
  }
  pool.Run(tasks, fn, ctx);
}

DetachNextBatch::DetachNextBatch(bool on) { tls_detach_next = on; }
DetachNextBatch::~DetachNextBatch() { tls_detach_next = false; }

bool TakeDetach() {
  if (!tls_detach_next || tls_worker >= 0 || ThePool().size() == 1) return false;
  tls_detach_next = false;
  ThePool().Join();  // the caller is about to reuse its saved task context
  return true;
}

void StartTasks(int64_t tasks, TaskFn fn, void* ctx) {
  if (tasks > 0) ThePool().Start(tasks, fn, ctx);
}

int ThreadsFor(int64_t work, int64_t min_work) {
  if (tls_worker >= 0 || work < min_work) return 1;
  return ThePool().size();
}

}  // namespace internal
}  // namespace attnlab

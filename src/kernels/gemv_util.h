// The row blocking and threaded split shared by the GEMVs (gemv.cpp over
// float and 16-bit weights, quant.cpp over GGML blocks). See gemv.cpp's
// header comment for why four far-apart streams and six ranges a thread.
#ifndef ATTNLAB_KERNELS_GEMV_UTIL_H_
#define ATTNLAB_KERNELS_GEMV_UTIL_H_

#include <algorithm>
#include <cstdint>

#include "thread_pool.h"

namespace attnlab {
namespace kernels {
namespace gemv_util {

// Below this many multiply-adds a GEMV stays on the calling thread.
constexpr int64_t kMinParallelGemv = int64_t{1} << 16;

// Units u0..u1 (rows of W, or panels) in blocks of four: block g is
// {u0 + g, u0 + q + g, u0 + 2q + g, u0 + 3q + g} with q = (u1 - u0) / 4, so
// each of its four units streams forward from one quarter of the range; the
// last (u1 - u0) % 4 units (from u0 + 4q) go one at a time.
struct Quartets {
  int64_t u0, q;
  Quartets(int64_t begin, int64_t end) : u0(begin), q((end - begin) / 4) {}
  int64_t blocks() const { return q; }
  int64_t rest() const { return u0 + 4 * q; }
  // Block g's four units (js), and where they start in `base` (stride ld).
  template <class T>
  void Rows(int64_t g, const T* base, int64_t ld, int64_t js[4], const T* rows[4]) const {
    for (int r = 0; r < 4; ++r) {
      js[r] = u0 + r * q + g;
      rows[r] = base + js[r] * ld;
    }
  }
};

// The threaded split: `units` in six ranges a thread (of at least
// `min_units` each), long enough that each range's four streams run long,
// and enough that a thread slowed by the machine's other load leaves the
// rest to the others (GPT-2 small's decoding step on 2 threads, six against
// two ranges a thread, in interleaved A/B runs: 0.89-1.01x, 0.95x on
// average); the pool hands the ranges out as threads come free.
template <class F>
void GemvRanges(int64_t units, int64_t min_units, int threads, const F& range) {
  const int64_t tasks = std::max<int64_t>(1, std::min<int64_t>(6 * threads, units / min_units));
  const int64_t per = (units + tasks - 1) / tasks;
  auto task = [&](int64_t t, int) { range(t * per, std::min(units, (t + 1) * per)); };
  internal::ParallelFor(tasks, task);
}

}  // namespace gemv_util
}  // namespace kernels
}  // namespace attnlab

#endif  // ATTNLAB_KERNELS_GEMV_UTIL_H_

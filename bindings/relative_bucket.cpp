// Embind binding of T5's relative position buckets (train::RelativeBucket,
// the rule the block graph's relativeBuckets reads its bias table by): the
// webgpu model path (web/lib/webgpu-model.js) asks it for the bucket of every
// key − query distance once per model, so the GPU gathers the same table
// rows as the C++ core (one source). Named argument struct, output pointer
// filled by the wasm backend's generic `op`, status codes (lastError()).
#include <emscripten/bind.h>

#include <cstdint>
#include <sstream>

#include "common.h"
#include "train/transformer_graph.h"

namespace attnlab_bind {
namespace {

// out [2·maxLength − 1] (floats, exact integers): the bucket of distance
// j − i = k − (maxLength − 1) for k = 0 … 2·maxLength − 2, bidirectional
// (an encoder's) or causal (a decoder's), as the block graph computes them
// for relativeBuckets = buckets and relativeMaxDistance = maxDistance.
struct RelativeBucketsCall {
  double maxLength = 0, buckets = 0, maxDistance = 0;
  bool bidirectional = false;
  uintptr_t out = 0;
};

int RelativeBuckets(const RelativeBucketsCall& c) {
  const int64_t n = I64(c.maxLength), buckets = I64(c.buckets), max_distance = I64(c.maxDistance);
  // The ranges of the block graph's relativeBuckets / relativeMaxDistance (transformer.cpp Validate).
  const int64_t min_buckets = c.bidirectional ? 4 : 2;
  if (c.buckets != static_cast<double>(buckets) || buckets < min_buckets || buckets > 4096) {
    std::ostringstream os;
    os << "relativeBuckets: buckets must be an integer in [" << min_buckets << ", 4096], got " << c.buckets;
    return Report(attnlab::Status::Invalid(os.str()));
  }
  const int64_t exact = (c.bidirectional ? buckets / 2 : buckets) / 2;
  if (c.maxDistance != static_cast<double>(max_distance) || max_distance <= exact || max_distance > (1 << 24)) {
    std::ostringstream os;
    os << "relativeBuckets: maxDistance must be an integer in [" << exact + 1 << ", 16777216], got " << c.maxDistance;
    return Report(attnlab::Status::Invalid(os.str()));
  }
  if (c.maxLength != static_cast<double>(n) || n < 1 || n > (1 << 24)) {
    std::ostringstream os;
    os << "relativeBuckets: maxLength must be an integer in [1, 16777216], got " << c.maxLength;
    return Report(attnlab::Status::Invalid(os.str()));
  }
  if (c.out == 0) return Report(attnlab::Status::Invalid("relativeBuckets: out is null"));
  float* out = Ptr<float>(c.out);
  for (int64_t k = 0; k < 2 * n - 1; ++k) {
    out[k] = static_cast<float>(attnlab::train::RelativeBucket(k - (n - 1), c.bidirectional, buckets, max_distance));
  }
  return 0;
}

}  // namespace
}  // namespace attnlab_bind

EMSCRIPTEN_BINDINGS(attention_lab_relative_bucket) {
  using attnlab_bind::RelativeBucketsCall;
  emscripten::value_object<RelativeBucketsCall>("RelativeBucketsCall")
      .field("maxLength", &RelativeBucketsCall::maxLength)
      .field("buckets", &RelativeBucketsCall::buckets)
      .field("maxDistance", &RelativeBucketsCall::maxDistance)
      .field("bidirectional", &RelativeBucketsCall::bidirectional)
      .field("out", &RelativeBucketsCall::out);
  emscripten::function("relativeBuckets", &attnlab_bind::RelativeBuckets);
}

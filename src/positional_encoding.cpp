// Sinusoidal positional encoding (tutorial 1, step 5):
//   PE(pos, 2i) = sin(pos / base^(2i/E)),  PE(pos, 2i+1) = cos(pos / base^(2i/E))
// Angles are formed and evaluated in double precision: at pos ~ 5000 a float32
// angle is already off by ~3e-4 radians, which would show in the heatmap.
#include <cmath>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <vector>

#include "internal.h"

namespace attnlab {

Status PositionalEncoding(int64_t seq_len, int64_t d_model, double base,
                          float* out) {
  Status s = internal::CheckDim("seqLen", seq_len, 1);
  if (!s.ok()) return s;
  s = internal::CheckDim("dModel", d_model, 1);
  if (!s.ok()) return s;
  if (!(base > 1.0) || !std::isfinite(base)) {
    std::ostringstream os;
    os << "base must be a finite number > 1 (got " << base << ")";
    return Status::Invalid(os.str());
  }
  int64_t n = 0;
  s = internal::TensorElements("positional encoding", {seq_len, d_model}, &n);
  if (!s.ok()) return s;
  s = internal::CheckPointer("out", out);
  if (!s.ok()) return s;

  // [E/2]: the inverse frequency of each column pair, shared by all rows.
  // malloc, not std::vector: in the wasm build exceptions are disabled and a
  // failed std::vector allocation aborts the module (dModel may be 2^28).
  const int64_t pairs = (d_model + 1) / 2;
  std::unique_ptr<double, void (*)(void*)> inv_freq_buf(
      static_cast<double*>(std::malloc(static_cast<size_t>(pairs) * sizeof(double))), std::free);
  if (!inv_freq_buf) {
    return Status::OutOfMemory("out of memory for the encoding's frequencies (wasm memory is limited to 4 GiB)");
  }
  double* inv_freq = inv_freq_buf.get();
  const double log_base = std::log(base);
  for (int64_t i = 0; i < pairs; ++i) {
    inv_freq[i] = std::exp(-static_cast<double>(2 * i) * log_base /
                           static_cast<double>(d_model));
  }
  for (int64_t pos = 0; pos < seq_len; ++pos) {
    float* row = out + pos * d_model;
    for (int64_t i = 0; i < pairs; ++i) {
      const double angle = static_cast<double>(pos) * inv_freq[i];
      if (2 * i + 1 < d_model) {
        // One range reduction for both (musl's and glibc's sincos give the
        // same bits as sin and cos called apart).
        double s = 0.0, c = 0.0;
        ::sincos(angle, &s, &c);
        row[2 * i] = static_cast<float>(s);
        row[2 * i + 1] = static_cast<float>(c);
      } else {
        row[2 * i] = static_cast<float>(std::sin(angle));
      }
    }
  }
  return Status::Ok();
}

}  // namespace attnlab

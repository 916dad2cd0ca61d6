// Seeded toy tasks for the transformer (train.h, GenerateTask). Every random
// draw is DropoutUniform(seed, counter), so a seed names one batch on every
// platform. Shapes: tokens, targets [B, L] int32; loss_mask [B, L] float.
#include <algorithm>
#include <sstream>

#include "internal.h"
#include "train/train.h"

namespace attnlab {

namespace {
class Draw {
 public:
  explicit Draw(uint32_t seed) : seed_(seed) {}
  // Uniform integer in [0, n).
  int64_t Int(int64_t n) {
    const int64_t r = static_cast<int64_t>(DropoutUniform(seed_, counter_++) * static_cast<float>(n));
    return std::min(r, n - 1);
  }

 private:
  uint32_t seed_;
  uint32_t counter_ = 0;
};
}  // namespace

Status GenerateTask(TaskKind kind, int64_t batch, int64_t length, int64_t vocab,
                    uint32_t seed, int32_t* tokens, int32_t* targets,
                    float* loss_mask) {
  Status s;
  if (!(s = internal::CheckDim("batch", batch, 1)).ok()) return s;
  if (!(s = internal::CheckDim("length", length, 1)).ok()) return s;
  if (!(s = internal::CheckDim("vocab", vocab, 2)).ok()) return s;
  if (vocab > (int64_t{1} << 24)) return Status::Invalid("tasks: vocab must be at most 16777216");
  const int k = static_cast<int>(kind);
  if (k < 0 || k > 4) return Status::Invalid("tasks: unknown task");
  if (kind == TaskKind::kInduction && length < 8) {
    std::ostringstream os;
    os << "tasks.induction: length must be >= 8 (got " << length << ")";
    return Status::Invalid(os.str());
  }
  int64_t n = 0;
  if (!(s = internal::TensorElements("tokens", {batch, length}, &n)).ok()) return s;
  if (!(s = internal::CheckPointer("tokens", tokens)).ok()) return s;
  if (!(s = internal::CheckPointer("targets", targets)).ok()) return s;
  if (!(s = internal::CheckPointer("lossMask", loss_mask)).ok()) return s;

  Draw draw(seed);
  for (int64_t b = 0; b < batch; ++b) {
    int32_t* t = tokens + b * length;
    int32_t* y = targets + b * length;
    float* m = loss_mask + b * length;
    for (int64_t i = 0; i < length; ++i) t[i] = static_cast<int32_t>(draw.Int(vocab));
    std::fill(m, m + length, 1.0f);
    switch (kind) {
      case TaskKind::kCopy:
        std::copy(t, t + length, y);
        break;
      case TaskKind::kReverse:
        for (int64_t i = 0; i < length; ++i) y[i] = t[length - 1 - i];
        break;
      case TaskKind::kSort:
        std::copy(t, t + length, y);
        std::sort(y, y + length);
        break;
      case TaskKind::kShift:
        for (int64_t i = 0; i < length; ++i) y[i] = t[(i + length - 1) % length];
        break;
      case TaskKind::kInduction: {
        // Segment of S tokens at a, repeated at c (a + S <= c <= L - S).
        const int64_t seg = std::max<int64_t>(2, length / 4);
        const int64_t a = draw.Int(length - 2 * seg + 1);
        const int64_t c = a + seg + draw.Int(length - 2 * seg - a + 1);
        for (int64_t i = 0; i < seg; ++i) t[c + i] = t[a + i];
        std::fill(m, m + length, 0.0f);
        for (int64_t i = 0; i + 1 < length; ++i) y[i] = t[i + 1];
        y[length - 1] = 0;
        // Positions c .. c+S-2 see their token's earlier copy and predict
        // the next one.
        for (int64_t i = c; i <= c + seg - 2; ++i) m[i] = 1.0f;
        break;
      }
    }
  }
  return Status::Ok();
}

}  // namespace attnlab

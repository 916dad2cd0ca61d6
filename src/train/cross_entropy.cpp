// Softmax cross-entropy with a loss mask, forward and backward in one pass:
//   ce_r = logsumexp(logits_r) − logits_r[target_r]
//   loss = Σ_r m_r·ce_r / Σ_r m_r
//   dlogits_r = m_r·(softmax(logits_r) − onehot(target_r)) / Σ_r m_r
// Accuracy counts rows with m_r > 0 whose argmax (first maximum) is the
// target; a sequence is right when all its counted rows are.
#include <cmath>

#include "train/ops.h"

namespace attnlab {
namespace train {

void CrossEntropyForwardBackward(int64_t rows, int64_t length, int64_t vocab,
                                 const float* logits, const int32_t* targets,
                                 const float* mask, float* dlogits,
                                 CrossEntropyResult* result) {
  CrossEntropyResult res;
  for (int64_t r = 0; r < rows; ++r) res.weight += mask ? mask[r] : 1.0f;
  const double inv_weight = res.weight > 0.0 ? 1.0 / res.weight : 0.0;
  bool seq_right = true;
  bool seq_counted = false;
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = logits + r * vocab;
    const float m = mask ? mask[r] : 1.0f;
    const int32_t target = targets[r];
    float mx = z[0];
    int64_t arg = 0;
    for (int64_t j = 1; j < vocab; ++j) {
      if (z[j] > mx) {
        mx = z[j];
        arg = j;
      }
    }
    double sum = 0.0;
    for (int64_t j = 0; j < vocab; ++j) sum += std::exp(static_cast<double>(z[j] - mx));
    const double lse = std::log(sum) + mx;
    if (m > 0.0f) {
      res.loss += static_cast<double>(m) * (lse - z[target]);
      ++res.counted;
      seq_counted = true;
      if (arg == target) {
        res.correct += 1.0;
      } else {
        seq_right = false;
      }
    }
    if (dlogits != nullptr) {
      float* dz = dlogits + r * vocab;
      const double scale = static_cast<double>(m) * inv_weight;
      for (int64_t j = 0; j < vocab; ++j) {
        const double p = std::exp(static_cast<double>(z[j]) - lse);
        dz[j] = static_cast<float>(scale * (p - (j == target ? 1.0 : 0.0)));
      }
    }
    if ((r + 1) % length == 0) {
      if (seq_counted && seq_right) ++res.sequences_right;
      seq_right = true;
      seq_counted = false;
    }
  }
  *result = res;
}

}  // namespace train
}  // namespace attnlab

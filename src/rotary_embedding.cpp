// Rotary position embedding (ONNX RotaryEmbedding semantics):
//   x [B, H, L, D] (or [B, L, H·D]) → out, same shape; per token (b, l) the
//   angles θ_i = p·base^(-2i/R), i < R/2, come from cos/sin tables read at
//   position_ids[b, l] ([maxPos, R/2]), from per-token tables [B, L, R/2], or
//   are computed in double precision (p = position_ids[b, l] or l).
//   Pairs: halves (i, i + R/2), or interleaved (2i, 2i + 1); dims [R, D) pass.
// The same rotation serves MultiHeadAttention's rope (internal::RotateRows).
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "internal.h"

namespace attnlab {
namespace internal {

namespace {
// One head row: pairs rotated by (c[i], s[i]).
inline void RotatePairs(float* row, const float* c, const float* s,
                        int64_t half, bool interleaved) {
  if (interleaved) {
    for (int64_t i = 0; i < half; ++i) {
      const float x1 = row[2 * i], x2 = row[2 * i + 1];
      row[2 * i] = c[i] * x1 - s[i] * x2;
      row[2 * i + 1] = s[i] * x1 + c[i] * x2;
    }
  } else {
    float* a = row;
    float* b = row + half;
    for (int64_t i = 0; i < half; ++i) {
      const float x1 = a[i], x2 = b[i];
      a[i] = c[i] * x1 - s[i] * x2;
      b[i] = s[i] * x1 + c[i] * x2;
    }
  }
}

// cos/sin of p·base^(-2i/R) for i < R/2, computed in double.
void Angles(double p, int64_t rotary_dim, double base, float* c, float* s) {
  const int64_t half = rotary_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double inv_freq =
        std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(rotary_dim));
    const double theta = p * inv_freq;
    c[i] = static_cast<float>(std::cos(theta));
    s[i] = static_cast<float>(std::sin(theta));
  }
}
}  // namespace

void RotateRows(const RotateSpec& r) {
  const int64_t half = r.rotary_dim / 2;
  std::vector<float> cs(static_cast<size_t>(2 * half));
  for (int64_t b = 0; b < r.batch; ++b) {
    for (int64_t l = 0; l < r.len; ++l) {
      const float* c = nullptr;
      const float* s = nullptr;
      const int64_t tok = b * r.len + l;
      if (r.cos != nullptr && r.position_ids != nullptr) {
        const int64_t p = r.position_ids[tok];
        c = r.cos + p * half;
        s = r.sin + p * half;
      } else if (r.cos != nullptr) {
        c = r.cos + tok * half;
        s = r.sin + tok * half;
      } else {
        const double p = r.position_ids != nullptr
                             ? static_cast<double>(r.position_ids[tok])
                             : static_cast<double>(r.pos0 + l);
        Angles(p, r.rotary_dim, r.base, cs.data(), cs.data() + half);
        c = cs.data();
        s = cs.data() + half;
      }
      for (int64_t h = 0; h < r.heads; ++h) {
        RotatePairs(r.x + b * r.sb + l * r.sl + h * r.sh, c, s, half,
                    r.interleaved);
      }
    }
  }
}

Status CheckRotaryDim(int64_t rotary_dim, int64_t head_dim) {
  if (rotary_dim < 2 || rotary_dim % 2 != 0 || rotary_dim > head_dim) {
    std::ostringstream os;
    os << "rotaryDim must be an even integer in [2, D = " << head_dim
       << "] (got " << rotary_dim << ")";
    return Status::Invalid(os.str());
  }
  return Status::Ok();
}

Status CheckRopeBase(double base) {
  if (!(base > 1.0) || !std::isfinite(base)) {
    std::ostringstream os;
    os << "base must be a finite number > 1 (got " << base << ")";
    return Status::Invalid(os.str());
  }
  return Status::Ok();
}

}  // namespace internal

Status RotaryEmbedding(const RotaryArgs& a) {
  Status s;
  if (!(s = internal::CheckDim("batch", a.batch, 1)).ok()) return s;
  if (!(s = internal::CheckDim("numHeads", a.heads, 1)).ok()) return s;
  if (!(s = internal::CheckDim("L (sequence length)", a.seq_len, 1)).ok()) return s;
  if (!(s = internal::CheckDim("D (head dim)", a.head_dim, 1)).ok()) return s;
  int64_t n = 0;
  if (!(s = internal::TensorElements("x", {a.batch, a.heads, a.seq_len, a.head_dim}, &n)).ok()) {
    return s;
  }
  const int64_t rdim = a.rotary_dim == 0 ? a.head_dim : a.rotary_dim;
  if (!(s = internal::CheckRotaryDim(rdim, a.head_dim)).ok()) return s;
  if (!(s = internal::CheckPointer("x", a.x)).ok()) return s;
  if (!(s = internal::CheckPointer("output", a.out)).ok()) return s;
  if ((a.cos == nullptr) != (a.sin == nullptr)) {
    return Status::Invalid("cos and sin must be given together (or neither)");
  }
  if (a.cos == nullptr && !(s = internal::CheckRopeBase(a.base)).ok()) return s;
  if (a.position_ids != nullptr) {
    const int64_t tokens = a.batch * a.seq_len;
    for (int64_t t = 0; t < tokens; ++t) {
      const int64_t p = a.position_ids[t];
      const bool bad = p < 0 || (a.cos != nullptr && p >= a.max_position);
      if (bad) {
        std::ostringstream os;
        os << "positionIds[" << t / a.seq_len << "][" << t % a.seq_len << "] = " << p
           << " is outside ";
        if (a.cos != nullptr) {
          os << "the cos/sin table: positions must be in [0, " << a.max_position
             << ") (the table's rows)";
        } else {
          os << "[0, 2^31): positions must be >= 0";
        }
        return Status::Invalid(os.str());
      }
    }
  }
  if (a.cos != nullptr && a.position_ids != nullptr &&
      !(s = internal::CheckDim("the cos/sin table's rows (maxPosition)", a.max_position, 1)).ok()) {
    return s;
  }
  if (a.out != a.x) std::memcpy(a.out, a.x, static_cast<size_t>(n) * sizeof(float));
  internal::RotateSpec r;
  r.x = a.out;
  r.batch = a.batch;
  r.len = a.seq_len;
  r.heads = a.heads;
  if (a.seq_major) {  // [B, L, H·D]
    r.sl = a.heads * a.head_dim;
    r.sb = a.seq_len * r.sl;
    r.sh = a.head_dim;
  } else {  // [B, H, L, D]
    r.sl = a.head_dim;
    r.sh = a.seq_len * a.head_dim;
    r.sb = a.heads * r.sh;
  }
  r.rotary_dim = rdim;
  r.interleaved = a.interleaved;
  r.position_ids = a.position_ids;
  r.cos = a.cos;
  r.sin = a.sin;
  r.base = a.base;
  internal::RotateRows(r);
  return Status::Ok();
}

Status RotaryCache(int64_t max_position, int64_t rotary_dim, double base,
                   float* cos, float* sin) {
  Status s;
  if (!(s = internal::CheckDim("maxPosition", max_position, 1)).ok()) return s;
  if (rotary_dim < 2 || rotary_dim % 2 != 0) {
    std::ostringstream os;
    os << "rotaryDim must be an even integer >= 2 (got " << rotary_dim << ")";
    return Status::Invalid(os.str());
  }
  int64_t n = 0;
  if (!(s = internal::TensorElements("cos", {max_position, rotary_dim / 2}, &n)).ok()) return s;
  if (!(s = internal::CheckRopeBase(base)).ok()) return s;
  if (!(s = internal::CheckPointer("cos", cos)).ok()) return s;
  if (!(s = internal::CheckPointer("sin", sin)).ok()) return s;
  const int64_t half = rotary_dim / 2;
  for (int64_t p = 0; p < max_position; ++p) {
    internal::Angles(static_cast<double>(p), rotary_dim, base, cos + p * half,
                     sin + p * half);
  }
  return Status::Ok();
}

}  // namespace attnlab

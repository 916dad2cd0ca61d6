// Validation shared by every op. Messages use the JS API's argument names
// because they reach JS users verbatim.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <sstream>
#include <utility>

#include "internal.h"

namespace attnlab {
namespace internal {

AlignedBuffer::~AlignedBuffer() { Release(); }

void AlignedBuffer::Release() {
  std::free(data_);
  data_ = nullptr;
  capacity_ = 0;
}

bool AlignedBuffer::Reserve(int64_t floats) {
  if (floats <= capacity_) return true;
  if (floats <= 0) return true;
  int64_t bytes = 0;
  if (!CheckedMul(floats, sizeof(float), &bytes) || bytes > kMaxCallBytes) {
    return false;
  }
  // Round up to 64 bytes as aligned_alloc requires.
  const int64_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, static_cast<size_t>(rounded));
  if (p == nullptr) return false;
  std::free(data_);
  data_ = static_cast<float*>(p);
  capacity_ = rounded / static_cast<int64_t>(sizeof(float));
  return true;
}

bool CanAllocate(int64_t bytes) {
  if (bytes < 0) return false;
  // Through a volatile so the compiler cannot elide the malloc/free pair.
  void* volatile p = std::malloc(static_cast<size_t>(bytes));
  if (p == nullptr) return false;
  std::free(p);
  return true;
}

bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a) return false;
  *out = a * b;
  return true;
}

std::string ShapeString(const int64_t* dims, int n) {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < n; ++i) os << (i ? "," : "") << dims[i];
  os << ']';
  return os.str();
}

std::string ShapeString(std::initializer_list<int64_t> dims) {
  return ShapeString(dims.begin(), static_cast<int>(dims.size()));
}

Status TensorElements(const char* what, std::initializer_list<int64_t> dims,
                      int64_t* count) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (!CheckedMul(n, d, &n) || n > kMaxBufferBytes / 4) {
      std::ostringstream os;
      os << what << " of shape " << ShapeString(dims)
         << " is too large: at most " << kMaxBufferBytes / 4
         << " elements (" << (kMaxBufferBytes >> 20) << " MiB) are allowed";
      return Status::OutOfMemory(os.str());
    }
  }
  *count = n;
  return Status::Ok();
}

Status CheckDim(const char* name, int64_t value, int64_t min) {
  if (value < min) {
    std::ostringstream os;
    os << name << " must be an integer >= " << min << " (got " << value << ")";
    return Status::Invalid(os.str());
  }
  return Status::Ok();
}

Status CheckPointer(const char* name, const void* p) {
  if (p == nullptr) return Status::Invalid(std::string(name) + " is missing");
  return Status::Ok();
}

Status ResolveMask(const MaskSpec& mask, int64_t batch, int64_t heads,
                   int64_t lq, int64_t lk, kernels::AttentionView* view) {
  view->causal = mask.causal;
  view->causal_align = mask.causal_align;
  view->causal_offset = mask.causal_offset;
  view->window_offset = mask.window_offset;
  view->lengths = mask.lengths;
  view->mask_kind = MaskKind::kNone;
  view->mask = nullptr;
  auto check_align = [](Align a, const char* what) {
    if (a != Align::kTopLeft && a != Align::kBottomRight) {
      return Status::Invalid(std::string(what) +
                             " must be 'top-left' or 'bottom-right'");
    }
    return Status::Ok();
  };
  Status s;
  if (!(s = check_align(mask.causal_align, "mask causal align")).ok()) return s;
  if (std::isnan(mask.fill) || mask.fill == std::numeric_limits<float>::infinity()) {
    std::ostringstream os;
    os << "maskFill must be a finite number or -Infinity (got " << mask.fill << ")";
    return Status::Invalid(os.str());
  }
  view->fill = mask.fill;
  view->window = mask.window;
  if (mask.window) {
    if (!(s = check_align(mask.window_align, "mask window align")).ok()) return s;
    for (const auto& side : {std::make_pair("left", mask.window_left),
                             std::make_pair("right", mask.window_right)}) {
      if (side.second < -1) {
        std::ostringstream os;
        os << "mask window " << side.first
           << " must be -1 (unbounded) or an integer >= 0 (got " << side.second << ")";
        return Status::Invalid(os.str());
      }
    }
    view->window_left = mask.window_left;
    view->window_right = mask.window_right;
    view->window_align = mask.window_align;
  }
  view->alibi = mask.alibi;
  view->alibi_slopes = nullptr;
  if (mask.alibi && mask.alibi_slopes != nullptr) {
    for (int64_t h = 0; h < heads; ++h) {
      if (!std::isfinite(mask.alibi_slopes[h])) {
        std::ostringstream os;
        os << "mask alibi slopes[" << h << "] must be a finite number (got "
           << mask.alibi_slopes[h] << ")";
        return Status::Invalid(os.str());
      }
    }
    view->alibi_slopes = mask.alibi_slopes;
  }
  if (mask.lengths != nullptr) {
    for (int64_t b = 0; b < batch; ++b) {
      if (mask.lengths[b] < 0 || mask.lengths[b] > lk) {
        std::ostringstream os;
        os << "mask.lengths[" << b << "] must be an integer in [0, " << lk
           << "] (the key length Lk), got " << mask.lengths[b];
        return Status::Invalid(os.str());
      }
    }
  }
  if (mask.kind == MaskKind::kNone) return Status::Ok();
  if (static_cast<int>(mask.kind) < 0 || static_cast<int>(mask.kind) > 3) {
    return Status::Invalid("mask.kind must be 'keep', 'block' or 'additive'");
  }
  if (mask.data == nullptr) return Status::Invalid("mask.data is missing");
  const int64_t full[4] = {batch, heads, lq, lk};
  int64_t strides[4] = {0, 0, 0, 0};
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    const int64_t m = mask.shape[d];
    if (m != 1 && m != full[d]) {
      std::ostringstream os;
      os << "mask of shape " << ShapeString(mask.shape, 4)
         << " (right-aligned) does not broadcast to the scores' shape [B,H,Lq,Lk] = "
         << ShapeString(full, 4)
         << ": each dim must be 1 or equal; allowed forms include [Lq,Lk], "
            "[B,1,1,Lk], [B,1,Lq,Lk], [B,H,Lq,Lk]";
      return Status::Invalid(os.str());
    }
    strides[d] = (m == 1) ? 0 : stride;
    stride *= m;
  }
  view->mask_kind = mask.kind;
  view->mask = mask.data;
  view->m_sb = strides[0];
  view->m_sh = strides[1];
  view->m_sq = strides[2];
  view->m_sk = strides[3];
  return Status::Ok();
}

}  // namespace internal
}  // namespace attnlab

namespace attnlab {

Status AlibiSlopes(int64_t heads, float* out) {
  Status s;
  if (!(s = internal::CheckDim("heads", heads, 1)).ok()) return s;
  if (!(s = internal::CheckPointer("out", out)).ok()) return s;
  for (int64_t h = 0; h < heads; ++h) out[h] = kernels::AlibiSlope(h, heads);
  return Status::Ok();
}

}  // namespace attnlab

// Internal helpers shared by the ops: aligned scratch buffers, overflow-safe
// size arithmetic and the validation that every op runs before its kernel.
#ifndef ATTNLAB_INTERNAL_H_
#define ATTNLAB_INTERNAL_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "attention_lab.h"
#include "kernels/kernels.h"

namespace attnlab {
namespace internal {

// A 64-byte aligned float buffer that grows on demand and is reused across
// calls. Allocation failure is reported, never thrown.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();

  // Ensures room for `floats` floats; returns false when out of memory.
  bool Reserve(int64_t floats);
  void Release();
  float* data() const { return data_; }
  int64_t bytes() const { return capacity_ * static_cast<int64_t>(sizeof(float)); }

 private:
  float* data_ = nullptr;
  int64_t capacity_ = 0;
};

// True when `bytes` can be allocated right now (malloc'd and freed at once).
// For code that then allocates with std::vector: in the wasm build exceptions
// are disabled and a failed std::vector allocation aborts the module.
bool CanAllocate(int64_t bytes);

// a * b, false on overflow or when either is negative.
bool CheckedMul(int64_t a, int64_t b, int64_t* out);

// Product of dims; fails with a message naming `what` when the tensor would
// exceed kMaxBufferBytes.
Status TensorElements(const char* what, std::initializer_list<int64_t> dims,
                      int64_t* count);

// `name` must be an integer >= `min`.
Status CheckDim(const char* name, int64_t value, int64_t min);
Status CheckPointer(const char* name, const void* p);

std::string ShapeString(std::initializer_list<int64_t> dims);
std::string ShapeString(const int64_t* dims, int n);

// SDPA arguments (scaled_dot_product_attention.cpp), shared with the SDPA
// backward: the dims, Hkv | H, softcap, scale, the tensor sizes (the output
// named `out_name`) and the q, k, v pointers; and the kernel view of the dense
// [B, H, L, D] layouts (mask fields left to ResolveMask).
Status CheckSdpaArgs(const SdpaArgs& a, const char* out_name);
kernels::AttentionView SdpaView(const SdpaArgs& a);

// Validates `mask` against scores [B, H, Lq, Lk] and fills the mask fields of
// `view` (strides of the broadcast mask tensor, causal flag, lengths).
Status ResolveMask(const MaskSpec& mask, int64_t batch, int64_t heads,
                   int64_t lq, int64_t lk, kernels::AttentionView* view);

// Rotary embedding in place over a strided tensor: token (b, l), head h at
// x + b*sb + l*sl + h*sh. Angles come from tables (see RotaryArgs) or are
// computed for position position_ids[b·len + l], else pos0 + l.
struct RotateSpec {
  float* x = nullptr;
  int64_t batch = 1, len = 0, heads = 1;
  int64_t sb = 0, sl = 0, sh = 0;
  int64_t rotary_dim = 0;
  bool interleaved = false;
  const int32_t* position_ids = nullptr;
  const float* cos = nullptr;
  const float* sin = nullptr;
  int64_t pos0 = 0;
  double base = 10000.0;
};
void RotateRows(const RotateSpec& spec);

// Up to this many rows, a torch-layout Linear runs as the GEMV over W as it
// is (kernels::GemvT); more rows pack W and run the GEMM.
constexpr int64_t kGemvRows = 4;

// The driver of Linear (src/linear.cpp), shared with the training ops and
// the models: y[R, N] = x[R, K]·op(W) + b on the active kernel set, W in
// torch layout ([N, K], dense false) or [K, N] (dense). `pack`: scratch for
// the packed W. Returns false when out of memory.
bool LinearDriver(int64_t rows, int64_t in, int64_t out, const float* x,
                  const float* w, bool dense, const float* b, float* y,
                  AlignedBuffer* pack);

// The same over a weight packed once (kernels::PackB of W as B [K, N]):
// GemvPacked for up to 4 rows, else the GEMM, with no packing per call.
void LinearPackedDriver(int64_t rows, int64_t in, int64_t out, const float* x,
                        const kernels::PackedB& w, const float* b, float* y);

// The same over GGML blocks (LinearPackedDriver's path for a quantized B).
void LinearQuantDriver(int64_t rows, int64_t in, int64_t out, const float* x,
                       const kernels::QuantMatrix& w, const float* b, float* y);

// rotaryDim even in [2, D]; base > 1 and finite.
Status CheckRotaryDim(int64_t rotary_dim, int64_t head_dim);
Status CheckRopeBase(double base);

}  // namespace internal
}  // namespace attnlab

#endif  // ATTNLAB_INTERNAL_H_

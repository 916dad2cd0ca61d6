// Linear: y[R, N] = x[R, K]·Wᵀ + b (torch layout) or x·W + b (keras layout).
// Validation here; the driver below is shared with the training ops
// (src/train/linear.cpp) and the whole models (src/train/transformer_graph.cpp):
//   R <= kGemvRows, torch layout: the GEMV over W as it is (decoding; packing
//              W would cost more than the product)
//   otherwise: W packed into GEMM panels once per call, then the GEMM
#include <algorithm>
#include <sstream>

#include "internal.h"
#include "kernels/kernels.h"

namespace attnlab {

namespace internal {

bool LinearDriver(int64_t rows, int64_t in, int64_t out, const float* x,
                  const float* w, bool dense, const float* b, float* y,
                  AlignedBuffer* pack) {
  if (rows <= 0 || out <= 0) return true;
  if (in <= 0) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < out; ++j) y[i * out + j] = b ? b[j] : 0.0f;
    }
    return true;
  }
  if (rows <= kGemvRows && !dense) {
    kernels::GemvT(rows, out, in, x, in, w, in, b, y, out);
    return true;
  }
  if (!dense) {  // W[n, k] (torch): packed a slice at a time, in the product's tasks
    kernels::GemmT(rows, out, in, x, in, w, in, b, y, out);
    return true;
  }
  if (!pack->Reserve(kernels::PackedFloats(in, out))) return false;
  // B(k, n) = W[k, n] (dense).
  const kernels::PackedB pb = kernels::PackB(in, out, w, out, 1, pack->data());
  kernels::Gemm(rows, out, in, x, in, pb, b, y, out);
  return true;
}
// GGML blocks (kernels::QuantMatrix): the GEMV for a few rows, else the
// GEMM over dequantized panels. Scratch comes from the heap a call (the
// permuted x of the GEMV: rows·in floats; the scalar GEMM's chunk: about
// 1 MB; the SIMD GEMM dequantizes into per-thread buffers of its own);
// without room for it the plain loops run (the scalar GEMV needs none),
// slower but with the same results, so a projection never fails.
void LinearQuantDriver(int64_t rows, int64_t in, int64_t out, const float* x,
                       const kernels::QuantMatrix& w, const float* b, float* y) {
  AlignedBuffer scratch;
  if (rows > kGemvRows && scratch.Reserve(kernels::QuantGemmScratchFloats(in, out))) {
    kernels::GemmQuant(rows, out, in, x, in, w, b, y, out, scratch.data());
    return;
  }
  for (int64_t r0 = 0; r0 < rows; r0 += kGemvRows) {
    const int64_t m = std::min(kGemvRows, rows - r0);
    const int64_t need = kernels::QuantGemvScratchFloats(m, in);
    float* s = need > 0 && scratch.Reserve(need) ? scratch.data() : nullptr;
    kernels::GemvQuant(m, out, in, x + r0 * in, in, w, b, y + r0 * out, out, s);
  }
}
void LinearPackedDriver(int64_t rows, int64_t in, int64_t out, const float* x,
                        const kernels::PackedB& w, const float* b, float* y) {
  if (rows <= 0 || out <= 0) return;
  if (w.quant.data != nullptr) {
    LinearQuantDriver(rows, in, out, x, w.quant, b, y);
    return;
  }
  if (w.data == nullptr && w.half == nullptr) {  // never written: zero weights
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < out; ++j) y[i * out + j] = b ? b[j] : 0.0f;
    }
    return;
  }
  if (rows <= kGemvRows) {
    kernels::GemvPacked(rows, out, in, x, in, w, b, y, out);
    return;
  }
  kernels::Gemm(rows, out, in, x, in, w, b, y, out);
}
}  // namespace internal

Status Linear(const LinearArgs& a) {
  Status s;
  if (!(s = internal::CheckDim("rows", a.rows, 1)).ok()) return s;
  if (!(s = internal::CheckDim("in (x's last dim)", a.in, 1)).ok()) return s;
  if (!(s = internal::CheckDim("out (the output features)", a.out, 1)).ok()) return s;
  int64_t n = 0;
  if (!(s = internal::TensorElements("x [rows, in]", {a.rows, a.in}, &n)).ok()) return s;
  if (!(s = internal::TensorElements("weight [out, in]", {a.out, a.in}, &n)).ok()) return s;
  if (!(s = internal::TensorElements("y [rows, out]", {a.rows, a.out}, &n)).ok()) return s;
  const int layout = static_cast<int>(a.layout);
  if (layout < 0 || layout > 1) return Status::Invalid("layout must be 'torch' or 'keras'");
  if (!(s = internal::CheckPointer("x", a.x)).ok()) return s;
  if (!(s = internal::CheckPointer("weight", a.weight)).ok()) return s;
  if (!(s = internal::CheckPointer("y", a.y)).ok()) return s;
  internal::AlignedBuffer pack;
  if (!internal::LinearDriver(a.rows, a.in, a.out, a.x, a.weight, a.layout == WeightLayout::kKeras,
                              a.bias, a.y, &pack)) {
    return Status::OutOfMemory("linear: out of memory for the packed weight (wasm memory is limited to 4 GiB)");
  }
  return Status::Ok();
}

}  // namespace attnlab

// Kernel dispatch: natively both kernel sets are compiled and tests can switch
// to the scalar one at run time; the wasm scalar build has only the scalar set.
#include "kernels/kernels.h"

namespace attnlab {
namespace kernels {

namespace {
#if ATTNLAB_SIMD
bool g_use_scalar = false;
#else
constexpr bool g_use_scalar = true;
#endif
}  // namespace

bool UseScalarKernels(bool use_scalar) {
#if ATTNLAB_SIMD
  const bool previous = g_use_scalar;
  g_use_scalar = use_scalar;
  return previous;
#else
  (void)use_scalar;
  return true;
#endif
}
bool UsingScalarKernels() { return g_use_scalar; }

#if ATTNLAB_SIMD
#define ATTNLAB_DISPATCH(call) \
  (g_use_scalar ? scalar::call : simd::call)
#else
#define ATTNLAB_DISPATCH(call) (scalar::call)
#endif

int64_t GemmNr(int64_t n) { return ATTNLAB_DISPATCH(GemmNr(n)); }
int64_t PackedFloats(int64_t k, int64_t n) {
  return ATTNLAB_DISPATCH(PackedFloats(k, n));
}
PackedB PackB(int64_t k, int64_t n, const float* src, int64_t sk, int64_t sn,
              float* out) {
  return ATTNLAB_DISPATCH(PackB(k, n, src, sk, sn, out));
}
void Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const PackedB& b, const float* bias, float* c, int64_t ldc) {
  ATTNLAB_DISPATCH(Gemm(m, n, k, a, lda, b, bias, c, ldc));
}
void GemmT(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* w, int64_t ldw, const float* bias, float* c, int64_t ldc) {
  ATTNLAB_DISPATCH(GemmT(m, n, k, a, lda, w, ldw, bias, c, ldc));
}
void GemvT(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
           const float* w, int64_t ldw, const float* bias, float* y,
           int64_t ldy) {
  ATTNLAB_DISPATCH(GemvT(m, n, k, x, ldx, w, ldw, bias, y, ldy));
}
int64_t HalfRowGroup() { return ATTNLAB_DISPATCH(HalfRowGroup()); }
void GemvTHalf(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
               const HalfMatrix& w, const float* bias, float* y, int64_t ldy) {
  ATTNLAB_DISPATCH(GemvTHalf(m, n, k, x, ldx, w, bias, y, ldy));
}
void GemvPacked(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
                const PackedB& b, const float* bias, float* y, int64_t ldy) {
  ATTNLAB_DISPATCH(GemvPacked(m, n, k, x, ldx, b, bias, y, ldy));
}
int64_t QuantGemvScratchFloats(int64_t m, int64_t k) {
  return ATTNLAB_DISPATCH(QuantGemvScratchFloats(m, k));
}
void GemvQuant(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
               const QuantMatrix& w, const float* bias, float* y, int64_t ldy,
               float* scratch) {
  ATTNLAB_DISPATCH(GemvQuant(m, n, k, x, ldx, w, bias, y, ldy, scratch));
}
int64_t QuantGemmScratchFloats(int64_t k, int64_t n) {
  return ATTNLAB_DISPATCH(QuantGemmScratchFloats(k, n));
}
void GemmQuant(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const QuantMatrix& w, const float* bias, float* c, int64_t ldc,
               float* scratch) {
  ATTNLAB_DISPATCH(GemmQuant(m, n, k, a, lda, w, bias, c, ldc, scratch));
}
void GeluTanh(int64_t n, const float* x, float* y) { ATTNLAB_DISPATCH(GeluTanh(n, x, y)); }
void Gelu(int64_t n, const float* x, float* y) { ATTNLAB_DISPATCH(Gelu(n, x, y)); }
void SwiGlu(int64_t n, const float* gate, const float* up, float* y) {
  ATTNLAB_DISPATCH(SwiGlu(n, gate, up, y));
}
void AttentionCore(const AttentionView& view, float* scratch) {
  ATTNLAB_DISPATCH(AttentionCore(view, scratch));
}
void AddLayerNorm(int64_t rows, int64_t dim, const float* x, const float* r,
                  const float* gamma, const float* beta, float eps, float* y) {
  ATTNLAB_DISPATCH(AddLayerNorm(rows, dim, x, r, gamma, beta, eps, y));
}

}  // namespace kernels
}  // namespace attnlab

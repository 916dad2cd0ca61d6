// The SIMD architecture the kernels are compiled for. xsimd 8.1 has no wasm
// arch: the wasm build passes -msimd128 -msse4.1, xsimd picks its SSE4.1
// kernels and Emscripten lowers those intrinsics to SIMD128. With a newer
// xsimd, switching to xsimd::wasm is this one line.
#ifndef ATTNLAB_KERNELS_SIMD_H_
#define ATTNLAB_KERNELS_SIMD_H_

#include "kernels/kernels.h"

#if ATTNLAB_SIMD
#include <xsimd/xsimd.hpp>

namespace attnlab {
namespace kernels {
namespace simd {

using Arch = xsimd::default_arch;
using Batch = xsimd::batch<float, Arch>;
constexpr int kWidth = static_cast<int>(Batch::size);

// One row of a 16-bit packed panel (2·kWidth values in HalfLane order, the
// row 16-byte aligned) widened to floats: columns [0, kWidth) into lo and
// [kWidth, 2·kWidth) into hi, exactly as HalfToFloat. Each 32-bit lane holds
// column c in its low half and column c + kWidth in its high half.
//   BF16: lo = lane << 16, hi = lane & 0xffff0000.
//   F16:  the half moved to the lane's top, shifted right arithmetically by 3
//         (the sign stays in bit 31, the 15 magnitude bits land under the
//         float exponent), the 3 copies of the sign masked off, × 2^112.
// No Inf or NaN reaches here (the loader refuses them: IsHalfFinite).
template <HalfKind kKind>
inline void WidenHalves(const uint16_t* row, Batch* lo, Batch* hi) {
  using U = xsimd::batch<uint32_t, Arch>;
  using I = xsimd::batch<int32_t, Arch>;
  const U w = U::load_aligned(reinterpret_cast<const uint32_t*>(row));
  if (kKind == HalfKind::kBF16) {
    *lo = xsimd::bitwise_cast<Batch>(w << 16);
    *hi = xsimd::bitwise_cast<Batch>(w & U(0xffff0000u));
  } else {
    const I mask(static_cast<int32_t>(0x8fffe000u));
    const Batch scale(0x1p112f);
    const I l = xsimd::bitwise_cast<I>(w << 16) >> 3;
    const I h = xsimd::bitwise_cast<I>(w) >> 3;
    *lo = xsimd::bitwise_cast<Batch>(l & mask) * scale;
    *hi = xsimd::bitwise_cast<Batch>(h & mask) * scale;
  }
}

// Rows j0 .. j0 + cols of GGML blocks W (torch layout: columns of B) as
// float panels of this set's GEMM (nr = 2·kWidth, k rows a panel, columns
// past cols zero), each value as DequantizeRow gives it (quant.cpp; read by
// gemm.cpp's GEMM over QuantMatrix panels).
void DequantPanels(const QuantMatrix& w, int64_t k, int64_t j0, int64_t cols, float* out);

}  // namespace simd
}  // namespace kernels
}  // namespace attnlab
#endif

#endif  // ATTNLAB_KERNELS_SIMD_H_

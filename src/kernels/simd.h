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

}  // namespace simd
}  // namespace kernels
}  // namespace attnlab
#endif

#endif  // ATTNLAB_KERNELS_SIMD_H_

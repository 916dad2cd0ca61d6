#include <cstring>

#include "attention_lab.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace attnlab {

const char* KernelArch() {
#if ATTNLAB_SIMD
  if (kernels::UsingScalarKernels()) return "scalar";
  // xsimd names archs like "fma3+avx2"; report the documented family name.
  const char* name = kernels::simd::Arch::name();
  for (const char* family : {"avx512", "avx2", "avx", "sse4.2", "sse4.1", "neon64", "neon"}) {
    if (std::strstr(name, family) != nullptr) return family;
  }
  return name;
#else
  return "scalar";
#endif
}

}  // namespace attnlab

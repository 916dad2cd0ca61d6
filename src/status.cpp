#include "attention_lab.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace attnlab {

const char* KernelArch() {
#if ATTNLAB_SIMD
  if (kernels::UsingScalarKernels()) return "scalar";
  return kernels::simd::Arch::name();
#else
  return "scalar";
#endif
}

}  // namespace attnlab

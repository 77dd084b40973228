// Converting a device buffer between floating dtypes: y[i] = To(x[i]), rounding to nearest even
// into bfloat16 (kernels/bfloat16.h). From and To are float, double or bfloat16.
#pragma once

#include <cstdint>

#include "kernels/bfloat16.h"

namespace fuselab::kernels::cuda {

template <class From, class To>
void cast(const From* x, To* y, int64_t n, int device);

// The explicit instantiations, for the .cu file and for stubs.cc: every pair of the three types.
#define FUSELAB_CUDA_CAST_FROM(From)                                   \
  template void cast<From, float>(const From*, float*, int64_t, int);   \
  template void cast<From, double>(const From*, double*, int64_t, int); \
  template void cast<From, bfloat16>(const From*, bfloat16*, int64_t, int);
#define FUSELAB_CUDA_CAST_INSTANTIATE \
  FUSELAB_CUDA_CAST_FROM(float)       \
  FUSELAB_CUDA_CAST_FROM(double)      \
  FUSELAB_CUDA_CAST_FROM(bfloat16)

}  // namespace fuselab::kernels::cuda

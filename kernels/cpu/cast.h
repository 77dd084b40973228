// Converting a host buffer between floating dtypes: y[i] = To(x[i]), rounding to nearest even
// into bfloat16 (kernels/bfloat16.h), in parallel spans; the CPU twin of kernels/cuda/cast.h. From
// and To are float, double or bfloat16. Tensor::to runs it, and so every bfloat16 parameter's
// grad widened and master rounded in each optimizer step.
#pragma once

#include <cstdint>

#include "kernels/bfloat16.h"

namespace fuselab::kernels::cpu {

template <class From, class To>
void cast(const From* x, To* y, int64_t n);

}  // namespace fuselab::kernels::cpu

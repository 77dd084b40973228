// Whether a tensor holds only finite values: the check behind every "stop at the first NaN"
// in checkpoints and training loops. Integer tensors are always finite.
#pragma once

#include "tensor/tensor.h"

namespace fuselab {

// Counts the NaN and infinite elements of t (on any device; a CUDA tensor is copied to the host).
int64_t count_non_finite(const Tensor& t);

}  // namespace fuselab

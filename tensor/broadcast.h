// NumPy broadcasting for the binary elementwise ops: the result's shape, an operand copied out to
// it, and a result's grad summed back to an operand's shape. tensor_math's binary() uses these
// for the pairs its fast kernels (same shape, a row vector or a scalar as b) do not cover.
#pragma once

#include "tensor/tensor.h"

namespace fuselab::math {

// The NumPy rule: align the shapes at their last dims (the shorter one padded with 1s in front);
// each pair of sizes must be equal or one of them 1, and the result takes the larger. Throws
// naming `op` and both shapes otherwise.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

// x copied out to `shape` (which x broadcasts to): a new contiguous tensor.
Tensor expand(const Tensor& x, const Shape& shape);

// The adjoint of expand: grad, of a result's shape, summed over the dims along which `shape` was
// broadcast to it. grad itself when the shapes match.
Tensor reduce_to(const Tensor& grad, const Shape& shape);

}  // namespace fuselab::math

// IDX files, the MNIST format: a magic number 0x0000TTDD (TT the element type, DD the number of
// dims), DD big-endian uint32 sizes, then the elements, big-endian. Read into float32 (features)
// or int64 (labels). Malformed files throw fuselab::Error naming the file and the byte offset.
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace fuselab {

Tensor read_idx(const std::string& path, DType dtype = DType::Float32);

}  // namespace fuselab

// CSV data sets: numeric feature columns and one integer label column. A first line that is not
// numeric is taken as a header. Malformed files throw fuselab::Error naming the file and line:
// a field that is not a number, a feature that does not fit in float32, or a label that is not
// a class id below 2^20.
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace fuselab {

struct LabeledData {
  Tensor features;  // float32 [N, F]
  Tensor labels;    // int64 [N]
};

// label_column may be negative (-1: the last column).
LabeledData read_csv(const std::string& path, int label_column = -1);

}  // namespace fuselab

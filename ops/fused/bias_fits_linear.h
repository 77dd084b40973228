// The predicate of the fusions that start with Linear then Bias: the bias must have one value per
// output feature of the linear, or adding it in the GEMM's epilogue would be wrong.
#pragma once

#include "ops/fusion_pattern.h"

namespace fuselab {

// Rejects a match whose Bias (slot 1, when present) does not fit the Linear in slot 0.
PatternPredicate bias_fits_linear();

}  // namespace fuselab

// Finding the fusion that changes a result: bisect over the registered fusions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fuser/sequential.h"

namespace fuselab {

// Compares runs (outputs and every gradient, fuser/fusion_check.h) with the first k registered
// fusions enabled against the run with fusion off, and binary-searches for the smallest k whose
// run differs beyond tolerance (|a - b| <= tolerance (1 + |b|)). Returns that k-th fusion's name,
// or nothing when even all fusions together stay within tolerance. O(log n) runs; the
// Sequential's fusion switches are put back as they were, also when a run throws.
std::optional<std::string> bisect_fusions(Sequential& seq, const Tensor& x, const std::vector<Tensor>& extras,
                                          double tolerance);

}  // namespace fuselab

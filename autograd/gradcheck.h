// Gradient checking against central finite differences, in float64, for any differentiable
// function of tensors: the op tests use it, and so does check_fusion (fuser/fusion_check.h).
//
// The scalar that is differentiated is L = sum(f(inputs) * w) for a fixed random w, so every
// output element contributes. For each floating input element, the numeric derivative is
// (L(x + eps) - L(x - eps)) / (2 eps) and the error is |analytic - numeric| / max(1, |numeric|).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace fuselab {

using TensorFunction = std::function<Tensor(const std::vector<Tensor>& inputs)>;

struct GradCheckResult {
  double max_error = 0;
  std::string worst;  // which input and element
};

// inputs: float64 tensors are made leaves that require grad; others (int64 ids) pass through.
GradCheckResult check_gradients(const TensorFunction& f, std::vector<Tensor> inputs, double eps = 1e-6);

}  // namespace fuselab

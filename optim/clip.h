// Gradient clipping by global norm: if ||g|| = sqrt(sum over all grads of g^2) exceeds max_norm,
// every grad is scaled by max_norm / (||g|| + 1e-6), as torch.nn.utils.clip_grad_norm_.
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace fuselab {

// Returns the norm before clipping; parameters without a grad are ignored.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

}  // namespace fuselab

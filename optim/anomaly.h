// Stopping a training run at the first non-finite value instead of training on garbage: the
// loss is checked every step, and in anomaly mode every parameter's grad, which names the
// parameter where a NaN or an infinity first appeared.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/safetensors.h"  // NamedTensors

namespace fuselab {

// Throws naming `who`, the step and the value when loss is NaN or infinite.
void check_finite_loss(const std::string& who, double loss, int64_t step);
// Throws naming `who`, the step and the first parameter whose grad holds a NaN or an infinity.
void check_finite_grads(const std::string& who, const NamedTensors& params, int64_t step);

}  // namespace fuselab

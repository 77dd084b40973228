// Training checkpoints in one safetensors file: the parameters under their own names, the
// optimizer's state under "optimizer.<name>", and the step counter in the metadata. Saves are
// atomic (see tensor/safetensors.h); loads check every name, shape and dtype before changing
// anything.
#pragma once

#include <cstdint>
#include <string>

#include "optim/optimizer.h"
#include "tensor/safetensors.h"

namespace fuselab {

void save_checkpoint(const std::string& path, const NamedTensors& params, const Optimizer& optimizer, int64_t step);

// Copies the saved values into `params` (in place, so models keep their tensors) and the
// optimizer; returns the saved step. Throws, changing nothing, when a tensor holds a NaN or an
// infinity, or when the metadata step is not a non-negative integer equal to the optimizer's count.
int64_t load_checkpoint(const std::string& path, const NamedTensors& params, Optimizer& optimizer);

}  // namespace fuselab

// Optimizer steps over a list of parameters, one pass over each: read the weights, the grad and
// the state buffers once, write the weights and the buffers once. The per-element math (AdamW,
// SGD with momentum) is kernels/optimizer_math.h's.
//
// The CPU (kernels/cpu/optimizer_steps.cc) runs one parallel loop per parameter. CUDA
// (kernels/cuda/optimizer_steps.cu) runs a multi-tensor apply, as PyTorch's fused optimizers do:
// one launch whose blocks are spread over every parameter's chunks, so small parameters do not
// each pay a launch.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/optimizer_math.h"

namespace fuselab::kernels {

// One parameter: its weights, grad and up to two state buffers (AdamW's m and v; SGD's momentum
// buffer in `first`, or null without momentum), n elements each.
template <class T>
struct ParamBuffers {
  T* param;
  const T* grad;
  T* first;
  T* second;
  int64_t n;
};

template <class T>
struct AdamWStep {
  std::vector<ParamBuffers<T>> params;
  AdamWHyper hyper;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct SGDStep {
  std::vector<ParamBuffers<T>> params;
  SGDHyper hyper;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_OPTIMIZER_STEP_KERNELS(X) \
  X(AdamWStep, FUSELAB_FLOAT_DOUBLE)      \
  X(SGDStep, FUSELAB_FLOAT_DOUBLE)

}  // namespace fuselab::kernels

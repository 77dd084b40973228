// Optimizer steps on CUDA over many parameters in one launch (a multi-tensor apply, as PyTorch's
// fused optimizers do): the launch's blocks are spread over every parameter's chunks, so small
// parameters do not each pay a launch. The per-element math is kernels/optimizer_math.h's.
// Pointers are device pointers on `device`.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/bfloat16.h"
#include "kernels/optimizer_math.h"

namespace fuselab::kernels::cuda {

// One parameter: its values, grad and up to two state buffers (AdamW's m and v; SGD's momentum
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
void adamw_step(const std::vector<ParamBuffers<T>>& params, const AdamWHyper& h, int device);

template <class T>
void sgd_step(const std::vector<ParamBuffers<T>>& params, const SGDHyper& h, int device);

// The explicit instantiations, for the .cu file and for stubs.cc (T = float, double).
#define FUSELAB_CUDA_OPTIMIZER_STEPS_INSTANTIATE(T)                                          \
  template void adamw_step<T>(const std::vector<ParamBuffers<T>>&, const AdamWHyper&, int); \
  template void sgd_step<T>(const std::vector<ParamBuffers<T>>&, const SGDHyper&, int);

}  // namespace fuselab::kernels::cuda

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

// sum_i x[i]^2 in double, in a fixed order (deterministic); waits for the result.
template <class T>
double sum_squares(const T* x, int64_t n, int device);

// The explicit instantiations, for the .cu file and for stubs.cc (T = float, double).
#define FUSELAB_CUDA_OPTIMIZER_STEPS_INSTANTIATE(T) \
  template void adamw_step<T>(const std::vector<ParamBuffers<T>>&, const AdamWHyper&, int);                 \
  template void sgd_step<T>(const std::vector<ParamBuffers<T>>&, const SGDHyper&, int);                     \
  template double sum_squares<T>(const T*, int64_t, int);
// bfloat16 grads (of bfloat16 parameters, whose updates run on float32 masters) only need the clip's sum.
#define FUSELAB_CUDA_SUM_SQUARES_BF16_INSTANTIATE template double sum_squares<bfloat16>(const bfloat16*, int64_t, int);

}  // namespace fuselab::kernels::cuda

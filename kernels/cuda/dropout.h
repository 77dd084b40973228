// Dropout's scaled mask on CUDA, the contract of kernels/cpu/dropout.h: the same mask for the
// same seed (kernels/dropout_mask.h).
#pragma once

#include <cstdint>

namespace fuselab::kernels::cuda {

template <class T>
void dropout_mask(uint64_t seed, double p, T* mask, int64_t n, int device);

#define FUSELAB_CUDA_DROPOUT_INSTANTIATE(T) template void dropout_mask<T>(uint64_t, double, T*, int64_t, int);

}  // namespace fuselab::kernels::cuda

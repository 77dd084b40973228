// Dropout's scaled mask: mask[i] = [u(seed, i) >= p] / (1 - p), with the counter-based u of
// kernels/dropout_mask.h, so both backends draw the same mask for the same seed. Kernels:
// kernels/cpu/dropout.cc and kernels/cuda/dropout.cu.
#pragma once

#include <cstdint>

#include "kernels/kernel.h"

namespace fuselab::kernels {

template <class T>
struct DropoutMask {
  uint64_t seed;
  double p;
  T* mask;
  int64_t n;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_DROPOUT_KERNELS(X) X(DropoutMask, FUSELAB_FLOAT_DOUBLE)

}  // namespace fuselab::kernels

// A per-channel bias over NCHW tensors, seen as [batch, channels, plane]:
//
//   y[n, k, i] = x[n, k, i] + b[k],   db[k] = sum_{n, i} dy[n, k, i]
//
// Each channel's grad is summed in a fixed order (CUDA: one block per channel, no atomics), so
// the result is deterministic. Kernels: kernels/cpu/channel_bias.cc and kernels/cuda/channel_bias.cu.
#pragma once

#include <cstdint>

#include "kernels/kernel.h"

namespace fuselab::kernels {

template <class T>
struct ChannelBiasForward {
  const T* x;
  const T* b;
  T* y;
  int64_t batch, channels, plane;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct ChannelBiasGrad {
  const T* dy;
  T* db;
  int64_t batch, channels, plane;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_CHANNEL_BIAS_KERNELS(X)       \
  X(ChannelBiasForward, FUSELAB_FLOAT_DOUBLE) \
  X(ChannelBiasGrad, FUSELAB_FLOAT_DOUBLE)

}  // namespace fuselab::kernels

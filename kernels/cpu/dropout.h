// Dropout's scaled mask on the CPU: mask[i] = [u(seed, i) >= p] / (1 - p), with the
// counter-based u of kernels/dropout_mask.h (the same mask the CUDA kernel draws).
#pragma once

#include <cstdint>

namespace fuselab::kernels::cpu {

template <class T>
void dropout_mask(uint64_t seed, double p, T* mask, int64_t n);

}  // namespace fuselab::kernels::cpu

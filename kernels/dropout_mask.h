// Dropout's keep/drop decision as a pure function of (seed, element index), the same on the CPU
// and on CUDA, so a mask does not depend on the device, the thread count or the launch shape:
//
//   u_i = splitmix64(seed + (i + 1) * golden) / 2^64  in [0, 1),   m_i = [u_i >= p] / (1 - p)
//
// splitmix64 (Steele, Lea and Flood 2014) is the finalizer Java's SplittableRandom uses: a
// bijection whose outputs from consecutive counters pass BigCrush.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace fuselab::kernels {

FUSELAB_HOST_DEVICE inline double counter_uniform(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * (1.0 / 9007199254740992.0);  // 53 bits / 2^53
}

// m_i = 1 / (1 - p) where kept, 0 where dropped.
template <class T>
FUSELAB_HOST_DEVICE inline T dropout_scaled_mask(uint64_t seed, uint64_t index, double p) {
  return counter_uniform(seed, index) >= p ? T(1.0 / (1.0 - p)) : T(0);
}

}  // namespace fuselab::kernels

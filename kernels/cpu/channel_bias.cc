// The CPU bodies of kernels/channel_bias.h.
#include "kernels/channel_bias.h"

#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
using namespace cpu;  // threading.h

template <class T>
void ChannelBiasForward<T>::cpu(KernelContext&) const {
#pragma omp parallel for schedule(static) if (batch * channels * plane > kParallelGrain)
  for (int64_t row = 0; row < batch * channels; ++row) {
    const T bias = b[row % channels];
    const T* xr = x + row * plane;
    T* yr = y + row * plane;
#pragma omp simd
    for (int64_t i = 0; i < plane; ++i) yr[i] = xr[i] + bias;
  }
}

template <class T>
void ChannelBiasGrad<T>::cpu(KernelContext&) const {
  // Each channel sums its own rows in a fixed order: deterministic at any thread count.
#pragma omp parallel for schedule(static) if (batch * channels * plane > kParallelGrain)
  for (int64_t k = 0; k < channels; ++k) {
    T total = 0;
    for (int64_t n = 0; n < batch; ++n) {
      const T* row = dy + (n * channels + k) * plane;
      T sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < plane; ++i) sum += row[i];
      total += sum;
    }
    db[k] = total;
  }
}

FUSELAB_CHANNEL_BIAS_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

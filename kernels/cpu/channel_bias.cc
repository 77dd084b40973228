#include "kernels/cpu/channel_bias.h"

#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {

template <class T>
void channel_bias_forward(const T* x, const T* b, T* y, int64_t batch, int64_t channels, int64_t plane) {
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
void channel_bias_grad(const T* dy, T* db, int64_t batch, int64_t channels, int64_t plane) {
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

#define FUSELAB_INSTANTIATE(T)                                                                   \
  template void channel_bias_forward<T>(const T*, const T*, T*, int64_t, int64_t, int64_t); \
  template void channel_bias_grad<T>(const T*, T*, int64_t, int64_t, int64_t);
FUSELAB_INSTANTIATE(float)
FUSELAB_INSTANTIATE(double)
#undef FUSELAB_INSTANTIATE

}  // namespace fuselab::kernels::cpu

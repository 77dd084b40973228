#include "kernels/cpu/bias_activation.h"

#include "kernels/cpu/activation_spans.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {

template <class T>
void bias_activation_forward(Activation act, const T* bias, T* y, T* pre, int64_t rows, int64_t cols) {
  with_activation(act, [&](auto math) {
#pragma omp parallel for schedule(static) if (rows * cols > kParallelGrain)
    for (int64_t r = 0; r < rows; ++r) {
      bias_activation_span<T, decltype(math)>(bias, y + r * cols, pre ? pre + r * cols : nullptr, cols);
    }
  });
}

template <class T>
void add_bias(const T* bias, T* y, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    T* yr = y + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) yr[c] += bias[c];
  }
}

#define FUSELAB_INSTANTIATE(T)                                                                          \
  template void bias_activation_forward<T>(Activation, const T*, T*, T*, int64_t, int64_t);             \
  template void add_bias<T>(const T*, T*, int64_t, int64_t);
FUSELAB_INSTANTIATE(float)
FUSELAB_INSTANTIATE(double)
FUSELAB_INSTANTIATE(bfloat16)
#undef FUSELAB_INSTANTIATE

}  // namespace fuselab::kernels::cpu

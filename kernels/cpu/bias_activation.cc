#include "kernels/cpu/bias_activation.h"

#include <vector>

#include "kernels/cpu/activation_spans.h"
#include "kernels/cpu/partial_sums.h"
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

template <class T>
void activation_bias_backward(Activation act, const T* pre, const T* dy, T* dpre, T* dbias, int64_t rows,
                              int64_t cols) {
  with_activation(act, [&](auto math) {
    // Rows without dbias need no partials; with it, each thread sums its rows' dpre privately.
    using C = compute_t<T>;
    std::vector<T> unused;
    parallel_partial_sums<C>(rows, dbias ? cols : 0, rows * cols > kParallelGrain, dbias ? dbias : unused.data(), true,
                             [&](int64_t r, C* partial) {
                               const T* prer = pre + r * cols;
                               const T* dyr = dy + r * cols;
                               T* dprer = dpre + r * cols;
                               activation_grad_span<T, decltype(math)>(prer, dyr, dprer, cols);
                               if (dbias) {
#pragma omp simd
                                 for (int64_t c = 0; c < cols; ++c) partial[c] += C(dprer[c]);
                               }
                             });
  });
}

#define FUSELAB_INSTANTIATE(T)                                                                          \
  template void bias_activation_forward<T>(Activation, const T*, T*, T*, int64_t, int64_t);             \
  template void add_bias<T>(const T*, T*, int64_t, int64_t);                                            \
  template void activation_bias_backward<T>(Activation, const T*, const T*, T*, T*, int64_t, int64_t);
FUSELAB_INSTANTIATE(float)
FUSELAB_INSTANTIATE(double)
FUSELAB_INSTANTIATE(bfloat16)
#undef FUSELAB_INSTANTIATE

}  // namespace fuselab::kernels::cpu

#include "kernels/cpu/linear_epilogue.h"

#include "kernels/cpu/bias_activation.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {

template <class T>
void linear_bias_activation_forward(const T* x, const T* w, const T* b, Activation act,
                                    T* pre, T* y, int64_t rows, int64_t in, int64_t out) {
  gemm<T>(false, true, rows, out, in, T(1), x, in, w, in, T(0), y, out);
  if (act == Activation::None) {
    add_bias<T>(b, y, rows, out);
  } else {
    bias_activation_forward<T>(act, b, y, pre, rows, out);
  }
}

template <class T>
void linear_bias_add_forward(const T* x, const T* w, const T* b, const T* residual, T* y, int64_t rows, int64_t in,
                             int64_t out) {
  gemm<T>(false, true, rows, out, in, T(1), x, in, w, in, T(0), y, out);
#pragma omp parallel for schedule(static) if (rows * out > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    T* yr = y + r * out;
    const T* rr = residual + r * out;
    if (b) {
#pragma omp simd
      for (int64_t c = 0; c < out; ++c) yr[c] = T(compute_t<T>(yr[c]) + compute_t<T>(b[c]) + compute_t<T>(rr[c]));
    } else {
#pragma omp simd
      for (int64_t c = 0; c < out; ++c) yr[c] = T(compute_t<T>(yr[c]) + compute_t<T>(rr[c]));
    }
  }
}

#define FUSELAB_INSTANTIATE(T)                                                                              \
  template void linear_bias_activation_forward<T>(const T*, const T*, const T*, Activation, T*, T*, int64_t,       \
                                                  int64_t, int64_t);                                               \
  template void linear_bias_add_forward<T>(const T*, const T*, const T*, const T*, T*, int64_t, int64_t, int64_t);
FUSELAB_INSTANTIATE(float)
FUSELAB_INSTANTIATE(double)
FUSELAB_INSTANTIATE(bfloat16)
#undef FUSELAB_INSTANTIATE

}  // namespace fuselab::kernels::cpu

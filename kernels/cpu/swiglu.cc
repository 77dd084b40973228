#include "kernels/cpu/swiglu.h"

#include "kernels/cpu/threading.h"
#include "kernels/swiglu_math.h"

namespace fuselab::kernels::cpu {

template <class T>
void swiglu_forward(const T* x, T* y, int64_t rows, int64_t n) {
#pragma omp parallel for if (rows * n > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* a = x + r * 2 * n;
    const T* b = a + n;
    T* yr = y + r * n;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) yr[j] = swiglu_forward_value(a[j], b[j]);
  }
}

template <class T>
void swiglu_backward(const T* x, const T* dy, T* dx, int64_t rows, int64_t n) {
#pragma omp parallel for if (rows * n > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* a = x + r * 2 * n;
    const T* b = a + n;
    T* da = dx + r * 2 * n;
    T* db = da + n;
    const T* dyr = dy + r * n;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) swiglu_grads(a[j], b[j], dyr[j], &da[j], &db[j]);
  }
}

template void swiglu_forward<float>(const float*, float*, int64_t, int64_t);
template void swiglu_forward<double>(const double*, double*, int64_t, int64_t);
template void swiglu_backward<float>(const float*, const float*, float*, int64_t, int64_t);
template void swiglu_backward<double>(const double*, const double*, double*, int64_t, int64_t);

}  // namespace fuselab::kernels::cpu

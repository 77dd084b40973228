// The CPU bodies of kernels/swiglu.h: rows in parallel, each in a SIMD loop.
#include "kernels/swiglu.h"

#include "kernels/cpu/threading.h"
#include "kernels/swiglu_math.h"

namespace fuselab::kernels {
using namespace cpu;  // threading.h

template <class T>
void SwiGLUForward<T>::cpu(KernelContext&) const {
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
void SwiGLUBackward<T>::cpu(KernelContext&) const {
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

FUSELAB_SWIGLU_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

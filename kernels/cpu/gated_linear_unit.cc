// The CPU bodies of kernels/gated_linear_unit.h: rows in parallel, each in a SIMD loop.
#include "kernels/gated_linear_unit.h"

#include "kernels/cpu/threading.h"
#include "kernels/gated_linear_unit_math.h"

namespace fuselab::kernels {
using namespace cpu;  // threading.h

template <class T>
void GatedLinearUnitForward<T>::cpu(KernelContext&) const {
  with_activation(gate, [&](auto math) {
    using Gate = decltype(math);
#pragma omp parallel for if (rows * n > kParallelGrain)
    for (int64_t r = 0; r < rows; ++r) {
      const T* a = x + r * 2 * n;
      const T* b = a + n;
      T* yr = y + r * n;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) yr[j] = glu_forward_value<Gate>(a[j], b[j]);
    }
  });
}

template <class T>
void GatedLinearUnitBackward<T>::cpu(KernelContext&) const {
  with_activation(gate, [&](auto math) {
    using Gate = decltype(math);
#pragma omp parallel for if (rows * n > kParallelGrain)
    for (int64_t r = 0; r < rows; ++r) {
      const T* a = x + r * 2 * n;
      const T* b = a + n;
      T* da = dx + r * 2 * n;
      T* db = da + n;
      const T* dyr = dy + r * n;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) glu_grads<Gate>(a[j], b[j], dyr[j], &da[j], &db[j]);
    }
  });
}

FUSELAB_GATED_LINEAR_UNIT_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

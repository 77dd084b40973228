// The CPU bodies of kernels/moe_combine.h.
#include "kernels/moe_combine.h"

#include <algorithm>

#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
using namespace cpu;  // threading.h

template <class T>
void MoECombineForward<T>::cpu(KernelContext&) const {
#pragma omp parallel for if (rows * k * dim > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    T* __restrict o = out + r * dim;
    std::fill_n(o, dim, T(0));
    for (int64_t j = 0; j < k; ++j) {
      if (slots[r * k + j] < 0) continue;
      const T w = weights ? weights[r * k + j] : T(1);
      const T* __restrict from = y + slots[r * k + j] * dim;
#pragma omp simd
      for (int64_t c = 0; c < dim; ++c) o[c] += w * from[c];
    }
  }
}

template <class T>
void MoECombineBackward<T>::cpu(KernelContext&) const {
#pragma omp parallel for if (rows * k * dim > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* __restrict d = dout + r * dim;
    for (int64_t j = 0; j < k; ++j) {
      if (slots[r * k + j] < 0) {
        dweights[r * k + j] = T(0);
        continue;
      }
      const T w = weights[r * k + j];
      const T* __restrict from = y + slots[r * k + j] * dim;
      T* __restrict to = dy + slots[r * k + j] * dim;
      T dot = 0;
#pragma omp simd reduction(+ : dot)
      for (int64_t c = 0; c < dim; ++c) {
        to[c] = w * d[c];
        dot += d[c] * from[c];
      }
      dweights[r * k + j] = dot;
    }
  }
}

FUSELAB_MOE_COMBINE_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

// The CPU bodies of kernels/moe_combine.h: sums in compute_t<T> (float32 for bfloat16), rounded
// once on store.
#include "kernels/moe_combine.h"

#include <algorithm>

#include "kernels/cpu/store.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
using namespace cpu;  // threading.h, store.h

// Columns summed at a time: a block of sums that stays in L1.
constexpr int64_t kColumns = 256;

template <class T>
void MoECombineForward<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
#pragma omp parallel for if (rows * k * dim > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t first = 0; first < dim; first += kColumns) {
      const int64_t width = std::min(kColumns, dim - first);
      C sum[kColumns] = {};
      for (int64_t j = 0; j < k; ++j) {
        if (slots[r * k + j] < 0) continue;
        const C w = weights ? C(weights[r * k + j]) : C(1);
        const T* __restrict from = y + slots[r * k + j] * dim + first;
#pragma omp simd
        for (int64_t c = 0; c < width; ++c) sum[c] += w * C(from[c]);
      }
      T* __restrict o = out + r * dim + first;
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) store(o[c], sum[c]);
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
      const compute_t<T> w = compute_t<T>(weights[r * k + j]);
      const T* __restrict from = y + slots[r * k + j] * dim;
      T* __restrict to = dy + slots[r * k + j] * dim;
      compute_t<T> dot = 0;
#pragma omp simd reduction(+ : dot)
      for (int64_t c = 0; c < dim; ++c) {
        store(to[c], w * compute_t<T>(d[c]));
        dot += compute_t<T>(d[c]) * compute_t<T>(from[c]);
      }
      dweights[r * k + j] = T(dot);
    }
  }
}

FUSELAB_MOE_COMBINE_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

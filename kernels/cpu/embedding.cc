// The CPU bodies of kernels/embedding.h.
#include "kernels/embedding.h"

#include <algorithm>

#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
using namespace cpu;  // threading.h

template <class T>
void EmbeddingForward<T>::cpu(KernelContext&) const {
#pragma omp parallel for if (count * dim > kParallelGrain)
  for (int64_t i = 0; i < count; ++i) std::copy_n(table + ids[i] * dim, dim, out + i * dim);
}

template <class T>
void EmbeddingBackward<T>::cpu(KernelContext&) const {
  std::fill_n(dtable, vocab * dim, T(0));
  // Sequential: two rows may share an id, and a fixed order keeps the sums deterministic.
  for (int64_t i = 0; i < count; ++i) {
    T* row = dtable + ids[i] * dim;
    const T* grad = dout + i * dim;
#pragma omp simd
    for (int64_t j = 0; j < dim; ++j) row[j] += grad[j];
  }
}

FUSELAB_EMBEDDING_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

// The CPU bodies of kernels/embedding.h.
#include "kernels/embedding.h"

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/store.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
using namespace cpu;  // threading.h, store.h

template <class T>
void EmbeddingForward<T>::cpu(KernelContext&) const {
#pragma omp parallel for if (count * dim > kParallelGrain)
  for (int64_t i = 0; i < count; ++i) std::copy_n(table + ids[i] * dim, dim, out + i * dim);
}

// The sums in compute_t<T>: in dtable itself, or for bfloat16 in float32 scratch rounded at the end.
template <class T>
void EmbeddingBackward<T>::cpu(KernelContext& ctx) const {
  using C = compute_t<T>;
  C* sums;
  if constexpr (std::is_same_v<T, C>) {
    sums = dtable;
  } else {
    sums = ctx.scratch<C>(vocab * dim);
  }
  std::fill_n(sums, vocab * dim, C(0));
  // Sequential: two rows may share an id, and a fixed order keeps the sums deterministic.
  for (int64_t i = 0; i < count; ++i) {
    C* row = sums + ids[i] * dim;
    const T* grad = dout + i * dim;
#pragma omp simd
    for (int64_t j = 0; j < dim; ++j) row[j] += C(grad[j]);
  }
  if constexpr (!std::is_same_v<T, C>) {
#pragma omp simd
    for (int64_t i = 0; i < vocab * dim; ++i) store(dtable[i], sums[i]);
  }
}

FUSELAB_EMBEDDING_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

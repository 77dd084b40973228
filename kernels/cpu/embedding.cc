#include "kernels/cpu/embedding.h"

#include <algorithm>

#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {

template <class T>
void embedding_forward(const T* table, const int64_t* ids, T* out, int64_t count, int64_t dim) {
#pragma omp parallel for if (count * dim > kParallelGrain)
  for (int64_t i = 0; i < count; ++i) std::copy_n(table + ids[i] * dim, dim, out + i * dim);
}

template <class T>
void embedding_backward(const T* dout, const int64_t* ids, T* dtable, int64_t count, int64_t dim) {
  // Sequential: two rows may share an id, and a fixed order keeps the sums deterministic.
  for (int64_t i = 0; i < count; ++i) {
    T* row = dtable + ids[i] * dim;
    const T* grad = dout + i * dim;
#pragma omp simd
    for (int64_t j = 0; j < dim; ++j) row[j] += grad[j];
  }
}

template void embedding_forward<float>(const float*, const int64_t*, float*, int64_t, int64_t);
template void embedding_forward<double>(const double*, const int64_t*, double*, int64_t, int64_t);
template void embedding_backward<float>(const float*, const int64_t*, float*, int64_t, int64_t);
template void embedding_backward<double>(const double*, const int64_t*, double*, int64_t, int64_t);

}  // namespace fuselab::kernels::cpu

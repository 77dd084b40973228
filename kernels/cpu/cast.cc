#include "kernels/cpu/cast.h"

#include "kernels/cpu/store.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {

// Through float or double: To(From) for bfloat16 is its float conversion either way; store()
// writes a bfloat16's bits, which GCC vectorizes.
template <class From, class To>
void cast(const From* x, To* y, int64_t n) {
  apply_num_threads();
  parallel_spans(n, [&](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) store(y[i], compute_t<To>(compute_t<From>(x[i])));
  });
}

#define FUSELAB_CPU_CAST_FROM(From)                                \
  template void cast<From, float>(const From*, float*, int64_t);   \
  template void cast<From, double>(const From*, double*, int64_t); \
  template void cast<From, bfloat16>(const From*, bfloat16*, int64_t);
FUSELAB_CPU_CAST_FROM(float)
FUSELAB_CPU_CAST_FROM(double)
FUSELAB_CPU_CAST_FROM(bfloat16)

}  // namespace fuselab::kernels::cpu

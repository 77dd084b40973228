#include "kernels/cpu/dropout.h"

#include "kernels/cpu/threading.h"
#include "kernels/dropout_mask.h"

namespace fuselab::kernels::cpu {

template <class T>
void dropout_mask(uint64_t seed, double p, T* mask, int64_t n) {
  parallel_spans(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) mask[i] = dropout_scaled_mask<T>(seed, uint64_t(i), p);
  });
}

template void dropout_mask<float>(uint64_t, double, float*, int64_t);
template void dropout_mask<double>(uint64_t, double, double*, int64_t);

}  // namespace fuselab::kernels::cpu

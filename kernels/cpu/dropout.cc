// The CPU body of kernels/dropout.h.
#include "kernels/dropout.h"

#include "kernels/cpu/threading.h"
#include "kernels/dropout_mask.h"

namespace fuselab::kernels {

template <class T>
void DropoutMask<T>::cpu(KernelContext&) const {
  cpu::parallel_spans(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) mask[i] = dropout_scaled_mask<T>(seed, uint64_t(i), p);
  });
}

FUSELAB_DROPOUT_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

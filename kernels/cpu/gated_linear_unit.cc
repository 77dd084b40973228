// The CPU bodies of kernels/gated_linear_unit.h: rows in parallel, each row's halves through
// activation_spans.h's GLU loops (an AVX-512 copy where the CPU has it).
#include "kernels/gated_linear_unit.h"

#include "kernels/cpu/activation_spans.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
using namespace cpu;  // threading.h, activation_spans.h

template <class T>
void GatedLinearUnitForward<T>::cpu(KernelContext&) const {
  with_activation(gate, [&](auto math) {
    using Gate = decltype(math);
#pragma omp parallel for if (rows * n > kParallelGrain)
    for (int64_t r = 0; r < rows; ++r) glu_span<T, Gate>(x + r * 2 * n, x + r * 2 * n + n, y + r * n, n);
  });
}

template <class T>
void GatedLinearUnitBackward<T>::cpu(KernelContext&) const {
  with_activation(gate, [&](auto math) {
    using Gate = decltype(math);
#pragma omp parallel for if (rows * n > kParallelGrain)
    for (int64_t r = 0; r < rows; ++r) {
      const T* a = x + r * 2 * n;
      T* da = dx + r * 2 * n;
      glu_grad_span<T, Gate>(a, a + n, dy + r * n, da, da + n, n);
    }
  });
}

FUSELAB_GATED_LINEAR_UNIT_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

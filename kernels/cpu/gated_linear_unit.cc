// The CPU bodies of kernels/gated_linear_unit.h: rows in parallel, each row's halves through
// activation_spans.h's GLU loops (an AVX-512 copy where the CPU has it).
#include "kernels/gated_linear_unit.h"

#include <algorithm>

#include "kernels/cpu/activation_spans.h"
#include "kernels/cpu/gemm.h"
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

// Bytes of pre in one panel: half of one core's L2 on the machines measured (bench/RESULTS.md).
constexpr int64_t kPanelBytes = 1 << 20;

template <class T>
void LinearGatedLinearUnitForward<T>::cpu(KernelContext& ctx) const {
  const int64_t width = 2 * n;
  const int64_t panel = std::max<int64_t>(1, kPanelBytes / int64_t(sizeof(T) * std::max<int64_t>(width, 1)));
  T* scratch = pre ? nullptr : ctx.scratch<T>(std::min(panel, rows) * width);
  with_activation(gate, [&](auto math) {
    using Gate = decltype(math);
    for (int64_t first = 0; first < rows; first += panel) {
      const int64_t m = std::min(panel, rows - first);
      T* p = pre ? pre + first * width : scratch;
      gemm_with_epilogue<T>(false, true, m, width, in, x + first * in, in, w, in, {b}, p);
#pragma omp parallel for if (m * n > kParallelGrain)
      for (int64_t r = 0; r < m; ++r) glu_span<T, Gate>(p + r * width, p + r * width + n, y + (first + r) * n, n);
    }
  });
}

FUSELAB_GATED_LINEAR_UNIT_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

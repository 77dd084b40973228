// The CPU body of kernels/matmul.h: one OpenBLAS GEMM per batch item, accumulating into a copy of
// the addend (beta = 1) when there is one.
#include "kernels/matmul.h"

#include <algorithm>

#include "kernels/cpu/gemm.h"

namespace fuselab::kernels {

template <class T>
void Matmul<T>::cpu(KernelContext&) const {
  const int64_t lda = transpose_a ? m : k, ldb = transpose_b ? k : n;
  for (int64_t i = 0; i < batch; ++i) {
    T* out_i = out + i * m * n;
    if (addend) std::copy_n(addend + i * m * n, m * n, out_i);
    cpu::gemm<T>(transpose_a, transpose_b, m, n, k, T(1), a + i * m * k, lda, b + i * k * n, ldb,
                 T(addend ? 1 : 0), out_i, n);
  }
}

FUSELAB_MATMUL_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

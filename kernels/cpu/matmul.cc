// The CPU body of kernels/matmul.h: one GEMM per batch item, with the addend as its epilogue
// (oneDNN's binary add reads it in the GEMM's tiles; on OpenBLAS, one pass after the GEMM), or,
// when the addend is out itself, as its C with beta = 1 (oneDNN's sum post-op; OpenBLAS's beta).
#include "kernels/matmul.h"

#include "kernels/cpu/gemm.h"

namespace fuselab::kernels {

template <class T>
void Matmul<T>::cpu(KernelContext&) const {
  const int64_t lda = transpose_a ? m : k, ldb = transpose_b ? k : n;
  for (int64_t i = 0; i < batch; ++i) {
    if (addend == out) {
      cpu::gemm<T>(transpose_a, transpose_b, m, n, k, T(alpha), a + i * m * k, lda, b + i * k * n, ldb, T(1),
                   out + i * m * n, n);
      continue;
    }
    cpu::gemm_with_epilogue<T>(transpose_a, transpose_b, m, n, k, a + i * m * k, lda, b + i * k * n, ldb,
                               {nullptr, addend ? addend + i * m * n : nullptr, Activation::None,
                                compute_t<T>(alpha)},
                               out + i * m * n);
  }
}

FUSELAB_MATMUL_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

// The CPU body of kernels/matmul.h: one GEMM per batch item, with the addend as its epilogue
// (oneDNN's binary add reads it in the GEMM's tiles; on OpenBLAS, one pass after the GEMM), or,
// when the addend is out itself, as its C with beta = 1 (oneDNN's sum post-op; OpenBLAS's beta).
#include "kernels/matmul.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/groups.h"

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

template <class T>
void GroupedMatmul<T>::cpu(KernelContext&) const {
  const std::vector<int64_t> start = cpu::group_starts(sizes, groups);
  cpu::for_each_group(sizes, groups, [&](int64_t g, int) {
    const int64_t rows = sizes[g], first = start[size_t(g)];
    if (weight_grad) {
      T* out_g = out + g * a_cols * out_cols;
      if (rows == 0) {
        std::fill(out_g, out_g + a_cols * out_cols, T(0));
        return;
      }
      cpu::gemm<T>(true, false, a_cols, out_cols, rows, T(1), a + first * a_cols, a_cols, w + first * out_cols,
                   out_cols, T(0), out_g, out_cols, cpu::GemmShape::Varying);
    } else if (rows > 0) {
      cpu::gemm<T>(false, transpose_w, rows, out_cols, a_cols, T(1), a + first * a_cols, a_cols,
                   w + g * a_cols * out_cols, transpose_w ? a_cols : out_cols, T(0), out + first * out_cols, out_cols,
                   cpu::GemmShape::Varying);
    }
  });
}

FUSELAB_MATMUL_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

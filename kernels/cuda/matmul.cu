// The CUDA body of kernels/matmul.h. Matmul: one cuBLASLt call per batch item that reads the addend
// as C and writes D (in place when the addend is out: C = D); where cuBLASLt offers no algorithm
// for that, or for an alpha other than 1 (gemm_with_epilogue has none), the addend is copied into
// out and accumulated into (beta = 1). GroupedMatmul: one cuBLAS grouped call.
#include "kernels/matmul.h"

#include "kernels/cuda/device_api.h"
#include "kernels/cuda/gemm.h"

namespace fuselab::kernels {

template <class T>
void Matmul<T>::cuda(KernelContext& ctx) const {
  const int64_t lda = transpose_a ? m : k, ldb = transpose_b ? k : n;
  for (int64_t i = 0; i < batch; ++i) {
    const T *a_i = a + i * m * k, *b_i = b + i * k * n;
    const T* c = addend ? addend + i * m * n : nullptr;
    T* d = out + i * m * n;
    if (alpha == 1 && cuda::gemm_with_epilogue<T>(transpose_a, transpose_b, m, n, k, a_i, lda, b_i, ldb, c ? 1 : 0, c,
                                                  d, n, cuda::GemmEpilogue::None, nullptr, nullptr, ctx.device)) {
      continue;
    }
    if (c && c != d) cuda::copy_device_to_device(d, c, size_t(m * n) * sizeof(T), ctx.device);
    cuda::gemm<T>(transpose_a, transpose_b, m, n, k, compute_t<T>(alpha), a_i, lda, b_i, ldb, c ? 1 : 0, d, n,
                  ctx.device);
  }
}

// Every group's GEMM in one grouped call; a weight grad of a group without rows is an empty sum, 0.
template <class T>
void GroupedMatmul<T>::cuda(KernelContext& ctx) const {
  std::vector<cuda::GemmProblem<T>> problems;
  for (int64_t g = 0, first = 0; g < groups; first += sizes[g], ++g) {
    const T* a_g = a + first * a_cols;
    if (weight_grad) {
      problems.push_back({a_cols, out_cols, sizes[g], a_g, w + first * out_cols, out + g * a_cols * out_cols});
    } else {
      problems.push_back({sizes[g], out_cols, a_cols, a_g, w + g * a_cols * out_cols, out + first * out_cols});
    }
  }
  if (weight_grad) {
    cuda::grouped_gemm<T>(true, false, problems, a_cols, out_cols, 0, out_cols, ctx);
  } else {
    cuda::grouped_gemm<T>(false, transpose_w, problems, a_cols, transpose_w ? a_cols : out_cols, 0, out_cols, ctx);
  }
}

FUSELAB_MATMUL_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels

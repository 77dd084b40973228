// The CUDA body of kernels/matmul.h: one cuBLASLt call per batch item that reads the addend as C
// and writes D (in place when the addend is out: C = D); where cuBLASLt offers no algorithm for
// that, or for an alpha other than 1 (gemm_with_epilogue has none), the addend is copied into out
// and accumulated into (beta = 1).
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

FUSELAB_MATMUL_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels

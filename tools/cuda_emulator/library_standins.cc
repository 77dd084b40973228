// What the emulated build links in place of gemm.cu (cuBLASLt) and conv2d.cu (cuDNN): the
// emulator runs FuseLab's own kernels, not NVIDIA's libraries.
//
// - gemm: a plain dot product per output element, accumulated in compute_t<T>.
// - gemm_with_epilogue: "no algorithm" (false), as gemm.h allows, so callers apply the epilogue
//   with their own kernels, which then run emulated.
// - conv2d: throws; the convolution tests are left out of the emulated run.
#include <stdexcept>
#include <string>

#include "kernels/conv2d.h"
#include "kernels/cuda/gemm.h"

namespace fuselab::kernels::cuda {
namespace {
bool tf32 = false;
}  // namespace

// C[i, j] = alpha * sum_p op(A)[i, p] op(B)[p, j] + beta * C[i, j]; C is not read when beta = 0.
template <class T>
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, compute_t<T> alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, compute_t<T> beta, T* c, int64_t ldc, int) {
  using C = compute_t<T>;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      C dot = C(0);
      for (int64_t p = 0; p < k; ++p) {
        dot += C(transpose_a ? a[p * lda + i] : a[i * lda + p]) * C(transpose_b ? b[j * ldb + p] : b[p * ldb + j]);
      }
      T& out = c[i * ldc + j];
      out = T(alpha * dot + (beta == C(0) ? C(0) : beta * C(out)));
    }
  }
}

template <class T>
bool gemm_with_epilogue(bool, bool, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, compute_t<T>,
                        const T*, T*, int64_t, GemmEpilogue, const T*, T*, int) {
  return false;
}

void set_allow_tf32(bool allow) { tf32 = allow; }
bool allow_tf32() { return tf32; }

FUSELAB_CUDA_GEMM_INSTANTIATE(float)
FUSELAB_CUDA_GEMM_INSTANTIATE(double)
FUSELAB_CUDA_GEMM_INSTANTIATE(bfloat16)

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
namespace {
[[noreturn]] void unavailable(const char* kernel) {
  throw std::runtime_error(std::string(kernel) + ": cuDNN is not emulated (tools/cuda_emulator)");
}
}  // namespace

FUSELAB_CONV2D_KERNELS(FUSELAB_CUDA_STUB)

}  // namespace fuselab::kernels

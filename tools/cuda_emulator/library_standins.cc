// What the emulated build links in place of gemm.cu (cuBLASLt) and conv2d.cu (cuDNN): the
// emulator runs FuseLab's own kernels, not NVIDIA's libraries.
//
// - gemm: a plain dot product per output element, accumulated in compute_t<T>.
// - grouped_gemm: the arguments gemm.cu hands cuBLAS (grouped_gemm_plan.h), multiplied as cuBLAS's
//   documentation states (column-major, group by group), so the plan is tested here.
// - gemm_with_epilogue: "no algorithm" (false), as gemm.h allows, so callers apply the epilogue
//   with their own kernels, which then run emulated.
// - conv2d: throws; the convolution tests are left out of the emulated run.
#include <stdexcept>
#include <string>

#include "kernels/conv2d.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/grouped_gemm_plan.h"

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

// cublasGemmGroupedBatchedEx on the plan: for problem idx of group i, column-major
// C[idx] (m_i x n_i, leading dimension ldc) = op(A[idx]) op(B[idx]) + beta C[idx].
template <class T>
void grouped_gemm(bool transpose_a, bool transpose_b, const std::vector<GemmProblem<T>>& problems, int64_t lda,
                  int64_t ldb, compute_t<T> beta, int64_t ldc, KernelContext& ctx) {
  using C = compute_t<T>;
  const GroupedGemmPlan<T> plan = plan_grouped_gemm(problems);
  run_empty_sums(plan, transpose_a, transpose_b, lda, ldb, beta, ldc, ctx.device);
  // cuBLAS's operands, as gemm.cu passes them: the first is the problems' B, the second their A.
  const bool op_first = transpose_b, op_second = transpose_a;
  const int64_t ld_first = ldb, ld_second = lda, total = plan.problems();
  for (size_t group = 0, idx = 0; group < plan.group_size.size(); ++group) {
    const int64_t m = plan.m[group], n = plan.n[group], k = plan.k[group];
    for (int64_t member = 0; member < plan.group_size[group]; ++member, ++idx) {
      const T* first = static_cast<const T*>(plan.pointers[idx]);
      const T* second = static_cast<const T*>(plan.pointers[size_t(total) + idx]);
      T* out = static_cast<T*>(const_cast<void*>(plan.pointers[size_t(2 * total) + idx]));
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < m; ++i) {
          C dot = C(0);
          for (int64_t p = 0; p < k; ++p) {
            dot += C(op_first ? first[p + i * ld_first] : first[i + p * ld_first]) *
                   C(op_second ? second[j + p * ld_second] : second[p + j * ld_second]);
          }
          T& c = out[i + j * ldc];
          c = T(dot + (beta == C(0) ? C(0) : beta * C(c)));
        }
      }
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

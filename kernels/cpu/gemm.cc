#include "kernels/cpu/gemm.h"

#include <cblas.h>  // only for the CBLAS enum values; the functions come from openblas()

#include <vector>

#include "kernels/cpu/openblas.h"

namespace fuselab::kernels::cpu {
namespace {
int flag(bool transpose) { return transpose ? CblasTrans : CblasNoTrans; }

// The float32 copy of a [rows, cols] matrix with leading dimension ld (the elements it spans).
std::vector<float> widen(const bfloat16* x, int64_t rows, int64_t cols, int64_t ld) {
  const int64_t span = rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols;
  return std::vector<float>(x, x + span);
}
}  // namespace

template <>
void gemm<float>(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  openblas().sgemm(CblasRowMajor, flag(ta), flag(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <>
void gemm<double>(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                  int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  openblas().dgemm(CblasRowMajor, flag(ta), flag(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// bfloat16 has no OpenBLAS GEMM in Debian's build: the operands are widened to float32, multiplied
// by sgemm (float32 accumulation, as on the GPU), and the result rounded once into C.
template <>
void gemm<bfloat16>(bool ta, bool tb, int64_t m, int64_t n, int64_t k, bfloat16 alpha, const bfloat16* a,
                    int64_t lda, const bfloat16* b, int64_t ldb, bfloat16 beta, bfloat16* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const std::vector<float> a32 = widen(a, ta ? k : m, ta ? m : k, lda), b32 = widen(b, tb ? n : k, tb ? k : n, ldb);
  std::vector<float> c32 = float(beta) != 0 ? widen(c, m, n, ldc) : std::vector<float>(size_t((m - 1) * ldc + n));
  openblas().sgemm(CblasRowMajor, flag(ta), flag(tb), m, n, k, float(alpha), a32.data(), lda, b32.data(), ldb,
                   float(beta), c32.data(), ldc);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) c[r * ldc + j] = bfloat16(c32[size_t(r * ldc + j)]);
  }
}

}  // namespace fuselab::kernels::cpu

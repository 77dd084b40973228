#include "kernels/cpu/gemm.h"

#include <cblas.h>  // only for the CBLAS enum values; the functions come from openblas()

#include "kernels/cpu/openblas.h"

namespace fuselab::kernels::cpu {
namespace {
int flag(bool transpose) { return transpose ? CblasTrans : CblasNoTrans; }
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

}  // namespace fuselab::kernels::cpu

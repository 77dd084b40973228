// Row-major GEMM on existing buffers, handed to OpenBLAS: C = alpha * op(A) * op(B) + beta * C,
// where op(X) is X or its transpose (a flag, never a copy). op(A) is [m, k], op(B) is [k, n].
#pragma once

#include <cstdint>

#include "kernels/bfloat16.h"

namespace fuselab::kernels::cpu {

template <class T>
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

}  // namespace fuselab::kernels::cpu

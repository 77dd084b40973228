// Row-major GEMM on CUDA through cuBLASLt, the same contract as kernels/cpu/gemm.h:
//
//   C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C,   op(X) = X or X^T (a flag, no copy)
//
// lda, ldb and ldc are the row strides of A, B and C as stored. T is float, double or bfloat16;
// float runs in full float32 unless TF32 is switched on (set_allow_tf32), as PyTorch does, and
// bfloat16 accumulates in float32 (alpha and beta are float32 then: compute_t<T>).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/bfloat16.h"
#include "kernels/kernel.h"

namespace fuselab::kernels::cuda {

template <class T>
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, compute_t<T> alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, compute_t<T> beta, T* c, int64_t ldc, int device);

// One product of a grouped call: C = op(A) op(B) + beta C, C being m x n and the sum k deep.
template <class T>
struct GemmProblem {
  int64_t m, n, k;
  const T* a;
  const T* b;
  T* c;
};

// Independent GEMMs sharing their transposes, row strides and beta (alpha is 1), each as gemm()
// computes it, in one cuBLAS call (cublasGemmGroupedBatchedEx) instead of one per product: a
// mixture of experts' GEMMs, whose row counts differ. The problems of one shape form one of its
// groups. A problem with m or n zero is skipped, one with k zero is gemm()'s empty sum. The
// pointer arrays cuBLAS reads go to the device through the context's scratch.
template <class T>
void grouped_gemm(bool transpose_a, bool transpose_b, const std::vector<GemmProblem<T>>& problems, int64_t lda,
                  int64_t ldb, compute_t<T> beta, int64_t ldc, KernelContext& ctx);

// What cuBLASLt applies to the product before it writes D, over the row-major output's last dim
// (length n): a bias, then optionally ReLU or GELU (tanh form); GELU also writes its input, the
// pre-activation, to an aux buffer.
enum class GemmEpilogue { None, Bias, BiasReLU, BiasGELUAux };

// D[m, n] = op(A) op(B) + beta * C, then the epilogue. C (row stride ldd, may be D itself) is
// read only when beta != 0; bias is [n]; aux (row stride ldd) only for BiasGELUAux.
// Returns false, having done nothing, when cuBLASLt offers no algorithm for this epilogue, dtype
// and alignment: the caller then applies the epilogue with its own kernel.
template <class T>
bool gemm_with_epilogue(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                        const T* b, int64_t ldb, compute_t<T> beta, const T* c, T* d, int64_t ldd,
                        GemmEpilogue epilogue, const T* bias, T* aux, int device);

// TF32 tensor cores for float32 GEMMs (about 1e-3 relative error); off by default, and on
// with FUSELAB_ALLOW_TF32=1.
void set_allow_tf32(bool allow);
bool allow_tf32();

// The explicit instantiations, for the .cu file and for stubs.cc (T = float, double, bfloat16).
#define FUSELAB_CUDA_GEMM_INSTANTIATE(T)                                                                           \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, compute_t<T>, const T*, int64_t, const T*, int64_t, \
                        compute_t<T>, T*, int64_t, int);                                                           \
  template bool gemm_with_epilogue<T>(bool, bool, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t,   \
                                      compute_t<T>, const T*, T*, int64_t, GemmEpilogue, const T*, T*, int);       \
  template void grouped_gemm<T>(bool, bool, const std::vector<GemmProblem<T>>&, int64_t, int64_t, compute_t<T>,     \
                                int64_t, KernelContext&);

}  // namespace fuselab::kernels::cuda

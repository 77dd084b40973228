// Batched matrix products over contiguous row-major operands, with transposes as flags:
//
//   out_i = alpha op(a_i) op(b_i) (+ addend_i)   for i < batch,  op(a_i) [m, k], op(b_i) [k, n], out_i [m, n]
//
// alpha is the GEMM's own scale (1 unless a fused op folds a ConstantScale into it).
// The GEMM libraries do the work: oneDNN or OpenBLAS on the CPU (kernels/cpu/gemm.h; oneDNN adds
// the addend in its tiles), cuBLASLt on CUDA (kernels/cuda/gemm.h), which reads the addend as its
// C and writes out as its D, with no copy. addend may be null, or out itself: then out += op(a) op(b)
// in place, the GEMM's beta = 1 (oneDNN's sum post-op, cuBLASLt's C = D), as a weight grad is added
// into the grad accumulated so far. Kernels: kernels/cpu/matmul.cc and kernels/cuda/matmul.cu.
#pragma once

#include <cstdint>

#include "kernels/kernel.h"

namespace fuselab::kernels {

template <class T>
struct Matmul {
  bool transpose_a, transpose_b;
  int64_t batch, m, n, k;
  const T* a;
  const T* b;
  const T* addend;
  T* out;
  double alpha = 1;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_MATMUL_KERNELS(X) X(Matmul, FUSELAB_FLOAT_DOUBLE_BFLOAT16)

}  // namespace fuselab::kernels

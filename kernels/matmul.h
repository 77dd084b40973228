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

// The products of a grouped Linear (ops/basic/grouped_linear.h): G groups of consecutive rows,
// group g holding sizes[g] rows (a host array) from start_g = sizes[0] + ... + sizes[g - 1]:
//
//   weight_grad false:  out[rows_g] = a[rows_g] op(w_g)   a [R, a_cols], w [G, ., .] with op(w_g)
//                                                          [a_cols, out_cols], out [R, out_cols]
//   weight_grad true:   out_g = a[rows_g]^T w[rows_g]      a [R, a_cols], w [R, out_cols] (rows, not
//                                                          a weight), out [G, a_cols, out_cols]; 0 for
//                                                          a group without rows
//
// op(w_g) is w_g^T with transpose_w. One GEMM per group with rows. On the CPU, when there are at
// least as many such groups as threads, the groups run in parallel, each GEMM on one thread (many
// small experts' GEMMs scale badly across threads one by one); otherwise one after another, each on
// every thread. The groups' sizes change from call to call, so the GEMMs run as
// cpu::GemmShape::Varying (kernels/cpu/gemm.h). On CUDA one cuBLAS grouped call for all groups
// (kernels/cuda/gemm.h).
template <class T>
struct GroupedMatmul {
  bool weight_grad, transpose_w;
  int64_t groups;
  const int64_t* sizes;  // [groups], on the host
  int64_t a_cols, out_cols;
  const T* a;
  const T* w;
  T* out;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_MATMUL_KERNELS(X)              \
  X(Matmul, FUSELAB_FLOAT_DOUBLE_BFLOAT16)     \
  X(GroupedMatmul, FUSELAB_FLOAT_DOUBLE_BFLOAT16)

}  // namespace fuselab::kernels

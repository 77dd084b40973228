// GEMMs followed by their epilogue in a single pass over the output.
//
// x is [rows, in], W is [out, in], b is [out]. Unfused, Linear+Bias+GELU makes three passes over
// the [rows, out] output (GEMM write, bias read+write, activation read+write) and Linear+Bias+Add
// makes three as well; fused, each makes two: the GEMM, then one parallel pass that applies
// everything else.
//
// (Row panels sized to stay in L2, each GEMM'd and finished at once, were tried first: OpenBLAS
// repacks W for every panel and parallelizes small GEMMs badly, so on 2 threads the panelled
// fused op was slower than unfused. See bench/RESULTS.md.)
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/bfloat16.h"

namespace fuselab::kernels::cpu {

// pre = x W^T + b;  y = act(pre). With Activation::None y = pre (and pre is not written). pre may
// be null when the caller does not need it.
template <class T>
void linear_bias_activation_forward(const T* x, const T* w, const T* b, Activation act,
                                    T* pre, T* y, int64_t rows, int64_t in, int64_t out);

// y = x W^T (+ b) + residual. b may be null.
template <class T>
void linear_bias_add_forward(const T* x, const T* w, const T* b, const T* residual, T* y, int64_t rows, int64_t in,
                             int64_t out);

}  // namespace fuselab::kernels::cpu

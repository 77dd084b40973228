// The fused ops' kernels on CUDA, with the contracts of kernels/cpu/linear_epilogue.h and
// kernels/cpu/bias_activation.h. The forward ones are one cuBLASLt call whose epilogue applies
// the rest where cuBLASLt has that epilogue (bias; bias + ReLU; bias + GELU keeping pre as its aux
// output; the residual read as the GEMM's C with beta = 1), and otherwise a GEMM, then one pass.
//
//   linear_bias_activation_forward:  pre = x W^T + b;  y = act(pre)  (y = pre for Activation::None)
//   linear_bias_add_forward:         y = x W^T (+ b) + residual
//   activation_bias_backward:        dpre = dy * act'(pre);  dbias = sum_rows dpre
//
// x is [rows, in], W is [out, in]. Pointers are device pointers on `device`; pre, b and dbias may
// be null as in the CPU kernels. dbias is written, not accumulated into; `scratch` holds
// activation_bias_backward_scratch(rows, cols) elements of compute_t<T> for its deterministic
// two-level sum. T is float, double or bfloat16 (computed in float32).
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/bfloat16.h"

namespace fuselab::kernels::cuda {

// Where a forward kernel applied its epilogue: inside cuBLASLt's GEMM; in its own pass after the
// GEMM by design (cuBLASLt has no such epilogue: SiLU, float64); or in its own pass because
// cuBLASLt offered no algorithm for the epilogue it was asked for, a device fallback that the
// fused op reports to the explain log.
enum class EpiloguePath { InGemm, OwnPass, FellBack };

template <class T>
EpiloguePath linear_bias_activation_forward(const T* x, const T* w, const T* b, Activation act, T* pre,
                                    T* y, int64_t rows, int64_t in, int64_t out, int device);

template <class T>
EpiloguePath linear_bias_add_forward(const T* x, const T* w, const T* b, const T* residual, T* y, int64_t rows,
                                     int64_t in, int64_t out, int device);

int64_t activation_bias_backward_scratch(int64_t rows, int64_t cols);
template <class T>
void activation_bias_backward(Activation act, const T* pre, const T* dy, T* dpre, T* dbias, compute_t<T>* scratch,
                              int64_t rows, int64_t cols, int device);

// The explicit instantiations, for the .cu file and for stubs.cc (T = float, double, bfloat16).
#define FUSELAB_CUDA_LINEAR_EPILOGUE_INSTANTIATE(T)                                                                 \
  template EpiloguePath linear_bias_activation_forward<T>(const T*, const T*, const T*, Activation, T*, T*, int64_t,       \
                                                  int64_t, int64_t, int);                                           \
  template EpiloguePath linear_bias_add_forward<T>(const T*, const T*, const T*, const T*, T*, int64_t, int64_t, \
                                                   int64_t, int);                                                   \
  template void activation_bias_backward<T>(Activation, const T*, const T*, T*, T*, compute_t<T>*, int64_t, int64_t, \
                                            int);

}  // namespace fuselab::kernels::cuda

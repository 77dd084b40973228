// GEMMs with their epilogue applied while the output is still in cache.
//
// x is [rows, in], W is [out, in], b is [out]. The rows are processed in panels sized so one
// panel of output fits in L2: each panel's GEMM is followed at once by its epilogue, instead of
// one GEMM over all rows and a second pass that reads the whole output back from memory.
#pragma once

#include <cstdint>

#include "kernels/cpu/activation_math.h"

namespace fuselab::kernels::cpu {

// pre = x W^T + b;  y = act(pre). Without an activation (has_activation false) y = pre and
// pre may be null; pre may also be null when the caller does not need it.
template <class T>
void linear_bias_activation_forward(const T* x, const T* w, const T* b, bool has_activation, Activation act,
                                    T* pre, T* y, int64_t rows, int64_t in, int64_t out);

// y = residual + x W^T (+ b): y holds the residual on entry and the GEMM accumulates into it
// (beta = 1). b may be null.
template <class T>
void linear_bias_add_forward(const T* x, const T* w, const T* b, T* y, int64_t rows, int64_t in, int64_t out);

// Rows per panel so that a panel of `out` outputs stays in L2.
int64_t epilogue_panel_rows(int64_t out, int64_t element_size);

}  // namespace fuselab::kernels::cpu

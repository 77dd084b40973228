// SwiGLU over x [rows, 2n]: a = x[:, :n] (the gate), b = x[:, n:];  y = silu(a) * b.
//   da = dy * b * silu'(a),  db = dy * silu(a)
#pragma once

#include <cstdint>

namespace fuselab::kernels::cpu {

template <class T>
void swiglu_forward(const T* x, T* y, int64_t rows, int64_t n);

template <class T>
void swiglu_backward(const T* x, const T* dy, T* dx, int64_t rows, int64_t n);

}  // namespace fuselab::kernels::cpu

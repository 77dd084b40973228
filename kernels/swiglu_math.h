// SwiGLU on a row split in halves [a | b]:
//   y = silu(a) * b,   da = dy * b * silu'(a),   db = dy * silu(a)
// written once for the CPU and the CUDA kernels (silu from activation_math.h).
#pragma once

#include "kernels/activation_math.h"

namespace fuselab::kernels {

template <class T>
FUSELAB_HOST_DEVICE inline T swiglu_forward_value(T a, T b) {
  return SiLUMath::forward(a) * b;
}

// The grads of one (a, b) pair for the output grad g.
template <class T>
FUSELAB_HOST_DEVICE inline void swiglu_grads(T a, T b, T g, T* da, T* db) {
  *da = g * b * SiLUMath::grad(a);
  *db = g * SiLUMath::forward(a);
}

}  // namespace fuselab::kernels

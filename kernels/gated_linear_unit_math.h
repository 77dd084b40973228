// A gated linear unit on a row split in halves [a | b], with the gate's activation from
// activation_math.h:
//   y = gate(a) * b,   da = dy * b * gate'(a),   db = dy * gate(a)
// written once for the CPU and the CUDA kernels. The family (Dauphin et al., 2017; Shazeer, 2020):
// GLU (sigmoid), ReGLU (ReLU), GEGLU (GELU), QGEGLU (QGELU), SReGLU (SReLU), SwiGLU (SiLU).
#pragma once

#include "kernels/activation_math.h"

namespace fuselab::kernels {

template <class Gate, class T>
FUSELAB_HOST_DEVICE inline T glu_forward_value(T a, T b) {
  return Gate::forward(a) * b;
}

// The grads of one (a, b) pair for the output grad g.
template <class Gate, class T>
FUSELAB_HOST_DEVICE inline void glu_grads(T a, T b, T g, T* da, T* db) {
  *da = g * b * Gate::grad(a);
  *db = g * Gate::forward(a);
}

}  // namespace fuselab::kernels

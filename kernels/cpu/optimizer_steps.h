// Optimizer updates as one pass over each parameter: read p, g and the moments once, write p and
// the moments once.
#pragma once

#include <cstdint>

namespace fuselab::kernels::cpu {

struct AdamWHyper {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;  // t, counting from 1, for the bias corrections
};

// AdamW (Loshchilov & Hutter, decoupled weight decay), elementwise:
//   m = b1 m + (1 - b1) g
//   v = b2 v + (1 - b2) g^2
//   p = p (1 - lr wd) - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
template <class T>
void adamw_step(T* p, const T* g, T* m, T* v, int64_t n, const AdamWHyper& h);

}  // namespace fuselab::kernels::cpu

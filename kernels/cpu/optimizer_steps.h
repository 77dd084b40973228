// Optimizer updates as one pass over each parameter: read p, g and the buffers once, write p and
// the buffers once. The per-element math is kernels/optimizer_math.h's.
#pragma once

#include <cstdint>

#include "kernels/optimizer_math.h"

namespace fuselab::kernels::cpu {

template <class T>
void adamw_step(T* p, const T* g, T* m, T* v, int64_t n, const AdamWHyper& h);

// `b` (the momentum buffer) is null without momentum.
template <class T>
void sgd_step(T* p, const T* g, T* b, int64_t n, const SGDHyper& h);

}  // namespace fuselab::kernels::cpu

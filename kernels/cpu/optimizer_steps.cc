#include "kernels/cpu/optimizer_steps.h"

#include <cmath>

#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {

template <class T>
void adamw_step(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t n,
                const AdamWHyper& h) {
  const T b1 = T(h.beta1), b2 = T(h.beta2), eps = T(h.eps), decay = T(1 - h.lr * h.weight_decay);
  const T step_size = T(h.lr / (1 - std::pow(h.beta1, double(h.step))));
  const T root_correction2 = T(std::sqrt(1 - std::pow(h.beta2, double(h.step))));
#pragma omp parallel for simd if (parallel : n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    p[i] = p[i] * decay - step_size * m[i] / (std::sqrt(v[i]) / root_correction2 + eps);
  }
}

template void adamw_step<float>(float*, const float*, float*, float*, int64_t, const AdamWHyper&);
template void adamw_step<double>(double*, const double*, double*, double*, int64_t, const AdamWHyper&);

}  // namespace fuselab::kernels::cpu

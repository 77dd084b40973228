#include "kernels/cpu/optimizer_steps.h"

#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {

template <class T>
void adamw_step(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t n,
                const AdamWHyper& h) {
  const AdamWUpdate<T> update(h);
#pragma omp parallel for simd if (parallel : n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) update(p[i], g[i], m[i], v[i]);
}

template <class T>
void sgd_step(T* __restrict p, const T* __restrict g, T* __restrict b, int64_t n, const SGDHyper& h) {
  const SGDUpdate<T> update(h);
  if (b) {
#pragma omp parallel for simd if (parallel : n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) update(p[i], g[i], &b[i]);
  } else {
#pragma omp parallel for simd if (parallel : n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) update(p[i], g[i], nullptr);
  }
}

template void adamw_step<float>(float*, const float*, float*, float*, int64_t, const AdamWHyper&);
template void adamw_step<double>(double*, const double*, double*, double*, int64_t, const AdamWHyper&);
template void sgd_step<float>(float*, const float*, float*, int64_t, const SGDHyper&);
template void sgd_step<double>(double*, const double*, double*, int64_t, const SGDHyper&);

}  // namespace fuselab::kernels::cpu

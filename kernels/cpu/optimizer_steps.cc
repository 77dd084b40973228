// The CPU bodies of kernels/optimizer_steps.h: one parallel SIMD loop per parameter.
#include "kernels/optimizer_steps.h"

#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
namespace {

template <class T>
void adamw(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t n,
           const AdamWUpdate<T>& update) {
#pragma omp parallel for simd if (parallel : n > cpu::kParallelGrain)
  for (int64_t i = 0; i < n; ++i) update(p[i], g[i], m[i], v[i]);
}

template <class T>
void sgd(T* __restrict p, const T* __restrict g, T* __restrict b, int64_t n, const SGDUpdate<T>& update) {
  if (b) {
#pragma omp parallel for simd if (parallel : n > cpu::kParallelGrain)
    for (int64_t i = 0; i < n; ++i) update(p[i], g[i], &b[i]);
  } else {
#pragma omp parallel for simd if (parallel : n > cpu::kParallelGrain)
    for (int64_t i = 0; i < n; ++i) update(p[i], g[i], nullptr);
  }
}

}  // namespace

template <class T>
void AdamWStep<T>::cpu(KernelContext&) const {
  const AdamWUpdate<T> update(hyper);
  for (const ParamBuffers<T>& t : params) adamw(t.param, t.grad, t.first, t.second, t.n, update);
}

template <class T>
void SGDStep<T>::cpu(KernelContext&) const {
  const SGDUpdate<T> update(hyper);
  for (const ParamBuffers<T>& t : params) sgd(t.param, t.grad, t.first, t.n, update);
}

FUSELAB_OPTIMIZER_STEP_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

// The CPU bodies of kernels/router.h.
#include "kernels/router.h"

#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
using namespace cpu;  // threading.h

template <class T>
void RouterForward<T>::cpu(KernelContext&) const {
#pragma omp parallel for if (rows * experts * k > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    route_row(logits + r * experts, experts, k, score, weights + r * k, indices + r * k,
              probs ? probs + r * experts : nullptr, lse ? lse + r : nullptr);
  }
}

template <class T>
void RouterBackward<T>::cpu(KernelContext&) const {
#pragma omp parallel for if (rows * experts > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) route_row_backward(*this, r);
}

template <class T>
void RouterLosses<T>::cpu(KernelContext&) const {
  T mean_probs_dot_shares = T(0), z_sum = T(0);
  for (int64_t e = 0; e < experts; ++e) shares[e] = T(0);
  for (int64_t c = 0; c < rows * k; ++c) shares[indices[c]] += T(1);
  for (int64_t e = 0; e < experts; ++e) shares[e] /= T(rows > 0 ? rows * k : 1);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t e = 0; e < experts; ++e) mean_probs_dot_shares += probs[r * experts + e] * shares[e];
    z_sum += lse[r] * lse[r];
  }
  *balance = rows > 0 ? T(experts) * mean_probs_dot_shares / T(rows) : T(0);
  *z = rows > 0 ? z_sum / T(rows) : T(0);
}

FUSELAB_ROUTER_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

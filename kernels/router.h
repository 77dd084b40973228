// A mixture of experts' routing (Router, ops/basic/router.h) in one visit of each row of the
// logits l [rows, E]: the top-k, the routing weights and, for the auxiliary losses, the row's
// softmax and log-sum-exp, fused as TransformerEngine's fused top-k with score function.
//
//   i_0 .. i_{k-1}: the k largest logits, largest first, ties to the lower expert
//   Softmax:     w_j = e^(l_{i_j} - l_{i_0}) / sum_j' e^(l_{i_j'} - l_{i_0})   (over the k: Mixtral's)
//   SoftmaxAll:  w_j = p_{i_j}   (over all E, not renormalized: Switch's, Qwen-MoE's)
//   Sigmoid:     w_j = 1 / (1 + e^(-l_{i_j}))
//   for SoftmaxAll or the losses: lse = l_{i_0} + log sum_e e^(l_e - l_{i_0}),  p_e = e^(l_e - lse)
//
// Backward, per row, with g = dweights:
//   Softmax:     dl_{i_j} = w_j (g_j - sum_j' w_j' g_j')   (the experts not chosen get 0)
//   SoftmaxAll:  dl_e = p_e ([e = i_j] g_j - sum_j' w_j' g_j')   (every expert)
//   Sigmoid:     dl_{i_j} = g_j w_j (1 - w_j)
// and with the losses' grads gb (load balancing) and gz (z-loss), the shares f [E] and n rows:
//   dl_e += gb (E / n) p_e (f_e - <p, f>) + gz (2 / n) lse p_e
//
// RouterLosses: f_e = (copies that chose e) / (n k), balance = E sum_e f_e mean_r p_re (Switch,
// Mixtral), z = mean_r lse_r^2 (ST-MoE); both 0 over no rows.
//
// The row math is written once below for both backends. Kernels: kernels/cpu/router.cc and
// kernels/cuda/router.cu (a thread per row; the losses in one block, in a fixed order).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/kernel.h"

namespace fuselab::kernels {

// How the chosen experts' logits weigh their outputs: the formulas above.
enum class RouterScore { Softmax, SoftmaxAll, Sigmoid };

template <class T>
struct RouterForward {
  const T* logits;   // [rows, E]
  T* weights;        // [rows, k]
  int64_t* indices;  // [rows, k]
  T* probs;          // [rows, E] for SoftmaxAll or the losses, else null
  T* lse;            // [rows] for SoftmaxAll or the losses, else null
  int64_t rows, experts, k;
  RouterScore score;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct RouterBackward {
  const T* dweights;  // [rows, k], or null when nothing used the weights
  const T* weights;
  const int64_t* indices;
  const T* probs;     // for SoftmaxAll or the losses, else null
  const T* lse;       // for SoftmaxAll or the losses, else null (read with the losses only,
                      // as are the three below)
  const T* shares;    // f [E]
  const T* dbalance;  // one element each, on the kernel's device, or null
  const T* dz;
  T* dlogits;  // [rows, E]
  int64_t rows, experts, k;
  RouterScore score;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct RouterLosses {
  const int64_t* indices;  // [rows, k]
  const T* probs;          // [rows, E]
  const T* lse;            // [rows]
  T* shares;               // f [E]
  T* balance;              // one element
  T* z;                    // one element
  int64_t rows, experts, k;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_ROUTER_KERNELS(X)        \
  X(RouterForward, FUSELAB_FLOAT_DOUBLE) \
  X(RouterBackward, FUSELAB_FLOAT_DOUBLE) \
  X(RouterLosses, FUSELAB_FLOAT_DOUBLE)

// Whether expert a comes before expert b in the row's order: the larger logit, then the lower index.
// A NaN logit counts as the largest (as torch.topk has it), so the order is total and every pick is
// an expert: a diverged row routes to real experts with NaN weights, never out of range.
template <class T>
FUSELAB_HOST_DEVICE inline bool routes_before(const T* l, int64_t a, int64_t b) {
  const bool nan_a = l[a] != l[a], nan_b = l[b] != l[b];
  if (nan_a != nan_b) return nan_a;
  return (!nan_a && l[a] > l[b]) || ((nan_a || l[a] == l[b]) && a < b);
}

// One row of RouterForward. Pick j is the first expert in the order after pick j - 1: k passes over
// the row and no memory of what was picked.
template <class T>
FUSELAB_HOST_DEVICE inline void route_row(const T* l, int64_t experts, int64_t k, RouterScore score, T* w,
                                          int64_t* index, T* probs, T* lse) {
  using std::exp;  // float's overloads on the host; nvcc's on the device
  using std::log;
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t e = 0; e < experts; ++e) {
      if (j > 0 && !routes_before(l, index[j - 1], e)) continue;
      if (best < 0 || routes_before(l, e, best)) best = e;
    }
    index[j] = best;
  }
  const T top = l[index[0]];
  if (probs != nullptr) {
    T sum = T(0);  // the largest logit is the first pick: each exponential once, then scaled
    for (int64_t e = 0; e < experts; ++e) sum += probs[e] = exp(l[e] - top);
    *lse = top + log(sum);
    for (int64_t e = 0; e < experts; ++e) probs[e] /= sum;
  }
  T total = T(0);
  for (int64_t j = 0; j < k; ++j) {
    switch (score) {
      case RouterScore::Softmax: total += w[j] = exp(l[index[j]] - top); break;
      case RouterScore::SoftmaxAll: w[j] = probs[index[j]]; break;
      case RouterScore::Sigmoid: w[j] = T(1) / (T(1) + exp(-l[index[j]])); break;
    }
  }
  if (score == RouterScore::Softmax) {
    for (int64_t j = 0; j < k; ++j) w[j] /= total;
  }
}

// One row of RouterBackward (`r` its index, for the row's pointers).
template <class T>
FUSELAB_HOST_DEVICE inline void route_row_backward(const RouterBackward<T>& a, int64_t r) {
  const int64_t E = a.experts, k = a.k;
  T* dl = a.dlogits + r * E;
  for (int64_t e = 0; e < E; ++e) dl[e] = T(0);
  if (a.probs != nullptr && (a.dbalance != nullptr || a.dz != nullptr)) {
    const T* p = a.probs + r * E;
    const T gb = a.dbalance ? *a.dbalance * T(E) / T(a.rows) : T(0);
    const T gz = a.dz ? *a.dz * T(2) / T(a.rows) * a.lse[r] : T(0);
    T pf = T(0);
    for (int64_t e = 0; e < E; ++e) pf += p[e] * a.shares[e];
    for (int64_t e = 0; e < E; ++e) dl[e] = gb * p[e] * (a.shares[e] - pf) + gz * p[e];
  }
  if (a.dweights == nullptr) return;
  const T* w = a.weights + r * k;
  const T* g = a.dweights + r * k;
  T weighted = T(0);
  for (int64_t j = 0; j < k; ++j) weighted += w[j] * g[j];
  if (a.score == RouterScore::SoftmaxAll) {
    const T* p = a.probs + r * E;
    for (int64_t e = 0; e < E; ++e) dl[e] -= p[e] * weighted;
  }
  for (int64_t j = 0; j < k; ++j) {
    dl[a.indices[r * k + j]] += a.score == RouterScore::Sigmoid ? g[j] * w[j] * (T(1) - w[j])
                                : a.score == RouterScore::Softmax ? w[j] * (g[j] - weighted)
                                                                  : w[j] * g[j];
  }
}

}  // namespace fuselab::kernels

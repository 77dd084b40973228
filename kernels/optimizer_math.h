// The optimizer updates for one element, written once for the CPU and the CUDA kernels.
//
// AdamW (Loshchilov & Hutter, decoupled weight decay):
//   m = b1 m + (1 - b1) g
//   v = b2 v + (1 - b2) g^2
//   p = p (1 - lr wd) - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// SGD with momentum (buffer b, starting at 0) and weight decay:
//   d = g + wd p;  b = mu b + d;  d = nesterov ? d + mu b : b;  p = p - lr d
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/host_device.h"

namespace fuselab::kernels {

FUSELAB_HOST_DEVICE inline float sqrt_of(float x) { return sqrtf(x); }
FUSELAB_HOST_DEVICE inline double sqrt_of(double x) { return sqrt(x); }

struct AdamWHyper {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;  // t, counting from 1, for the bias corrections
};

// The step's constants, computed once on the host in double, then rounded to T.
template <class T>
struct AdamWUpdate {
  T beta1, beta2, eps, decay, step_size, root_correction2;

  explicit AdamWUpdate(const AdamWHyper& h)
      : beta1(T(h.beta1)),
        beta2(T(h.beta2)),
        eps(T(h.eps)),
        decay(T(1 - h.lr * h.weight_decay)),
        step_size(T(h.lr / (1 - std::pow(h.beta1, double(h.step))))),
        root_correction2(T(std::sqrt(1 - std::pow(h.beta2, double(h.step))))) {}

  FUSELAB_HOST_DEVICE void operator()(T& p, T g, T& m, T& v) const {
    m = beta1 * m + (T(1) - beta1) * g;
    v = beta2 * v + (T(1) - beta2) * g * g;
    p = p * decay - step_size * m / (sqrt_of(v) / root_correction2 + eps);
  }
};

struct SGDHyper {
  double lr, momentum, weight_decay;
  bool nesterov;
};

template <class T>
struct SGDUpdate {
  T lr, momentum, weight_decay;
  bool nesterov;

  explicit SGDUpdate(const SGDHyper& h) : lr(T(h.lr)), momentum(T(h.momentum)), weight_decay(T(h.weight_decay)),
                                          nesterov(h.nesterov) {}

  // `b` is null without momentum.
  FUSELAB_HOST_DEVICE void operator()(T& p, T g, T* b) const {
    T d = g + weight_decay * p;
    if (b) {
      *b = momentum * *b + d;
      d = nesterov ? d + momentum * *b : *b;
    }
    p -= lr * d;
  }
};

}  // namespace fuselab::kernels

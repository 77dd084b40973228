// The pointwise activations and their derivatives, written once and used by every kernel.
//
//   relu(x) = max(x, 0)                      relu'(x) = [x > 0]
//   gelu(x) = x/2 * (1 + tanh(u)),  u = sqrt(2/pi) * (x + 0.044715 x^3)
//   gelu'(x) = (1 + tanh u)/2 + x/2 * (1 - tanh^2 u) * sqrt(2/pi) * (1 + 3 * 0.044715 x^2)
//   silu(x) = x * s,  s = 1 / (1 + e^-x)     silu'(x) = s * (1 + x * (1 - s))
//
// Each activation is a type, so a kernel is instantiated per activation and its inner loop
// has no branch on which one it is.
#pragma once

#include <cmath>

namespace fuselab::kernels::cpu {

enum class Activation { ReLU, GELU, SiLU };

struct ReLUMath {
  template <class T> static T forward(T x) { return x > T(0) ? x : T(0); }
  template <class T> static T grad(T x) { return x > T(0) ? T(1) : T(0); }
};

struct GELUMath {
  template <class T> static T tanh_u(T x) {
    constexpr T kSqrt2OverPi = T(0.7978845608028654);
    return std::tanh(kSqrt2OverPi * (x + T(0.044715) * x * x * x));
  }
  template <class T> static T forward(T x) { return T(0.5) * x * (T(1) + tanh_u(x)); }
  template <class T> static T grad(T x) {
    constexpr T kSqrt2OverPi = T(0.7978845608028654);
    const T t = tanh_u(x);
    return T(0.5) * (T(1) + t) +
           T(0.5) * x * (T(1) - t * t) * kSqrt2OverPi * (T(1) + T(3 * 0.044715) * x * x);
  }
};

struct SiLUMath {
  template <class T> static T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }
  template <class T> static T forward(T x) { return x * sigmoid(x); }
  template <class T> static T grad(T x) {
    const T s = sigmoid(x);
    return s * (T(1) + x * (T(1) - s));
  }
};

// Calls f(ReLUMath{}), f(GELUMath{}) or f(SiLUMath{}).
template <class F>
void with_activation(Activation act, F&& f) {
  switch (act) {
    case Activation::ReLU: return f(ReLUMath{});
    case Activation::GELU: return f(GELUMath{});
    case Activation::SiLU: return f(SiLUMath{});
  }
}

inline const char* activation_name(Activation act) {
  return act == Activation::ReLU ? "ReLU" : act == Activation::GELU ? "GELU" : "SiLU";
}

}  // namespace fuselab::kernels::cpu

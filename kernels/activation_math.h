// The pointwise activations and their derivatives, written once and used by every kernel.
//
//   none(x) = x                              none'(x) = 1   (a fused op with no activation)
//   relu(x) = max(x, 0)                      relu'(x) = [x > 0]
//   gelu(x) = x/2 * (1 + tanh(u)),  u = sqrt(2/pi) * (x + 0.044715 x^3)
//   gelu'(x) = (1 + tanh u)/2 + x/2 * (1 - tanh^2 u) * sqrt(2/pi) * (1 + 3 * 0.044715 x^2)
//   silu(x) = x * s,  s = 1 / (1 + e^-x)     silu'(x) = s * (1 + x * (1 - s))
//   sigmoid(x) = s                           sigmoid'(x) = s * (1 - s)
//   qgelu(x) = x * s(1.702 x)                qgelu'(x) = q * (1 + 1.702 x * (1 - q)),  q = s(1.702 x)
//   srelu(x) = max(x, 0)^2                   srelu'(x) = 2 max(x, 0)
// (qgelu is GELU's sigmoid approximation, srelu the squared ReLU, as in TransformerEngine.)
//
// Each activation is a type, so a kernel is instantiated per activation and its inner loop
// has no branch on which one it is. The same functions run in the CPU and the CUDA kernels
// (FUSELAB_HOST_DEVICE), so both backends compute the same float approximations.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/host_device.h"

namespace fuselab::kernels {

// e^x for float without a library call, so loops over it vectorize (glibc's expf does not):
// x = n ln2 + r with |r| <= ln2/2, e^r from Cephes' degree-6 polynomial (about 1 ulp), and 2^n
// written straight into the exponent bits. Below -87, where e^x leaves float's normal range, it is
// 0, so a masked score (-inf) weighs exactly nothing; a NaN stays NaN. Double keeps std::exp: it is
// the precise reference.
FUSELAB_HOST_DEVICE inline float exp_approx(float x) {
  const float c = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);  // a NaN passes
  // Adding 1.5 * 2^23 rounds to an integer, which then sits in the sum's low mantissa bits:
  // rounding without nearbyint (no SSE2 vector form) and n without a float-to-int conversion.
  const float shifted = c * 1.44269504088896341f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  const float r = (c - n * 0.693359375f) + n * 2.12194440e-4f;  // ln2 split in a high and a low part
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  uint32_t bits;  // shifted's bits are 0x4B400000 + n; 2^n's exponent field is n + 127
  memcpy(&bits, &shifted, sizeof(bits));
  bits = (bits - 0x4B400000u + 127u) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof(scale));
  return x < -87.0f ? 0.0f : p * scale;
}
FUSELAB_HOST_DEVICE inline double exp_approx(double x) { return exp(x); }

// tanh(u) = 1 - 2 / (e^(2u) + 1); beyond |u| = 10 it rounds to +-1 in float.
FUSELAB_HOST_DEVICE inline float tanh_approx(float u) {
  u = u < -10.0f ? -10.0f : (u > 10.0f ? 10.0f : u);
  return 1.0f - 2.0f / (exp_approx(2.0f * u) + 1.0f);
}
FUSELAB_HOST_DEVICE inline double tanh_approx(double u) { return tanh(u); }

enum class Activation { None, ReLU, GELU, SiLU, Sigmoid, QGELU, SReLU };

struct IdentityMath {
  template <class T> FUSELAB_HOST_DEVICE static T forward(T x) { return x; }
  template <class T> FUSELAB_HOST_DEVICE static T grad(T) { return T(1); }
};

struct ReLUMath {
  template <class T> FUSELAB_HOST_DEVICE static T forward(T x) { return x > T(0) ? x : T(0); }
  template <class T> FUSELAB_HOST_DEVICE static T grad(T x) { return x > T(0) ? T(1) : T(0); }
};

struct GELUMath {
  template <class T> FUSELAB_HOST_DEVICE static T tanh_u(T x) {
    constexpr T kSqrt2OverPi = T(0.7978845608028654);
    return tanh_approx(kSqrt2OverPi * (x + T(0.044715) * x * x * x));
  }
  template <class T> FUSELAB_HOST_DEVICE static T forward(T x) { return T(0.5) * x * (T(1) + tanh_u(x)); }
  template <class T> FUSELAB_HOST_DEVICE static T grad(T x) {
    constexpr T kSqrt2OverPi = T(0.7978845608028654);
    const T t = tanh_u(x);
    return T(0.5) * (T(1) + t) +
           T(0.5) * x * (T(1) - t * t) * kSqrt2OverPi * (T(1) + T(3 * 0.044715) * x * x);
  }
};

struct SiLUMath {
  template <class T> FUSELAB_HOST_DEVICE static T sigmoid(T x) { return T(1) / (T(1) + exp_approx(-x)); }
  template <class T> FUSELAB_HOST_DEVICE static T forward(T x) { return x * sigmoid(x); }
  template <class T> FUSELAB_HOST_DEVICE static T grad(T x) {
    const T s = sigmoid(x);
    return s * (T(1) + x * (T(1) - s));
  }
};

struct SigmoidMath {
  template <class T> FUSELAB_HOST_DEVICE static T forward(T x) { return SiLUMath::sigmoid(x); }
  template <class T> FUSELAB_HOST_DEVICE static T grad(T x) {
    const T s = SiLUMath::sigmoid(x);
    return s * (T(1) - s);
  }
};

struct QGELUMath {
  template <class T> FUSELAB_HOST_DEVICE static T forward(T x) { return x * SiLUMath::sigmoid(T(1.702) * x); }
  template <class T> FUSELAB_HOST_DEVICE static T grad(T x) {
    const T q = SiLUMath::sigmoid(T(1.702) * x);
    return q * (T(1) + T(1.702) * x * (T(1) - q));
  }
};

struct SReLUMath {
  template <class T> FUSELAB_HOST_DEVICE static T forward(T x) { return x > T(0) ? x * x : T(0); }
  template <class T> FUSELAB_HOST_DEVICE static T grad(T x) { return x > T(0) ? T(2) * x : T(0); }
};

// Calls f with the activation's math type: f(IdentityMath{}), f(ReLUMath{}), ...
template <class F>
void with_activation(Activation act, F&& f) {
  switch (act) {
    case Activation::None: return f(IdentityMath{});
    case Activation::ReLU: return f(ReLUMath{});
    case Activation::GELU: return f(GELUMath{});
    case Activation::SiLU: return f(SiLUMath{});
    case Activation::Sigmoid: return f(SigmoidMath{});
    case Activation::QGELU: return f(QGELUMath{});
    case Activation::SReLU: return f(SReLUMath{});
  }
}

inline const char* activation_name(Activation act) {
  switch (act) {
    case Activation::None: return "None";
    case Activation::ReLU: return "ReLU";
    case Activation::GELU: return "GELU";
    case Activation::SiLU: return "SiLU";
    case Activation::Sigmoid: return "Sigmoid";
    case Activation::QGELU: return "QGELU";
    case Activation::SReLU: return "SReLU";
  }
  return "?";
}

}  // namespace fuselab::kernels

// The activation loops in three instruction sets (see isa.h), and the calls that pick one per span.
// The loops are the same source (activation_spans.inc), compiled for baseline x86-64 in
// namespace `baseline`, for AVX2 + FMA in `avx2` and for AVX-512 in `avx512`; the per-element math
// is kernels/activation_math.h's in all three.
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/gated_linear_unit_math.h"
#include "kernels/bfloat16.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/store.h"  // the spans' store()

namespace fuselab::kernels::cpu {

#define FUSELAB_SPANS_NAMESPACE baseline
#define FUSELAB_SPANS_TARGET
#include "kernels/cpu/activation_spans.inc"
#undef FUSELAB_SPANS_NAMESPACE
#undef FUSELAB_SPANS_TARGET

#define FUSELAB_SPANS_NAMESPACE avx2
#define FUSELAB_SPANS_TARGET FUSELAB_TARGET_AVX2
#include "kernels/cpu/activation_spans.inc"
#undef FUSELAB_SPANS_NAMESPACE
#undef FUSELAB_SPANS_TARGET

#define FUSELAB_SPANS_NAMESPACE avx512
#define FUSELAB_SPANS_TARGET FUSELAB_TARGET_AVX512
#include "kernels/cpu/activation_spans.inc"
#undef FUSELAB_SPANS_NAMESPACE
#undef FUSELAB_SPANS_TARGET

// y = act(x) over a span, in the best instruction set this CPU has.
template <class T, class Math>
void activation_span(const T* x, T* y, int64_t n) {
  if (use_avx512()) return avx512::activation_span<T, Math>(x, y, n);
  if (use_avx2()) return avx2::activation_span<T, Math>(x, y, n);
  baseline::activation_span<T, Math>(x, y, n);
}

// dx = dy * act'(x)
template <class T, class Math>
void activation_grad_span(const T* x, const T* dy, T* dx, int64_t n) {
  if (use_avx512()) return avx512::activation_grad_span<T, Math>(x, dy, dx, n);
  if (use_avx2()) return avx2::activation_grad_span<T, Math>(x, dy, dx, n);
  baseline::activation_grad_span<T, Math>(x, dy, dx, n);
}

// y = gate(a) * b
template <class T, class Gate>
void glu_span(const T* a, const T* b, T* y, int64_t n) {
  if (use_avx512()) return avx512::glu_span<T, Gate>(a, b, y, n);
  if (use_avx2()) return avx2::glu_span<T, Gate>(a, b, y, n);
  baseline::glu_span<T, Gate>(a, b, y, n);
}

// da = dy * b * gate'(a),  db = dy * gate(a)
template <class T, class Gate>
void glu_grad_span(const T* a, const T* b, const T* dy, T* da, T* db, int64_t n) {
  if (use_avx512()) return avx512::glu_grad_span<T, Gate>(a, b, dy, da, db, n);
  if (use_avx2()) return avx2::glu_grad_span<T, Gate>(a, b, dy, da, db, n);
  baseline::glu_grad_span<T, Gate>(a, b, dy, da, db, n);
}

// pre = y + bias; y = act(pre)
template <class T, class Math>
void bias_activation_span(const T* bias, T* y, T* pre, int64_t n) {
  if (use_avx512()) return avx512::bias_activation_span<T, Math>(bias, y, pre, n);
  if (use_avx2()) return avx2::bias_activation_span<T, Math>(bias, y, pre, n);
  baseline::bias_activation_span<T, Math>(bias, y, pre, n);
}

// pre = y + bias; y = act(pre), one bias value for the span
template <class T, class Math>
void scalar_bias_activation_span(T bias, T* y, T* pre, int64_t n) {
  if (use_avx512()) return avx512::scalar_bias_activation_span<T, Math>(bias, y, pre, n);
  if (use_avx2()) return avx2::scalar_bias_activation_span<T, Math>(bias, y, pre, n);
  baseline::scalar_bias_activation_span<T, Math>(bias, y, pre, n);
}

}  // namespace fuselab::kernels::cpu

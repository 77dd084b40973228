// The CPU bodies of kernels/elementwise.h.
#include "kernels/elementwise.h"

#include <algorithm>

#include "kernels/cpu/activation_spans.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/partial_sums.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
using namespace cpu;  // threading.h, partial_sums.h, activation_spans.h
namespace {

template <class F>
void for_each_row(int64_t rows, int64_t cols, F&& body) {
#pragma omp parallel for schedule(static) if (rows * cols > kParallelGrain && rows > 1)
  for (int64_t r = 0; r < rows; ++r) body(r);
}

template <class T, class Op>
void binary_with(Op op, const T* a, const T* b, T* out, int64_t rows, int64_t cols, Broadcast broadcast) {
  for_each_row(rows, cols, [&](int64_t r) {
    const T* ar = a + r * cols;
    T* outr = out + r * cols;
    // `omp simd`: inside a by-reference lambda GCC does not vectorize these loops on its own.
    if (broadcast == Broadcast::Scalar) {
      const T s = b[0];
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) cpu::store(outr[c], op(ar[c], s));
    } else {
      const T* br = broadcast == Broadcast::Row ? b : b + r * cols;
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) cpu::store(outr[c], op(ar[c], br[c]));
    }
  });
}

// sum_i x_i (or x_i^2) over [begin, end) in double, in 32 running sums that take the terms in
// turn: one running sum would make every add wait for the previous one.
template <bool kSquares, class T>
[[gnu::always_inline]] inline double span_sum(const T* x, int64_t begin, int64_t end) {
  constexpr int64_t kLanes = 32;
  double lanes[kLanes] = {};
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
#pragma omp simd
    for (int64_t j = 0; j < kLanes; ++j) lanes[j] += kSquares ? double(x[i + j]) * double(x[i + j]) : double(x[i + j]);
  }
  double sum = 0;
  for (; i < end; ++i) sum += kSquares ? double(x[i]) * double(x[i]) : double(x[i]);
  for (double lane : lanes) sum += lane;
  return sum;
}

// span_sum compiled for baseline x86-64, AVX2 and AVX-512 (isa.h): in double, at 2 terms an SSE
// instruction, the loss's sum ran at half the memory's pace.
template <bool kSquares, class T>
double baseline_span_sum(const T* x, int64_t begin, int64_t end) {
  return span_sum<kSquares>(x, begin, end);
}
template <bool kSquares, class T>
FUSELAB_TARGET_AVX2 double avx2_span_sum(const T* x, int64_t begin, int64_t end) {
  return span_sum<kSquares>(x, begin, end);
}
template <bool kSquares, class T>
FUSELAB_TARGET_AVX512 double avx512_span_sum(const T* x, int64_t begin, int64_t end) {
  return span_sum<kSquares>(x, begin, end);
}

// sum_i x_i (or x_i^2) over [0, n): blocks of 4096 terms, each summed in double (accurate for
// millions of float32 terms), the block sums added in a fixed order.
template <bool kSquares, class T>
double block_sum(const T* x, int64_t n) {
  constexpr int64_t kBlock = 4096;
  const auto sum = pick_isa(&avx512_span_sum<kSquares, T>, &avx2_span_sum<kSquares, T>, &baseline_span_sum<kSquares, T>);
  double total = 0;
  parallel_partial_sums<double>((n + kBlock - 1) / kBlock, 1, n > kParallelGrain, &total, false,
                                [&](int64_t block, double* partial) {
                                  const int64_t begin = block * kBlock, end = std::min(n, begin + kBlock);
                                  partial[0] += sum(x, begin, end);
                                });
  return total;
}

}  // namespace

template <class T>
void Binary<T>::cpu(KernelContext&) const {
  switch (op) {
    case BinaryOp::Add: return binary_with<T>([](T x, T y) { return x + y; }, a, b, out, rows, cols, broadcast);
    case BinaryOp::Sub: return binary_with<T>([](T x, T y) { return x - y; }, a, b, out, rows, cols, broadcast);
    case BinaryOp::Mul: return binary_with<T>([](T x, T y) { return x * y; }, a, b, out, rows, cols, broadcast);
    case BinaryOp::Div: return binary_with<T>([](T x, T y) { return x / y; }, a, b, out, rows, cols, broadcast);
  }
}

template <class T>
void Expand<T>::cpu(KernelContext&) const {
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) out[i] = x[src.offset(i)];
}

template <class T>
void SumBroadcast<T>::cpu(KernelContext&) const {
#pragma omp parallel for if (n * count > kParallelGrain)
  for (int64_t j = 0; j < n; ++j) {
    const T* base = grad + kept.offset(j);
    compute_t<T> sum = 0;
    for (int64_t k = 0; k < count; ++k) sum += compute_t<T>(base[summed.offset(k)]);
    out[j] = T(sum);
  }
}

template <class T>
void Fill<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
  const T v = scalar ? T(C(*scalar) * value) : T(value);
  T* out = this->out;
  if (is_zero_bytes(v)) {
    std::memset(out, 0, size_t(n) * sizeof(T));
    return;
  }
#pragma omp parallel for simd if (parallel : n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) out[i] = v;
}

template <class T>
void Scale<T>::cpu(KernelContext&) const {
  const T* x = this->x;  // the fields as locals, as the other loops here read them
  T* out = this->out;
  const compute_t<T> alpha = this->alpha;
#pragma omp parallel for simd if (parallel : n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) out[i] = T(alpha * compute_t<T>(x[i]));
}

template <class T>
void Axpy<T>::cpu(KernelContext&) const {
  const T* x = this->x;
  T* y = this->y;
  const compute_t<T> alpha = this->alpha;
#pragma omp parallel for simd if (parallel : n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) y[i] = T(compute_t<T>(y[i]) + alpha * compute_t<T>(x[i]));
}

template <class T>
void ActivationForward<T>::cpu(KernelContext&) const {
  with_activation(act, [&](auto math) {
    parallel_spans(n, [&](int64_t begin, int64_t end) {
      activation_span<T, decltype(math)>(x + begin, y + begin, end - begin);
    });
  });
}

template <class T>
void ActivationBackward<T>::cpu(KernelContext&) const {
  with_activation(act, [&](auto math) {
    parallel_spans(n, [&](int64_t begin, int64_t end) {
      activation_grad_span<T, decltype(math)>(x + begin, dy + begin, dx + begin, end - begin);
    });
  });
}

template <class T>
void SumRows<T>::cpu(KernelContext&) const {
  if (cols == 1) {
    const T* x = this->x;
    out[0] = T(block_sum</*kSquares=*/false>(x, rows));
    return;
  }
  using C = compute_t<T>;
  parallel_partial_sums<C>(rows, cols, rows * cols > kParallelGrain, out, false, [&](int64_t r, C* partial) {
    const T* xr = x + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) partial[c] += C(xr[c]);
  });
}

template <class T>
void SumSquares<T>::cpu(KernelContext&) const {
  const T* x = this->x;
  *result = block_sum</*kSquares=*/true>(x, n);
}

template <class T>
void SumCols<T>::cpu(KernelContext&) const {
  for_each_row(rows, cols, [&](int64_t r) {
    const T* xr = x + r * cols;
    compute_t<T> total = 0;
#pragma omp simd reduction(+ : total)
    for (int64_t c = 0; c < cols; ++c) total += compute_t<T>(xr[c]);
    out[r] = T(total) * factor;
  });
}

template <class T>
void ExpandCols<T>::cpu(KernelContext&) const {
  for_each_row(rows, cols, [&](int64_t r) {
    T* outr = out + r * cols;
    const T value = T(x[r] * factor);
    for (int64_t c = 0; c < cols; ++c) outr[c] = value;
  });
}

template <class T>
void Transpose<T>::cpu(KernelContext&) const {
  for (int64_t b = 0; b < batch; ++b) {
    const T* xb = x + b * rows * cols;
    T* ob = out + b * rows * cols;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) ob[j * rows + i] = xb[i * cols + j];
  }
}

FUSELAB_ELEMENTWISE_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

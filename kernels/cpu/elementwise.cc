#include "kernels/cpu/elementwise.h"

#include <algorithm>

#include "kernels/cpu/activation_spans.h"
#include "kernels/cpu/partial_sums.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {
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
      for (int64_t c = 0; c < cols; ++c) outr[c] = op(ar[c], s);
    } else {
      const T* br = broadcast == Broadcast::Row ? b : b + r * cols;
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) outr[c] = op(ar[c], br[c]);
    }
  });
}

}  // namespace

template <class T>
void binary(BinaryOp op, const T* a, const T* b, T* out, int64_t rows, int64_t cols, Broadcast broadcast) {
  switch (op) {
    case BinaryOp::Add: return binary_with<T>([](T x, T y) { return x + y; }, a, b, out, rows, cols, broadcast);
    case BinaryOp::Sub: return binary_with<T>([](T x, T y) { return x - y; }, a, b, out, rows, cols, broadcast);
    case BinaryOp::Mul: return binary_with<T>([](T x, T y) { return x * y; }, a, b, out, rows, cols, broadcast);
    case BinaryOp::Div: return binary_with<T>([](T x, T y) { return x / y; }, a, b, out, rows, cols, broadcast);
  }
}

template <class T>
void expand(const T* x, const StridedIndex& src, T* out, int64_t n) {
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) out[i] = x[src.offset(i)];
}

template <class T>
void sum_broadcast(const T* grad, const StridedIndex& kept, const StridedIndex& summed, int64_t count, T* out,
                   int64_t n) {
#pragma omp parallel for if (n * count > kParallelGrain)
  for (int64_t j = 0; j < n; ++j) {
    const T* base = grad + kept.offset(j);
    compute_t<T> sum = 0;
    for (int64_t k = 0; k < count; ++k) sum += compute_t<T>(base[summed.offset(k)]);
    out[j] = T(sum);
  }
}

template <class T>
void scale(const T* x, compute_t<T> alpha, T* out, int64_t n) {
#pragma omp parallel for simd if (parallel : n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) out[i] = T(alpha * compute_t<T>(x[i]));
}

template <class T>
void axpy(compute_t<T> alpha, const T* x, T* y, int64_t n) {
#pragma omp parallel for simd if (parallel : n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) y[i] = T(compute_t<T>(y[i]) + alpha * compute_t<T>(x[i]));
}

// sum_i term(i) over [0, n): blocks of 4096 terms, each summed in double (accurate for millions
// of float32 terms), the block sums added in a fixed order.
template <class Term>
double block_sum(int64_t n, Term&& term) {
  constexpr int64_t kBlock = 4096;
  double total = 0;
  parallel_partial_sums<double>((n + kBlock - 1) / kBlock, 1, n > kParallelGrain, &total, false,
                                [&](int64_t block, double* partial) {
                                  const int64_t end = std::min(n, (block + 1) * kBlock);
                                  double sum = 0;
#pragma omp simd reduction(+ : sum)
                                  for (int64_t i = block * kBlock; i < end; ++i) sum += term(i);
                                  partial[0] += sum;
                                });
  return total;
}

template <class T>
T sum_all(const T* x, int64_t n) {
  return T(block_sum(n, [x](int64_t i) { return double(x[i]); }));
}

template <class T>
double sum_squares(const T* x, int64_t n) {
  return block_sum(n, [x](int64_t i) { return double(x[i]) * double(x[i]); });
}

template <class T>
void sum_rows(const T* x, int64_t rows, int64_t cols, T* out, bool accumulate) {
  using C = compute_t<T>;
  parallel_partial_sums<C>(rows, cols, rows * cols > kParallelGrain, out, accumulate, [&](int64_t r, C* partial) {
    const T* xr = x + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) partial[c] += C(xr[c]);
  });
}

template <class T>
void sum_cols(const T* x, int64_t rows, int64_t cols, T* out) {
  for_each_row(rows, cols, [&](int64_t r) {
    const T* xr = x + r * cols;
    compute_t<T> total = 0;
#pragma omp simd reduction(+ : total)
    for (int64_t c = 0; c < cols; ++c) total += compute_t<T>(xr[c]);
    out[r] = T(total);
  });
}

template <class T>
void activation_forward(Activation act, const T* x, T* y, int64_t n) {
  with_activation(act, [&](auto math) {
    parallel_spans(n, [&](int64_t begin, int64_t end) {
      activation_span<T, decltype(math)>(x + begin, y + begin, end - begin);
    });
  });
}

template <class T>
void activation_backward(Activation act, const T* x, const T* dy, T* dx, int64_t n) {
  with_activation(act, [&](auto math) {
    parallel_spans(n, [&](int64_t begin, int64_t end) {
      activation_grad_span<T, decltype(math)>(x + begin, dy + begin, dx + begin, end - begin);
    });
  });
}

template <class T>
void transpose(const T* x, T* out, int64_t batch, int64_t rows, int64_t cols) {
  for (int64_t b = 0; b < batch; ++b) {
    const T* xb = x + b * rows * cols;
    T* ob = out + b * rows * cols;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) ob[j * rows + i] = xb[i * cols + j];
  }
}

#define FUSELAB_INSTANTIATE(T)                                                                   \
  template void binary<T>(BinaryOp, const T*, const T*, T*, int64_t, int64_t, Broadcast);        \
  template void expand<T>(const T*, const StridedIndex&, T*, int64_t);                           \
  template void sum_broadcast<T>(const T*, const StridedIndex&, const StridedIndex&, int64_t, T*,  \
                                 int64_t);                                                       \
  template void scale<T>(const T*, compute_t<T>, T*, int64_t);                                  \
  template void axpy<T>(compute_t<T>, const T*, T*, int64_t);                                    \
  template T sum_all<T>(const T*, int64_t);                                                      \
  template double sum_squares<T>(const T*, int64_t);                                             \
  template void sum_rows<T>(const T*, int64_t, int64_t, T*, bool);                               \
  template void sum_cols<T>(const T*, int64_t, int64_t, T*);                                     \
  template void activation_forward<T>(Activation, const T*, T*, int64_t);                        \
  template void activation_backward<T>(Activation, const T*, const T*, T*, int64_t);             \
  template void transpose<T>(const T*, T*, int64_t, int64_t, int64_t);
FUSELAB_INSTANTIATE(float)
FUSELAB_INSTANTIATE(double)
FUSELAB_INSTANTIATE(bfloat16)
#undef FUSELAB_INSTANTIATE

}  // namespace fuselab::kernels::cpu

// CUDA elementwise kernels: grid-stride loops, one element per thread per step.
#include "kernels/cuda/elementwise.h"

#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/cuda_check.h"

namespace fuselab::kernels::cuda {
namespace {

template <class T>
__device__ T apply(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    default: return a / b;
  }
}

template <class T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T* out, int64_t n, int64_t cols,
                              Broadcast broadcast) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) {
    const T rhs = broadcast == Broadcast::None ? b[i] : broadcast == Broadcast::Row ? b[i % cols] : b[0];
    out[i] = apply(op, a[i], rhs);
  }
}

template <class T>
__global__ void scale_kernel(const T* x, T alpha, T* out, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) out[i] = alpha * x[i];
}

template <class T>
__global__ void axpy_kernel(T alpha, const T* x, T* y, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) y[i] += alpha * x[i];
}

template <class T, class Math>
__global__ void activation_forward_kernel(const T* x, T* y, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) y[i] = Math::forward(x[i]);
}

template <class T, class Math>
__global__ void activation_backward_kernel(const T* x, const T* dy, T* dx, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) dx[i] = dy[i] * Math::grad(x[i]);
}

}  // namespace

template <class T>
void binary(BinaryOp op, const T* a, const T* b, T* out, int64_t rows, int64_t cols, Broadcast broadcast, int device) {
  const int64_t n = rows * cols;
  if (n == 0) return;
  use_device(device);
  binary_kernel<T><<<blocks_for(n), kThreads>>>(op, a, b, out, n, cols, broadcast);
  check_launch("binary_kernel");
}

template <class T>
void scale(const T* x, T alpha, T* out, int64_t n, int device) {
  if (n == 0) return;
  use_device(device);
  scale_kernel<T><<<blocks_for(n), kThreads>>>(x, alpha, out, n);
  check_launch("scale_kernel");
}

template <class T>
void axpy(T alpha, const T* x, T* y, int64_t n, int device) {
  if (n == 0) return;
  use_device(device);
  axpy_kernel<T><<<blocks_for(n), kThreads>>>(alpha, x, y, n);
  check_launch("axpy_kernel");
}

template <class T>
void activation_forward(Activation act, const T* x, T* y, int64_t n, int device) {
  if (n == 0) return;
  use_device(device);
  with_activation(act, [&](auto math) {
    activation_forward_kernel<T, decltype(math)><<<blocks_for(n), kThreads>>>(x, y, n);
  });
  check_launch("activation_forward_kernel");
}

template <class T>
void activation_backward(Activation act, const T* x, const T* dy, T* dx, int64_t n, int device) {
  if (n == 0) return;
  use_device(device);
  with_activation(act, [&](auto math) {
    activation_backward_kernel<T, decltype(math)><<<blocks_for(n), kThreads>>>(x, dy, dx, n);
  });
  check_launch("activation_backward_kernel");
}

int64_t sum_rows_scratch(int64_t rows, int64_t cols) { return column_sums_scratch(rows, cols); }

template <class T>
void sum_rows(const T* x, int64_t rows, int64_t cols, T* out, T* scratch, int device) {
  use_device(device);
  column_sums(Elements<T>{x, cols}, rows, cols, out, scratch);
}

FUSELAB_CUDA_ELEMENTWISE_INSTANTIATE(float)
FUSELAB_CUDA_ELEMENTWISE_INSTANTIATE(double)

}  // namespace fuselab::kernels::cuda

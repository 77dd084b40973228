// RMSNorm kernels: one block per row, the row's sums by block_sum (see norms.h for the math).
#include "kernels/cuda/norms.h"

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/cuda_check.h"

namespace fuselab::kernels::cuda {
namespace {

// Threads per row: enough to keep the row's loads in flight, no more than the row needs.
int threads_for(int64_t cols) {
  int threads = 32;
  while (threads < 512 && threads * 4 < cols) threads *= 2;
  return threads;
}

template <class T>
__global__ void rmsnorm_forward_kernel(const T* x, const T* w, T* y, T* rstd, int64_t cols, T eps) {
  __shared__ T shared[32];
  const T* xr = x + blockIdx.x * cols;
  T* yr = y + blockIdx.x * cols;
  T sum_squares = T(0);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum_squares += xr[j] * xr[j];
  const T r = T(1) / sqrt(block_sum(sum_squares, shared) / T(cols) + eps);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = xr[j] * r * w[j];
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

// dx = rstd * (g - xhat * mean_j(g_j xhat_j)) (+ residual_grad), g = dy * w, xhat = x * rstd
template <class T>
__global__ void rmsnorm_input_grad_kernel(const T* x, const T* w, const T* rstd, const T* dy, const T* residual_grad,
                                          T* dx, int64_t cols) {
  __shared__ T shared[32];
  const int64_t offset = blockIdx.x * cols;
  const T r = rstd[blockIdx.x];
  T dot = T(0);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) dot += dy[offset + j] * w[j] * (x[offset + j] * r);
  const T mean_dot = block_sum(dot, shared) / T(cols);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const T g = dy[offset + j] * w[j], xhat = x[offset + j] * r;
    const T grad = r * (g - xhat * mean_dot);
    dx[offset + j] = residual_grad ? grad + residual_grad[offset + j] : grad;
  }
}

// value(r, c) = dy[r, c] * xhat[r, c]: dw is its column sums.
template <class T>
struct WeightGradTerms {
  const T *x, *rstd, *dy;
  int64_t cols;
  __device__ T operator()(int64_t r, int64_t c) const { return dy[r * cols + c] * (x[r * cols + c] * rstd[r]); }
};

}  // namespace

template <class T>
void rmsnorm_forward(const T* x, const T* w, T* y, T* rstd, int64_t rows, int64_t cols, T eps, int device) {
  if (rows == 0) return;
  use_device(device);
  rmsnorm_forward_kernel<T><<<unsigned(rows), threads_for(cols)>>>(x, w, y, rstd, cols, eps);
  check_launch("rmsnorm_forward_kernel");
}

int64_t rmsnorm_backward_scratch(int64_t rows, int64_t cols) { return column_sums_scratch(rows, cols); }

template <class T>
void rmsnorm_backward(const T* x, const T* w, const T* rstd, const T* dy, const T* residual_grad, T* dx, T* dw,
                      T* scratch, int64_t rows, int64_t cols, int device) {
  use_device(device);
  if (dx != nullptr && rows > 0) {
    rmsnorm_input_grad_kernel<T><<<unsigned(rows), threads_for(cols)>>>(x, w, rstd, dy, residual_grad, dx, cols);
    check_launch("rmsnorm_input_grad_kernel");
  }
  if (dw != nullptr) column_sums(WeightGradTerms<T>{x, rstd, dy, cols}, rows, cols, dw, scratch);
}

FUSELAB_CUDA_NORMS_INSTANTIATE(float)
FUSELAB_CUDA_NORMS_INSTANTIATE(double)

}  // namespace fuselab::kernels::cuda

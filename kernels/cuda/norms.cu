// RMSNorm and LayerNorm kernels: one block per row, the row's sums by block_sum (see norms.h for
// the math); the weight and bias grads by the two-level column sums.
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

template <class T>
__global__ void layernorm_forward_kernel(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t cols,
                                         T eps) {
  __shared__ T shared[32];
  const T* xr = x + blockIdx.x * cols;
  T* yr = y + blockIdx.x * cols;
  T total = T(0);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) total += xr[j];
  const T mu = block_sum(total, shared) / T(cols);
  T var = T(0);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) var += (xr[j] - mu) * (xr[j] - mu);
  const T s = T(1) / sqrt(block_sum(var, shared) / T(cols) + eps);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = (xr[j] - mu) * s * w[j] + b[j];
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = mu;
    rstd[blockIdx.x] = s;
  }
}

// dx = rstd * (g - mean_j g_j - xhat * mean_j(g_j xhat_j)), g = dy * w, xhat = (x - mu) * rstd
template <class T>
__global__ void layernorm_input_grad_kernel(const T* x, const T* w, const T* mean, const T* rstd, const T* dy, T* dx,
                                            int64_t cols) {
  __shared__ T shared[32];
  const int64_t offset = blockIdx.x * cols;
  const T mu = mean[blockIdx.x], s = rstd[blockIdx.x];
  T sum_g = T(0), sum_g_xhat = T(0);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const T g = dy[offset + j] * w[j];
    sum_g += g;
    sum_g_xhat += g * (x[offset + j] - mu) * s;
  }
  const T mean_g = block_sum(sum_g, shared) / T(cols);
  const T mean_g_xhat = block_sum(sum_g_xhat, shared) / T(cols);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const T xhat = (x[offset + j] - mu) * s;
    dx[offset + j] = s * (dy[offset + j] * w[j] - mean_g - xhat * mean_g_xhat);
  }
}

// value(r, c) = dy[r, c] * xhat[r, c] with LayerNorm's xhat: dw is its column sums.
template <class T>
struct CenteredWeightGradTerms {
  const T *x, *mean, *rstd, *dy;
  int64_t cols;
  __device__ T operator()(int64_t r, int64_t c) const {
    return dy[r * cols + c] * ((x[r * cols + c] - mean[r]) * rstd[r]);
  }
};

}  // namespace

template <class T>
void rmsnorm_forward(const T* x, const T* w, T* y, T* rstd, int64_t rows, int64_t cols, T eps, int device) {
  if (rows == 0) return;
  use_device(device);
  rmsnorm_forward_kernel<T><<<unsigned(rows), threads_for(cols)>>>(x, w, y, rstd, cols, eps);
  check_launch("rmsnorm_forward_kernel");
}

int64_t norm_backward_scratch(int64_t rows, int64_t cols) { return column_sums_scratch(rows, cols); }

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

template <class T>
void layernorm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t rows, int64_t cols, T eps,
                       int device) {
  if (rows == 0) return;
  use_device(device);
  layernorm_forward_kernel<T><<<unsigned(rows), threads_for(cols)>>>(x, w, b, y, mean, rstd, cols, eps);
  check_launch("layernorm_forward_kernel");
}

// The column sums run one after the other on the same stream, so they can share `scratch`.
template <class T>
void layernorm_backward(const T* x, const T* w, const T* mean, const T* rstd, const T* dy, T* dx, T* dw, T* db,
                        T* scratch, int64_t rows, int64_t cols, int device) {
  use_device(device);
  if (dx != nullptr && rows > 0) {
    layernorm_input_grad_kernel<T><<<unsigned(rows), threads_for(cols)>>>(x, w, mean, rstd, dy, dx, cols);
    check_launch("layernorm_input_grad_kernel");
  }
  if (dw != nullptr) column_sums(CenteredWeightGradTerms<T>{x, mean, rstd, dy, cols}, rows, cols, dw, scratch);
  if (db != nullptr) column_sums(Elements<T>{dy, cols}, rows, cols, db, scratch);
}

FUSELAB_CUDA_NORMS_INSTANTIATE(float)
FUSELAB_CUDA_NORMS_INSTANTIATE(double)

}  // namespace fuselab::kernels::cuda

#include "kernels/cuda/cross_entropy.h"

#include <cfloat>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"

namespace fuselab::kernels::cuda {
namespace {

template <class T>
__global__ void cross_entropy_forward_kernel(const T* x, const int64_t* labels, T* lse, T* row_loss, int64_t cols,
                                             int64_t ignore_index) {
  __shared__ T shared[32];
  const T* xr = x + blockIdx.x * cols;
  T m = -T(FLT_MAX);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = xr[j] > m ? xr[j] : m;
  m = block_reduce(m, Max{}, -T(FLT_MAX), shared);
  T total = T(0);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) total += exp(xr[j] - m);
  const T row_lse = m + log(block_sum(total, shared));
  if (threadIdx.x == 0) {
    const int64_t label = labels[blockIdx.x];
    lse[blockIdx.x] = row_lse;
    row_loss[blockIdx.x] = label == ignore_index ? T(0) : row_lse - xr[label];
  }
}

template <class T>
__global__ void cross_entropy_backward_kernel(const T* x, const int64_t* labels, const T* lse, T grad_scale, T* dx,
                                              int64_t cols, int64_t ignore_index) {
  const int64_t offset = blockIdx.x * cols, label = labels[blockIdx.x];
  const T row_lse = lse[blockIdx.x];
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const T onehot = j == label ? T(1) : T(0);
    dx[offset + j] = label == ignore_index ? T(0) : (exp(x[offset + j] - row_lse) - onehot) * grad_scale;
  }
}

int threads_for(int64_t cols) { return cols >= 1024 ? 512 : cols >= 256 ? 256 : 64; }

}  // namespace

template <class T>
void cross_entropy_forward(const T* x, const int64_t* labels, T* lse, T* row_loss, int64_t rows, int64_t cols,
                           int64_t ignore_index, int device) {
  if (rows == 0) return;
  use_device(device);
  cross_entropy_forward_kernel<T><<<unsigned(rows), threads_for(cols)>>>(x, labels, lse, row_loss, cols, ignore_index);
  check_launch("cross_entropy_forward_kernel");
}

template <class T>
void cross_entropy_backward(const T* x, const int64_t* labels, const T* lse, T grad_scale, T* dx, int64_t rows,
                            int64_t cols, int64_t ignore_index, int device) {
  if (rows == 0) return;
  use_device(device);
  cross_entropy_backward_kernel<T><<<unsigned(rows), threads_for(cols)>>>(x, labels, lse, grad_scale, dx, cols,
                                                                         ignore_index);
  check_launch("cross_entropy_backward_kernel");
}

FUSELAB_CUDA_CROSS_ENTROPY_INSTANTIATE(float)
FUSELAB_CUDA_CROSS_ENTROPY_INSTANTIATE(double)

}  // namespace fuselab::kernels::cuda

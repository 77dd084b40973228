// The CUDA bodies of kernels/softmax.h: one block per row.
#include <cfloat>
#include <type_traits>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/index_fault.cuh"
#include "kernels/softmax.h"

namespace fuselab::kernels::cuda {
namespace {

// lse of the block's row xr, for every thread of the block, in C = compute_t<T>
// (float32 for bfloat16 rows).
template <class T, class C = compute_t<T>>
__device__ C row_log_sum_exp(const T* xr, int64_t cols, C* shared) {
  C m = -C(FLT_MAX);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = C(xr[j]) > m ? C(xr[j]) : m;
  m = block_reduce(m, Max{}, -C(FLT_MAX), shared);
  C total = C(0);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) total += exp(C(xr[j]) - m);
  return m + log(block_sum(total, shared));
}

template <class T>
__global__ void softmax_forward_kernel(const T* x, T* y, int64_t cols, bool log_output) {
  using C = compute_t<T>;
  __shared__ C shared[32];
  const int64_t offset = blockIdx.x * cols;
  const C lse = row_log_sum_exp(x + offset, cols, shared);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const C xj = C(x[offset + j]);
    y[offset + j] = T(log_output ? xj - lse : exp(xj - lse));
  }
}

template <class T>
__global__ void softmax_backward_kernel(const T* y, const T* dy, T* dx, int64_t cols, bool log_output) {
  using C = compute_t<T>;
  __shared__ C shared[32];
  const int64_t offset = blockIdx.x * cols;
  C sum = C(0);  // sum_j dy_j (log-softmax) or sum_j dy_j y_j (softmax)
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    sum += log_output ? C(dy[offset + j]) : C(dy[offset + j]) * C(y[offset + j]);
  }
  sum = block_sum(sum, shared);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const int64_t i = offset + j;
    const C yi = C(y[i]), dyi = C(dy[i]);
    dx[i] = T(log_output ? dyi - exp(yi) * sum : yi * (dyi - sum));
  }
}

template <class T, class C = compute_t<T>>
__global__ void cross_entropy_forward_kernel(const T* x, const int64_t* labels, C* lse, C* row_loss, C* row_counted,
                                             int64_t cols, int64_t ignore_index, IndexFault* fault) {
  __shared__ C shared[32];
  const T* xr = x + blockIdx.x * cols;
  const C row_lse = row_log_sum_exp(xr, cols, shared);
  if (threadIdx.x == 0) {
    const int64_t label = labels[blockIdx.x];
    const bool counted = label != ignore_index && in_range(label, cols, blockIdx.x, IndexFault::kCrossEntropyLabel, fault);
    lse[blockIdx.x] = row_lse;
    row_loss[blockIdx.x] = counted ? row_lse - C(xr[label]) : C(0);
    row_counted[blockIdx.x] = counted ? C(1) : C(0);
  }
}

// As row_log_sum_exp, but each thread keeps its e^(x_j - m) in the row, so the softmax is e / sum
// with no second exponential (each thread scales the elements it wrote). A bfloat16 row would round
// e before the division: there the exponential is taken again instead.
template <class T, class C = compute_t<T>>
__global__ void cross_entropy_forward_grad_kernel(T* x, const int64_t* labels, C* lse, C* row_loss, C* row_counted,
                                                  int64_t cols, int64_t ignore_index, IndexFault* fault) {
  constexpr bool kKeepsE = std::is_same_v<T, C>;
  __shared__ C shared[32];
  T* xr = x + blockIdx.x * cols;
  const int64_t label = labels[blockIdx.x];
  const bool counts = label != ignore_index && 0 <= label && label < cols;
  const C picked = counts ? C(xr[label]) : C(0);  // every thread reads it before the barrier below
  C m = -C(FLT_MAX);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = C(xr[j]) > m ? C(xr[j]) : m;
  m = block_reduce(m, Max{}, -C(FLT_MAX), shared);  // a barrier: no thread writes the row before it
  C total = C(0);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const C e = exp(C(xr[j]) - m);
    if constexpr (kKeepsE) xr[j] = e;
    total += e;
  }
  total = block_sum(total, shared);
  if (threadIdx.x == 0) {
    const bool counted = label != ignore_index && in_range(label, cols, blockIdx.x, IndexFault::kCrossEntropyLabel, fault);
    lse[blockIdx.x] = m + log(total);
    row_loss[blockIdx.x] = counted ? m + log(total) - picked : C(0);
    row_counted[blockIdx.x] = counted ? C(1) : C(0);
  }
  const C inverse = counts ? C(1) / total : C(0);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const C e = kKeepsE ? C(xr[j]) : exp(C(xr[j]) - m);
    xr[j] = T(e * inverse - (counts && j == label ? C(1) : C(0)));
  }
}

template <class T, class C = compute_t<T>>
__global__ void cross_entropy_backward_kernel(const T* x, const int64_t* labels, const C* lse, const C* dloss,
                                              const C* counted, T* dx, int64_t cols, int64_t ignore_index) {
  const int64_t offset = blockIdx.x * cols, label = labels[blockIdx.x];
  const bool counts = label != ignore_index && 0 <= label && label < cols;  // as the forward counted it
  const C row_lse = lse[blockIdx.x], grad_scale = *dloss / *counted;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const C onehot = j == label ? C(1) : C(0);
    dx[offset + j] = T(counts ? (exp(C(x[offset + j]) - row_lse) - onehot) * grad_scale : C(0));
  }
}

int threads_for(int64_t cols) { return cols >= 1024 ? 512 : cols >= 256 ? 256 : 64; }

}  // namespace

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void SoftmaxForward<T>::cuda(KernelContext& ctx) const {
  if (rows == 0) return;
  use_device(ctx.device);
  softmax_forward_kernel<T><<<unsigned(rows), threads_for(cols)>>>(x, y, cols, log);
  check_launch("softmax_forward_kernel");
}

template <class T>
void SoftmaxBackward<T>::cuda(KernelContext& ctx) const {
  if (rows == 0) return;
  use_device(ctx.device);
  softmax_backward_kernel<T><<<unsigned(rows), threads_for(cols)>>>(y, dy, dx, cols, log);
  check_launch("softmax_backward_kernel");
}

template <class T>
void CrossEntropyForward<T>::cuda(KernelContext& ctx) const {
  if (rows == 0) return;
  use_device(ctx.device);
  cross_entropy_forward_kernel<T>
      <<<unsigned(rows), threads_for(cols)>>>(x, labels, lse, row_loss, row_counted, cols, ignore_index, fault);
  check_launch("cross_entropy_forward_kernel");
}

template <class T>
void CrossEntropyForwardGrad<T>::cuda(KernelContext& ctx) const {
  if (rows == 0) return;
  use_device(ctx.device);
  cross_entropy_forward_grad_kernel<T>
      <<<unsigned(rows), threads_for(cols)>>>(x, labels, lse, row_loss, row_counted, cols, ignore_index, fault);
  check_launch("cross_entropy_forward_grad_kernel");
}

template <class T>
void CrossEntropyBackward<T>::cuda(KernelContext& ctx) const {
  if (rows == 0) return;
  use_device(ctx.device);
  cross_entropy_backward_kernel<T>
      <<<unsigned(rows), threads_for(cols)>>>(x, labels, lse, dloss, counted, dx, cols, ignore_index);
  check_launch("cross_entropy_backward_kernel");
}

FUSELAB_SOFTMAX_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels

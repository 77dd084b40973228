// The CUDA bodies of kernels/channel_bias.h, and the fused convolution's epilogue.
#include "kernels/channel_bias.h"

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/channel_bias.h"
#include "kernels/cuda/cuda_check.h"

namespace fuselab::kernels::cuda {
namespace {

// The channel of flat element i of [batch, channels, plane].
__device__ inline int64_t channel_of(int64_t i, int64_t channels, int64_t plane) { return (i / plane) % channels; }

template <class T>
__global__ void channel_bias_kernel(const T* x, const T* b, T* y, int64_t n, int64_t channels, int64_t plane) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) y[i] = x[i] + b[channel_of(i, channels, plane)];
}

template <class T, class Math>
__global__ void channel_bias_activation_kernel(const T* b, T* y, T* pre, int64_t n, int64_t channels,
                                               int64_t plane) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) {
    const T value = y[i] + b[channel_of(i, channels, plane)];
    if (pre) pre[i] = value;
    y[i] = Math::forward(value);
  }
}

// Block k sums channel k: its threads stride over the batch * plane elements, then reduce.
template <class T>
__global__ void channel_bias_grad_kernel(const T* dy, T* db, int64_t batch, int64_t channels, int64_t plane) {
  __shared__ T shared[32];
  const int64_t k = blockIdx.x;
  T sum = 0;
  for (int64_t j = threadIdx.x; j < batch * plane; j += blockDim.x) {
    sum += dy[((j / plane) * channels + k) * plane + j % plane];
  }
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) db[k] = sum;
}

}  // namespace

template <class T>
void channel_bias_activation_forward(Activation act, const T* b, T* y, T* pre, int64_t batch, int64_t channels,
                                     int64_t plane, int device) {
  const int64_t n = batch * channels * plane;
  if (n == 0) return;
  use_device(device);
  with_activation(act, [&](auto math) {
    channel_bias_activation_kernel<T, decltype(math)><<<blocks_for(n), kThreads>>>(b, y, pre, n, channels, plane);
  });
  check_launch("channel_bias_activation_kernel");
}

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void ChannelBiasForward<T>::cuda(KernelContext& ctx) const {
  const int64_t n = batch * channels * plane;
  if (n == 0) return;
  use_device(ctx.device);
  channel_bias_kernel<T><<<blocks_for(n), kThreads>>>(x, b, y, n, channels, plane);
  check_launch("channel_bias_kernel");
}

template <class T>
void ChannelBiasGrad<T>::cuda(KernelContext& ctx) const {
  if (channels == 0) return;
  use_device(ctx.device);
  channel_bias_grad_kernel<T><<<int(channels), kThreads>>>(dy, db, batch, channels, plane);
  check_launch("channel_bias_grad_kernel");
}

FUSELAB_CHANNEL_BIAS_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels

namespace fuselab::kernels::cuda {
template void channel_bias_activation_forward<float>(Activation, const float*, float*, float*, int64_t, int64_t,
                                                     int64_t, int);
template void channel_bias_activation_forward<double>(Activation, const double*, double*, double*, int64_t, int64_t,
                                                      int64_t, int);
}  // namespace fuselab::kernels::cuda

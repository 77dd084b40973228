// CUDA elementwise kernels: grid-stride loops, one element per thread per step. Elements are
// widened to compute_t<T> (float32 for bfloat16), computed, and rounded once on store.
// The CUDA bodies of kernels/elementwise.h: one thread per element, and the column sums in
// scratch (kernels/cuda/column_sums.cuh).
#include "kernels/elementwise.h"

#include "kernels/cuda/elementwise.h"

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/cuda_check.h"

namespace fuselab::kernels::cuda {
namespace {

template <class C>
__device__ C apply(BinaryOp op, C a, C b) {
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
    using C = compute_t<T>;
    const C rhs = C(broadcast == Broadcast::None ? b[i] : broadcast == Broadcast::Row ? b[i % cols] : b[0]);
    out[i] = T(apply(op, C(a[i]), rhs));
  }
}

template <class T>
__global__ void fill_kernel(const T* scalar, compute_t<T> value, T* out, int64_t n) {
  using C = compute_t<T>;
  const T v = scalar ? T(C(*scalar) * value) : T(value);
  FUSELAB_GRID_STRIDE_LOOP(i, n) out[i] = v;
}

template <class T>
__global__ void expand_kernel(const T* x, StridedIndex src, T* out, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) out[i] = x[src.offset(i)];
}

template <class T>
__global__ void sum_broadcast_kernel(const T* grad, StridedIndex kept, StridedIndex summed, int64_t count, T* out,
                                     int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(j, n) {
    const T* base = grad + kept.offset(j);
    compute_t<T> sum = 0;
    for (int64_t k = 0; k < count; ++k) sum += compute_t<T>(base[summed.offset(k)]);
    out[j] = T(sum);
  }
}

template <class T>
__global__ void scale_kernel(const T* x, compute_t<T> alpha, T* out, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) out[i] = T(alpha * compute_t<T>(x[i]));
}

template <class T>
__global__ void axpy_kernel(compute_t<T> alpha, const T* x, T* y, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) y[i] = T(compute_t<T>(y[i]) + alpha * compute_t<T>(x[i]));
}

template <class T, class Math>
__global__ void activation_forward_kernel(const T* x, T* y, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) y[i] = T(Math::forward(compute_t<T>(x[i])));
}

template <class T, class Math>
__global__ void activation_backward_kernel(const T* x, const T* dy, T* dx, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) dx[i] = T(compute_t<T>(dy[i]) * Math::grad(compute_t<T>(x[i])));
}

// out[b, j, i] = x[b, i, j] through a 32 x 32 tile in shared memory, so that both the reads of x
// and the writes of out are coalesced; the tile's extra column keeps the column reads free of
// shared-memory bank conflicts. Blocks are 32 x 8 threads, each thread moving 4 elements.
constexpr int kTile = 32, kTileRows = 8;
template <class T>
__global__ void transpose_kernel(const T* x, T* out, int64_t rows, int64_t cols) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t plane = rows * cols;
  x += blockIdx.z * plane;
  out += blockIdx.z * plane;
  const int64_t row0 = int64_t(blockIdx.y) * kTile, col0 = int64_t(blockIdx.x) * kTile;
  for (int dy = threadIdx.y; dy < kTile; dy += kTileRows) {
    const int64_t r = row0 + dy, c = col0 + threadIdx.x;
    if (r < rows && c < cols) tile[dy][threadIdx.x] = x[r * cols + c];
  }
  __syncthreads();
  for (int dy = threadIdx.y; dy < kTile; dy += kTileRows) {
    const int64_t c = col0 + dy, r = row0 + threadIdx.x;  // out is [cols, rows]
    if (c < cols && r < rows) out[c * rows + r] = tile[threadIdx.x][dy];
  }
}

template <class T>
__global__ void sum_cols_kernel(const T* x, int64_t cols, T factor, T* out) {
  __shared__ T shared[32];
  const T* row = x + blockIdx.x * cols;
  T sum = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += row[c];
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) out[blockIdx.x] = factor * sum;
}

constexpr int kSumBlocks = 256;

// partial[block] = sum of x[i]^2 over the block's grid-stride elements, in double.
template <class T>
__global__ void sum_squares_kernel(const T* x, int64_t n, double* partial) {
  __shared__ double shared[32];
  double sum = 0;
  FUSELAB_GRID_STRIDE_LOOP(i, n) sum += double(x[i]) * double(x[i]);
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

// *total = partial[0] + partial[1] + ... in that order.
__global__ void sum_in_order_kernel(const double* partial, int count, double* total) {
  double sum = 0;
  for (int b = 0; b < count; ++b) sum += partial[b];
  *total = sum;
}

template <class T>
__global__ void expand_cols_kernel(const T* x, int64_t n, int64_t cols, T factor, T* out) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) out[i] = factor * x[i / cols];
}

}  // namespace

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void Binary<T>::cuda(KernelContext& ctx) const {
  binary<T>(op, a, b, out, rows, cols, broadcast, ctx.device);
}

template <class T>
void Expand<T>::cuda(KernelContext& ctx) const {
  if (n == 0) return;
  use_device(ctx.device);
  expand_kernel<T><<<blocks_for(n), kThreads>>>(x, src, out, n);
  check_launch("expand_kernel");
}

template <class T>
void SumBroadcast<T>::cuda(KernelContext& ctx) const {
  if (n == 0) return;
  use_device(ctx.device);
  sum_broadcast_kernel<T><<<blocks_for(n), kThreads>>>(grad, kept, summed, count, out, n);
  check_launch("sum_broadcast_kernel");
}

template <class T>
void Fill<T>::cuda(KernelContext& ctx) const {
  if (n == 0) return;
  use_device(ctx.device);
  if (!scalar && is_zero_bytes(T(value))) {
    check_cuda(cudaMemset(out, 0, size_t(n) * sizeof(T)), "cudaMemset");
    return;
  }
  fill_kernel<T><<<blocks_for(n), kThreads>>>(scalar, value, out, n);
  check_launch("fill_kernel");
}

template <class T>
void Scale<T>::cuda(KernelContext& ctx) const {
  scale<T>(x, alpha, out, n, ctx.device);
}

template <class T>
void Axpy<T>::cuda(KernelContext& ctx) const {
  if (n == 0) return;
  use_device(ctx.device);
  axpy_kernel<T><<<blocks_for(n), kThreads>>>(alpha, x, y, n);
  check_launch("axpy_kernel");
}

template <class T>
void ActivationForward<T>::cuda(KernelContext& ctx) const {
  if (n == 0) return;
  use_device(ctx.device);
  with_activation(act, [&](auto math) {
    activation_forward_kernel<T, decltype(math)><<<blocks_for(n), kThreads>>>(x, y, n);
  });
  check_launch("activation_forward_kernel");
}

template <class T>
void ActivationBackward<T>::cuda(KernelContext& ctx) const {
  activation_backward<T>(act, x, dy, dx, n, ctx.device);
}

template <class T>
void SumRows<T>::cuda(KernelContext& ctx) const {
  use_device(ctx.device);
  column_sums(Elements<T>{x, cols}, rows, cols, out, ctx.scratch<compute_t<T>>(column_sums_scratch(rows, cols)));
}

// Block partials, then their sum in block order by one thread: deterministic, and on the device.
template <class T>
void SumSquares<T>::cuda(KernelContext& ctx) const {
  use_device(ctx.device);
  double* partial = ctx.scratch<double>(kSumBlocks);
  sum_squares_kernel<T><<<kSumBlocks, kThreads>>>(x, n, partial);
  check_launch("sum_squares_kernel");
  sum_in_order_kernel<<<1, 1>>>(partial, kSumBlocks, result);
  check_launch("sum_in_order_kernel");
}

template <class T>
void Transpose<T>::cuda(KernelContext& ctx) const {
  if (batch * rows * cols == 0) return;
  const int64_t tiles_x = (cols + kTile - 1) / kTile, tiles_y = (rows + kTile - 1) / kTile;
  if (tiles_y > 65535 || batch > 65535 || tiles_x > 2147483647) {
    throw std::runtime_error("transpose_kernel: " + std::to_string(batch) + " x " + std::to_string(rows) + " x " +
                             std::to_string(cols) + " exceeds the grid's limits");
  }
  use_device(ctx.device);
  transpose_kernel<T><<<dim3(unsigned(tiles_x), unsigned(tiles_y), unsigned(batch)), dim3(kTile, kTileRows)>>>(
      x, out, rows, cols);
  check_launch("transpose_kernel");
}

template <class T>
void SumCols<T>::cuda(KernelContext& ctx) const {
  if (rows == 0) return;
  if (rows > 2147483647) throw std::runtime_error("sum_cols_kernel: " + std::to_string(rows) + " rows exceed the grid");
  use_device(ctx.device);
  sum_cols_kernel<T><<<unsigned(rows), kThreads>>>(x, cols, factor, out);
  check_launch("sum_cols_kernel");
}

template <class T>
void ExpandCols<T>::cuda(KernelContext& ctx) const {
  const int64_t n = rows * cols;
  if (n == 0) return;
  use_device(ctx.device);
  expand_cols_kernel<T><<<blocks_for(n), kThreads>>>(x, n, cols, factor, out);
  check_launch("expand_cols_kernel");
}

FUSELAB_ELEMENTWISE_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels

namespace fuselab::kernels::cuda {

template <class T>
void binary(BinaryOp op, const T* a, const T* b, T* out, int64_t rows, int64_t cols, Broadcast broadcast, int device) {
  const int64_t n = rows * cols;
  if (n == 0) return;
  use_device(device);
  binary_kernel<T><<<blocks_for(n), kThreads>>>(op, a, b, out, n, cols, broadcast);
  check_launch("binary_kernel");
}

template <class T>
void scale(const T* x, compute_t<T> alpha, T* out, int64_t n, int device) {
  if (n == 0) return;
  use_device(device);
  scale_kernel<T><<<blocks_for(n), kThreads>>>(x, alpha, out, n);
  check_launch("scale_kernel");
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

template void binary<float>(BinaryOp, const float*, const float*, float*, int64_t, int64_t, Broadcast, int);
template void binary<double>(BinaryOp, const double*, const double*, double*, int64_t, int64_t, Broadcast, int);
template void binary<bfloat16>(BinaryOp, const bfloat16*, const bfloat16*, bfloat16*, int64_t, int64_t, Broadcast,
                               int);
template void scale<float>(const float*, float, float*, int64_t, int);
template void scale<double>(const double*, double, double*, int64_t, int);
template void scale<bfloat16>(const bfloat16*, float, bfloat16*, int64_t, int);
template void activation_backward<float>(Activation, const float*, const float*, float*, int64_t, int);
template void activation_backward<double>(Activation, const double*, const double*, double*, int64_t, int);
template void activation_backward<bfloat16>(Activation, const bfloat16*, const bfloat16*, bfloat16*, int64_t, int);

}  // namespace fuselab::kernels::cuda

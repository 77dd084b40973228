// CUDA elementwise kernels: grid-stride loops, one element per thread per step.
#include "kernels/cuda/elementwise.h"

#include "kernels/cuda/cuda_check.h"

namespace fuselab::kernels::cuda {
namespace {

#define GRID_STRIDE_LOOP(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(blockDim.x) * gridDim.x)

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
  GRID_STRIDE_LOOP(i, n) {
    const T rhs = broadcast == Broadcast::None ? b[i] : broadcast == Broadcast::Row ? b[i % cols] : b[0];
    out[i] = apply(op, a[i], rhs);
  }
}

template <class T>
__global__ void scale_kernel(const T* x, T alpha, T* out, int64_t n) {
  GRID_STRIDE_LOOP(i, n) out[i] = alpha * x[i];
}

template <class T>
__global__ void axpy_kernel(T alpha, const T* x, T* y, int64_t n) {
  GRID_STRIDE_LOOP(i, n) y[i] += alpha * x[i];
}

template <class T, class Math>
__global__ void activation_forward_kernel(const T* x, T* y, int64_t n) {
  GRID_STRIDE_LOOP(i, n) y[i] = Math::forward(x[i]);
}

template <class T, class Math>
__global__ void activation_backward_kernel(const T* x, const T* dy, T* dx, int64_t n) {
  GRID_STRIDE_LOOP(i, n) dx[i] = dy[i] * Math::grad(x[i]);
}

// Column sums, first level: block (32, 8) sums 32 columns over one chunk of rows; threads of a
// column step through the chunk 8 rows apart, and thread row 0 adds the 8 partials in order.
//   partial[chunk, c] = sum over r in chunk of x[r, c]
constexpr int kColumnsPerBlock = 32, kRowThreads = 8;
constexpr int64_t kRowsPerChunk = 256;

template <class T>
__global__ void column_sums_kernel(const T* x, int64_t rows, int64_t cols, int64_t rows_per_chunk, T* partial) {
  __shared__ T sums[kRowThreads][kColumnsPerBlock + 1];
  const int64_t c = blockIdx.x * int64_t(kColumnsPerBlock) + threadIdx.x;
  const int64_t begin = blockIdx.y * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  T sum = T(0);
  if (c < cols) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowThreads) sum += x[r * cols + c];
  }
  sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    T total = T(0);
    for (int k = 0; k < kRowThreads; ++k) total += sums[k][threadIdx.x];
    partial[blockIdx.y * cols + c] = total;
  }
}

// At most kMaxChunks chunks of at least kRowsPerChunk rows, so the second level is one chunk.
constexpr int64_t kMaxChunks = 256;

int64_t rows_per_chunk(int64_t rows) {
  const int64_t even = (rows + kMaxChunks - 1) / kMaxChunks;
  return even > kRowsPerChunk ? even : kRowsPerChunk;
}

int64_t chunks_for(int64_t rows) {
  const int64_t chunks = (rows + rows_per_chunk(rows) - 1) / rows_per_chunk(rows);
  return chunks < 1 ? 1 : chunks;
}

template <class T>
void launch_column_sums(const T* x, int64_t rows, int64_t cols, T* out) {
  const dim3 grid(unsigned((cols + kColumnsPerBlock - 1) / kColumnsPerBlock), unsigned(chunks_for(rows)));
  column_sums_kernel<T><<<grid, dim3(kColumnsPerBlock, kRowThreads)>>>(x, rows, cols, rows_per_chunk(rows), out);
  check_launch("column_sums_kernel");
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

int64_t sum_rows_scratch(int64_t rows, int64_t cols) { return chunks_for(rows) * cols; }

// Two levels, no atomics: chunk partials into scratch, then the partials' column sums.
template <class T>
void sum_rows(const T* x, int64_t rows, int64_t cols, T* out, T* scratch, int device) {
  if (cols == 0) return;
  use_device(device);
  if (chunks_for(rows) == 1) return launch_column_sums(x, rows, cols, out);
  launch_column_sums(x, rows, cols, scratch);
  launch_column_sums(scratch, chunks_for(rows), cols, out);
}

#define INSTANTIATE(T)                                                                                      \
  template void binary<T>(BinaryOp, const T*, const T*, T*, int64_t, int64_t, Broadcast, int);             \
  template void scale<T>(const T*, T, T*, int64_t, int);                                                    \
  template void axpy<T>(T, const T*, T*, int64_t, int);                                                     \
  template void activation_forward<T>(Activation, const T*, T*, int64_t, int);                              \
  template void activation_backward<T>(Activation, const T*, const T*, T*, int64_t, int);                   \
  template void sum_rows<T>(const T*, int64_t, int64_t, T*, T*, int);
INSTANTIATE(float)
INSTANTIATE(double)

}  // namespace fuselab::kernels::cuda

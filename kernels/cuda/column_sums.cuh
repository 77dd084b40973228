// Column sums of a [rows, cols] matrix whose elements a functor computes (nvcc only):
//
//   out[c] = sum_r value(r, c)
//
// Two levels and no atomics, so the order of additions is fixed and the result deterministic:
// blocks of (32 columns x 8 row threads) sum chunks of rows into partial[chunk, c], then the
// same kernel sums the partials. There are at most kMaxChunks chunks, so two levels suffice.
// Sums and partials are in compute_t<T> (float32 for bfloat16); out is rounded to T once.
#pragma once

#include <cstdint>

#include "kernels/bfloat16.h"
#include "kernels/cuda/cuda_check.h"

namespace fuselab::kernels::cuda {

constexpr int kColumnsPerBlock = 32, kRowThreadsPerColumn = 8;
constexpr int64_t kMinRowsPerChunk = 256, kMaxChunks = 256;

inline int64_t rows_per_column_chunk(int64_t rows) {
  const int64_t even = (rows + kMaxChunks - 1) / kMaxChunks;
  return even > kMinRowsPerChunk ? even : kMinRowsPerChunk;
}

inline int64_t column_chunks(int64_t rows) {
  const int64_t chunks = (rows + rows_per_column_chunk(rows) - 1) / rows_per_column_chunk(rows);
  return chunks < 1 ? 1 : chunks;
}

// Elements of compute_t<T> needed for the partials: none when one chunk covers every row.
inline int64_t column_sums_scratch(int64_t rows, int64_t cols) {
  return column_chunks(rows) > 1 ? column_chunks(rows) * cols : 0;
}

// value(r, c) = x[r * row_stride + c], widened to the compute type
template <class T>
struct Elements {
  const T* x;
  int64_t row_stride;
  __device__ compute_t<T> operator()(int64_t r, int64_t c) const { return compute_t<T>(x[r * row_stride + c]); }
};

// partial[blockIdx.y, c] = sum over the rows of chunk blockIdx.y of value(r, c). The threads of a
// column step through the chunk 8 rows apart; thread row 0 adds their 8 sums in order.
template <class Acc, class Out, class Value>
__global__ void column_partials_kernel(Value value, int64_t rows, int64_t cols, int64_t rows_per_chunk, Out* partial) {
  __shared__ Acc sums[kRowThreadsPerColumn][kColumnsPerBlock + 1];
  const int64_t c = blockIdx.x * int64_t(kColumnsPerBlock) + threadIdx.x;
  const int64_t begin = blockIdx.y * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  Acc sum = Acc(0);
  if (c < cols) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowThreadsPerColumn) sum += value(r, c);
  }
  sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    Acc total = Acc(0);
    for (int k = 0; k < kRowThreadsPerColumn; ++k) total += sums[k][threadIdx.x];
    partial[blockIdx.y * cols + c] = Out(total);
  }
}

template <class Acc, class Out, class Value>
void launch_column_partials(Value value, int64_t rows, int64_t cols, Out* out) {
  const dim3 grid(unsigned((cols + kColumnsPerBlock - 1) / kColumnsPerBlock), unsigned(column_chunks(rows)));
  column_partials_kernel<Acc, Out><<<grid, dim3(kColumnsPerBlock, kRowThreadsPerColumn)>>>(
      value, rows, cols, rows_per_column_chunk(rows), out);
  check_launch("column_partials_kernel");
}

// out[c] = sum_r value(r, c); `scratch` holds column_sums_scratch(rows, cols) elements.
template <class T, class Value>
void column_sums(Value value, int64_t rows, int64_t cols, T* out, compute_t<T>* scratch) {
  using Acc = compute_t<T>;
  if (cols == 0) return;
  if (column_chunks(rows) == 1) return launch_column_partials<Acc>(value, rows, cols, out);
  launch_column_partials<Acc>(value, rows, cols, scratch);
  launch_column_partials<Acc>(Elements<Acc>{scratch, cols}, column_chunks(rows), cols, out);
}

}  // namespace fuselab::kernels::cuda

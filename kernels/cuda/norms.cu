// RMSNorm and LayerNorm kernels: one block per row, the row's sums by block_sum (see norms.h for
// the math); the weight and bias grads by the two-level column sums. RMSNorm's row kernels move
// 16 bytes per load and store where the rows are aligned for it.
#include "kernels/cuda/norms.h"

#include <cstdint>
#include <initializer_list>
#include <type_traits>

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

// K consecutive elements moved by one load or store: K = 16 / sizeof(T) gives 16-byte accesses
// (4 floats, 2 doubles), K = 1 the scalar fallback for rows that are not 16-byte aligned.
template <class T, int K>
struct alignas(sizeof(T) * K) Pack {
  T v[K];
};

// The row kernels read their rows as packs; row r, pack p holds elements [p K, p K + K).
template <class T, int K>
__device__ const Pack<T, K>* packs_of(const T* row) {
  return reinterpret_cast<const Pack<T, K>*>(row);
}

template <class T, int K>
__global__ void rmsnorm_forward_kernel(const T* x, const T* w, T* y, T* rstd, int64_t cols, T eps) {
  __shared__ T shared[32];
  const Pack<T, K>* xr = packs_of<T, K>(x + blockIdx.x * cols);
  const Pack<T, K>* wp = packs_of<T, K>(w);
  Pack<T, K>* yr = reinterpret_cast<Pack<T, K>*>(y + blockIdx.x * cols);
  const int64_t packs = cols / K;
  T sum_squares = T(0);
  for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<T, K> xv = xr[p];
    for (int k = 0; k < K; ++k) sum_squares += xv.v[k] * xv.v[k];
  }
  const T r = T(1) / sqrt(block_sum(sum_squares, shared) / T(cols) + eps);
  for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<T, K> xv = xr[p], wv = wp[p];
    Pack<T, K> yv;
    for (int k = 0; k < K; ++k) yv.v[k] = xv.v[k] * r * wv.v[k];
    yr[p] = yv;
  }
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

// dx = rstd * (g - xhat * mean_j(g_j xhat_j)) (+ residual_grad), g = dy * w, xhat = x * rstd
template <class T, int K>
__global__ void rmsnorm_input_grad_kernel(const T* x, const T* w, const T* rstd, const T* dy, const T* residual_grad,
                                          T* dx, int64_t cols) {
  __shared__ T shared[32];
  const int64_t offset = blockIdx.x * cols, packs = cols / K;
  const Pack<T, K>*xr = packs_of<T, K>(x + offset), *dyr = packs_of<T, K>(dy + offset), *wp = packs_of<T, K>(w);
  const Pack<T, K>* rg = residual_grad ? packs_of<T, K>(residual_grad + offset) : nullptr;
  Pack<T, K>* dxr = reinterpret_cast<Pack<T, K>*>(dx + offset);
  const T r = rstd[blockIdx.x];
  T dot = T(0);
  for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<T, K> xv = xr[p], dyv = dyr[p], wv = wp[p];
    for (int k = 0; k < K; ++k) dot += dyv.v[k] * wv.v[k] * (xv.v[k] * r);
  }
  const T mean_dot = block_sum(dot, shared) / T(cols);
  for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<T, K> xv = xr[p], dyv = dyr[p], wv = wp[p];
    Pack<T, K> out;
    for (int k = 0; k < K; ++k) out.v[k] = r * (dyv.v[k] * wv.v[k] - xv.v[k] * r * mean_dot);
    if (rg) {
      const Pack<T, K> rv = rg[p];
      for (int k = 0; k < K; ++k) out.v[k] += rv.v[k];
    }
    dxr[p] = out;
  }
}

// Calls launch(std::integral_constant<int, K>) with K = 16 / sizeof(T) when every row of every
// pointer starts 16-byte aligned (cols a multiple of K, each base aligned), else with K = 1.
template <class T, class Launch>
void with_pack_width(int64_t cols, std::initializer_list<const void*> pointers, Launch&& launch) {
  constexpr int kWide = 16 / sizeof(T);
  bool aligned = cols % kWide == 0;
  for (const void* p : pointers) aligned &= p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0;
  if (aligned) return launch(std::integral_constant<int, kWide>{});
  launch(std::integral_constant<int, 1>{});
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
  with_pack_width<T>(cols, {x, w, y}, [&](auto width) {
    constexpr int K = decltype(width)::value;
    rmsnorm_forward_kernel<T, K><<<unsigned(rows), threads_for(cols / K)>>>(x, w, y, rstd, cols, eps);
  });
  check_launch("rmsnorm_forward_kernel");
}

int64_t norm_backward_scratch(int64_t rows, int64_t cols) { return column_sums_scratch(rows, cols); }

template <class T>
void rmsnorm_backward(const T* x, const T* w, const T* rstd, const T* dy, const T* residual_grad, T* dx, T* dw,
                      T* scratch, int64_t rows, int64_t cols, int device) {
  use_device(device);
  if (dx != nullptr && rows > 0) {
    with_pack_width<T>(cols, {x, w, dy, residual_grad, dx}, [&](auto width) {
      constexpr int K = decltype(width)::value;
      rmsnorm_input_grad_kernel<T, K>
          <<<unsigned(rows), threads_for(cols / K)>>>(x, w, rstd, dy, residual_grad, dx, cols);
    });
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

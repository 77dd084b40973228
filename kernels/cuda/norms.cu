// RMSNorm and LayerNorm kernels: one block per row, the row's sums by block_sum (see norms.h for
// the math); the weight and bias grads by the two-level column sums, in scratch. RMSNorm's row kernels move
// 16 bytes per load and store where the rows are aligned for it. Every sum and statistic is in
// C = compute_t<T> (float32 for bfloat16); elements are rounded to T once, on store.
#include "kernels/norms.h"

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
// (4 floats, 2 doubles, 8 bfloat16s), K = 1 the scalar fallback for rows that are not 16-byte aligned.
template <class T, int K>
struct alignas(sizeof(T) * K) Pack {
  T v[K];
};

// The row kernels read their rows as packs; row r, pack p holds elements [p K, p K + K).
template <class T, int K>
__device__ const Pack<T, K>* packs_of(const T* row) {
  return reinterpret_cast<const Pack<T, K>*>(row);
}

// Pack p of the norm's input row: x's, or x + residual, stored to the sum row first. The thread
// that stores a pack is the one that reads it back, so no barrier is needed between the passes.
template <class T, int K>
__device__ Pack<T, K> input_pack(const Pack<T, K>* xr, const Pack<T, K>* rr, Pack<T, K>* hr, int64_t p) {
  using C = compute_t<T>;
  Pack<T, K> v = xr[p];
  if (rr) {
    const Pack<T, K> rv = rr[p];
    for (int k = 0; k < K; ++k) v.v[k] = T(C(v.v[k]) + C(rv.v[k]));
    hr[p] = v;
  }
  return v;
}

template <class T, int K>
__global__ void rmsnorm_forward_kernel(const T* x, const T* residual, T* sum, const T* w, T* y, compute_t<T>* rstd,
                                       int64_t cols, compute_t<T> eps) {
  using C = compute_t<T>;
  __shared__ C shared[32];
  const int64_t offset = blockIdx.x * cols;
  const Pack<T, K>* rr = residual ? packs_of<T, K>(residual + offset) : nullptr;
  Pack<T, K>* hr = residual ? reinterpret_cast<Pack<T, K>*>(sum + offset) : nullptr;
  const Pack<T, K>* wp = packs_of<T, K>(w);
  Pack<T, K>* yr = reinterpret_cast<Pack<T, K>*>(y + offset);
  const int64_t packs = cols / K;
  C sum_squares = C(0);
  for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<T, K> xv = input_pack(packs_of<T, K>(x + offset), rr, hr, p);
    for (int k = 0; k < K; ++k) sum_squares += C(xv.v[k]) * C(xv.v[k]);
  }
  const Pack<T, K>* xr = residual ? hr : packs_of<T, K>(x + offset);
  const C r = C(1) / sqrt(block_sum(sum_squares, shared) / C(cols) + eps);
  for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<T, K> xv = xr[p], wv = wp[p];
    Pack<T, K> yv;
    for (int k = 0; k < K; ++k) yv.v[k] = T(C(xv.v[k]) * r * C(wv.v[k]));
    yr[p] = yv;
  }
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

// dx = rstd * (g - xhat * mean_j(g_j xhat_j)) (+ residual_grad), g = dy * w, xhat = x * rstd
template <class T, int K>
__global__ void rmsnorm_input_grad_kernel(const T* x, const T* w, const compute_t<T>* rstd, const T* dy,
                                          const T* residual_grad, T* dx, int64_t cols) {
  using C = compute_t<T>;
  __shared__ C shared[32];
  const int64_t offset = blockIdx.x * cols, packs = cols / K;
  const Pack<T, K>*xr = packs_of<T, K>(x + offset), *dyr = packs_of<T, K>(dy + offset),
                *wp = packs_of<T, K>(w);
  const Pack<T, K>* rg = residual_grad ? packs_of<T, K>(residual_grad + offset) : nullptr;
  Pack<T, K>* dxr = reinterpret_cast<Pack<T, K>*>(dx + offset);
  const C r = rstd[blockIdx.x];
  C dot = C(0);
  for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<T, K> xv = xr[p], dyv = dyr[p], wv = wp[p];
    for (int k = 0; k < K; ++k) dot += C(dyv.v[k]) * C(wv.v[k]) * (C(xv.v[k]) * r);
  }
  const C mean_dot = block_sum(dot, shared) / C(cols);
  for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<T, K> xv = xr[p], dyv = dyr[p], wv = wp[p];
    Pack<T, K> rv;
    if (rg) rv = rg[p];
    Pack<T, K> out;
    for (int k = 0; k < K; ++k) {
      const C g = r * (C(dyv.v[k]) * C(wv.v[k]) - C(xv.v[k]) * r * mean_dot);
      out.v[k] = T(rg ? g + C(rv.v[k]) : g);
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
  const T* x;
  const compute_t<T>* rstd;
  const T* dy;
  int64_t cols;
  __device__ compute_t<T> operator()(int64_t r, int64_t c) const {
    using C = compute_t<T>;
    return C(dy[r * cols + c]) * (C(x[r * cols + c]) * rstd[r]);
  }
};

template <class T>
__global__ void layernorm_forward_kernel(const T* x, const T* residual, T* sum, const T* w, const T* b, T* y,
                                         compute_t<T>* mean, compute_t<T>* rstd, int64_t cols, compute_t<T> eps) {
  using C = compute_t<T>;
  __shared__ C shared[32];
  const int64_t offset = blockIdx.x * cols;
  T* yr = y + offset;
  const Pack<T, 1>* rr = residual ? packs_of<T, 1>(residual + offset) : nullptr;
  Pack<T, 1>* hr = residual ? reinterpret_cast<Pack<T, 1>*>(sum + offset) : nullptr;
  C total = C(0);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    total += C(input_pack(packs_of<T, 1>(x + offset), rr, hr, j).v[0]);
  const T* xr = residual ? sum + offset : x + offset;  // each thread reads back the elements it stored
  const C mu = block_sum(total, shared) / C(cols);
  C var = C(0);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) var += (C(xr[j]) - mu) * (C(xr[j]) - mu);
  const C s = C(1) / sqrt(block_sum(var, shared) / C(cols) + eps);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = T((C(xr[j]) - mu) * s * C(w[j]) + C(b[j]));
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = mu;
    rstd[blockIdx.x] = s;
  }
}

// dx = rstd * (g - mean_j g_j - xhat * mean_j(g_j xhat_j)) (+ residual_grad), g = dy * w,
// xhat = (x - mu) * rstd
template <class T>
__global__ void layernorm_input_grad_kernel(const T* x, const T* w, const compute_t<T>* mean,
                                            const compute_t<T>* rstd, const T* dy, const T* residual_grad,
                                            T* dx, int64_t cols) {
  using C = compute_t<T>;
  __shared__ C shared[32];
  const int64_t offset = blockIdx.x * cols;
  const T* dyr = dy + offset;
  const C mu = mean[blockIdx.x], s = rstd[blockIdx.x];
  C sum_g = C(0), sum_g_xhat = C(0);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const C g = C(dyr[j]) * C(w[j]);
    sum_g += g;
    sum_g_xhat += g * (C(x[offset + j]) - mu) * s;
  }
  const C mean_g = block_sum(sum_g, shared) / C(cols);
  const C mean_g_xhat = block_sum(sum_g_xhat, shared) / C(cols);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const C xhat = (C(x[offset + j]) - mu) * s;
    const C g = s * (C(dyr[j]) * C(w[j]) - mean_g - xhat * mean_g_xhat);
    dx[offset + j] = T(residual_grad ? g + C(residual_grad[offset + j]) : g);
  }
}

// value(r, c) = dy[r, c] * xhat[r, c] with LayerNorm's xhat: dw is its column sums.
template <class T>
struct CenteredWeightGradTerms {
  const T* x;
  const compute_t<T> *mean, *rstd;
  const T* dy;
  int64_t cols;
  __device__ compute_t<T> operator()(int64_t r, int64_t c) const {
    using C = compute_t<T>;
    return C(dy[r * cols + c]) * ((C(x[r * cols + c]) - mean[r]) * rstd[r]);
  }
};

}  // namespace

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void RMSNormForward<T>::cuda(KernelContext& ctx) const {
  if (rows == 0) return;
  use_device(ctx.device);
  with_pack_width<T>(cols, {x, residual, sum, w, y}, [&](auto width) {
    constexpr int K = decltype(width)::value;
    rmsnorm_forward_kernel<T, K>
        <<<unsigned(rows), threads_for(cols / K)>>>(x, residual, sum, w, y, rstd, cols, eps);
  });
  check_launch("rmsnorm_forward_kernel");
}

template <class T>
void RMSNormBackward<T>::cuda(KernelContext& ctx) const {
  use_device(ctx.device);
  if (dx != nullptr && rows > 0) {
    with_pack_width<T>(cols, {x, w, dy, residual_grad, dx}, [&](auto width) {
      constexpr int K = decltype(width)::value;
      rmsnorm_input_grad_kernel<T, K>
          <<<unsigned(rows), threads_for(cols / K)>>>(x, w, rstd, dy, residual_grad, dx, cols);
    });
    check_launch("rmsnorm_input_grad_kernel");
  }
  if (dw == nullptr) return;
  compute_t<T>* scratch = ctx.scratch<compute_t<T>>(column_sums_scratch(rows, cols));
  column_sums(WeightGradTerms<T>{x, rstd, dy, cols}, rows, cols, dw, scratch);
}

template <class T>
void LayerNormForward<T>::cuda(KernelContext& ctx) const {
  if (rows == 0) return;
  use_device(ctx.device);
  layernorm_forward_kernel<T>
      <<<unsigned(rows), threads_for(cols)>>>(x, residual, sum, w, b, y, mean, rstd, cols, eps);
  check_launch("layernorm_forward_kernel");
}

// The column sums run one after the other on the same stream, so they share one scratch block.
template <class T>
void LayerNormBackward<T>::cuda(KernelContext& ctx) const {
  use_device(ctx.device);
  if (dx != nullptr && rows > 0) {
    layernorm_input_grad_kernel<T>
        <<<unsigned(rows), threads_for(cols)>>>(x, w, mean, rstd, dy, residual_grad, dx, cols);
    check_launch("layernorm_input_grad_kernel");
  }
  if (dw == nullptr && db == nullptr) return;
  compute_t<T>* scratch = ctx.scratch<compute_t<T>>(column_sums_scratch(rows, cols));
  if (dw != nullptr)
    column_sums(CenteredWeightGradTerms<T>{x, mean, rstd, dy, cols}, rows, cols, dw, scratch);
  if (db != nullptr) column_sums(Elements<T>{dy, cols}, rows, cols, db, scratch);
}

FUSELAB_NORM_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels

// The CUDA body of kernels/grouped_mlp.h: each step for all experts at once, a GEMM as one grouped
// cuBLAS call (kernels/cuda/gemm.h) and the GLU kernels of kernels/cuda/gated_linear_unit.cu over
// all rows, so a forward is three launches and a backward six however many experts there are (and
// a fill of zeros for each weight grad of an expert without rows), and one more where the rows
// are gathered from x by their sources.

#include <numeric>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm.h"
#include "kernels/gated_linear_unit.h"
#include "kernels/grouped_mlp.h"

// Named, not in an anonymous namespace: the emulator compiles this file pasted into another, where
// an entry point's lambda may not capture a type of internal linkage.
namespace fuselab::kernels::cuda {

// The problems of one grouped GEMM: product(g, first, rows) is expert g's, its rows starting at
// `first` in the row-wise operands.
template <class T, class Product>
std::vector<GemmProblem<T>> per_expert(const int64_t* sizes, int64_t groups, Product&& product) {
  std::vector<GemmProblem<T>> problems;
  for (int64_t g = 0, first = 0; g < groups; first += sizes[g], ++g) problems.push_back(product(g, first, sizes[g]));
  return problems;
}

inline int64_t total_rows(const int64_t* sizes, int64_t groups) {
  return std::accumulate(sizes, sizes + groups, int64_t(0));
}

template <class T>
__global__ void gather_rows_kernel(const T* x, const int64_t* sources, T* rows, int64_t n, int64_t in) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) { rows[i] = x[sources[i / in] * in + i % in]; }
}

// The experts' rows of x, [rows, in]: x's own, or gathered by the sources into scratch.
template <class T>
const T* rows_of(const T* x, const int64_t* sources, int64_t rows, int64_t in, KernelContext& ctx) {
  if (!sources || rows * in == 0) return x;
  T* gathered = ctx.scratch<T>(rows * in);
  use_device(ctx.device);
  gather_rows_kernel<T><<<blocks_for(rows * in), kThreads>>>(x, sources, gathered, rows * in, in);
  check_launch("gather_rows_kernel");
  return gathered;
}

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {

template <class T>
void GroupedMlpForward<T>::cuda(KernelContext& ctx) const {
  using cuda::GemmProblem;
  const int64_t h = hidden, rows = cuda::total_rows(sizes, groups);
  T* a = ctx.scratch<T>(rows * h);
  T* u = pre ? pre : ctx.scratch<T>(rows * 2 * h);
  const T* x_rows = cuda::rows_of(x, sources, rows, in, ctx);
  const auto up = cuda::per_expert<T>(sizes, groups, [&](int64_t g, int64_t first, int64_t n) {
    return GemmProblem<T>{n, 2 * h, in, x_rows + first * in, w1 + g * 2 * h * in, u + first * 2 * h};
  });
  cuda::grouped_gemm<T>(false, true, up, in, in, 0, 2 * h, ctx);
  GatedLinearUnitForward<T>{gate, u, a, rows, h}.cuda(ctx);
  const auto down = cuda::per_expert<T>(sizes, groups, [&](int64_t g, int64_t first, int64_t n) {
    return GemmProblem<T>{n, out, h, a + first * h, w2 + g * out * h, y + first * out};
  });
  cuda::grouped_gemm<T>(false, true, down, h, h, 0, out, ctx);
}

// A weight grad's problem of an expert without rows is an empty sum: its grad is 0.
template <class T>
void GroupedMlpBackward<T>::cuda(KernelContext& ctx) const {
  using cuda::GemmProblem;
  const int64_t h = hidden, rows = cuda::total_rows(sizes, groups);
  T* a = ctx.scratch<T>(rows * h);
  T* da = a;  // in a's place once dW2 has it
  T* du = ctx.scratch<T>(rows * 2 * h);
  if (dw2) {
    GatedLinearUnitForward<T>{gate, pre, a, rows, h}.cuda(ctx);
    const auto grad_down = cuda::per_expert<T>(sizes, groups, [&](int64_t g, int64_t first, int64_t n) {
      return GemmProblem<T>{out, h, n, dy + first * out, a + first * h, dw2 + g * out * h};
    });
    cuda::grouped_gemm<T>(true, false, grad_down, out, h, 0, h, ctx);
  }
  if (!dx && !dw1) return;
  const auto grad_a = cuda::per_expert<T>(sizes, groups, [&](int64_t g, int64_t first, int64_t n) {
    return GemmProblem<T>{n, h, out, dy + first * out, w2 + g * out * h, da + first * h};
  });
  cuda::grouped_gemm<T>(false, false, grad_a, out, h, 0, h, ctx);
  GatedLinearUnitBackward<T>{gate, pre, da, du, rows, h}.cuda(ctx);
  if (dx) {
    const auto grad_x = cuda::per_expert<T>(sizes, groups, [&](int64_t g, int64_t first, int64_t n) {
      return GemmProblem<T>{n, in, 2 * h, du + first * 2 * h, w1 + g * 2 * h * in, dx + first * in};
    });
    cuda::grouped_gemm<T>(false, false, grad_x, 2 * h, in, 0, in, ctx);
  }
  if (dw1) {
    const T* x_rows = cuda::rows_of(x, sources, rows, in, ctx);
    const auto grad_up = cuda::per_expert<T>(sizes, groups, [&](int64_t g, int64_t first, int64_t n) {
      return GemmProblem<T>{2 * h, in, n, du + first * 2 * h, x_rows + first * in, dw1 + g * 2 * h * in};
    });
    cuda::grouped_gemm<T>(true, false, grad_up, 2 * h, in, 0, in, ctx);
  }
}

FUSELAB_GROUPED_MLP_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels

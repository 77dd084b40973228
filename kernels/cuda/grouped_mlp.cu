// The CUDA body of kernels/grouped_mlp.h: each step for all experts at once, a GEMM as one grouped
// cuBLAS call (kernels/cuda/gemm.h) and the GLU kernels of kernels/cuda/gated_linear_unit.cu over
// all rows, so a forward is three launches and a backward six however many experts there are (and
// a fill of zeros for each weight grad of an expert without rows); routed, a forward gathers its
// rows in one launch more, a backward its rows in two and applies the routing weights in three;
// scaled, a forward scales its output in one launch more, a backward applies the scale and gives
// its grads in three.

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

// rows[i] = from[copies[i] / top_k], rows of `width`.
template <class T>
__global__ void gather_copies_kernel(const T* from, const int64_t* copies, int64_t top_k, T* rows, int64_t n,
                                     int64_t width) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) { rows[i] = from[copies[i / width] / top_k * width + i % width]; }
}

// to[i] = from[i] * weights[weight_index(i)], rows of `width`, in compute_t<T> (from may be to).
template <class T>
__global__ void scale_rows_kernel(const T* from, T* to, const T* weights, const int64_t* copies, int64_t n,
                                  int64_t width) {
  using C = compute_t<T>;
  FUSELAB_GRID_STRIDE_LOOP(i, n) { to[i] = T(C(from[i]) * C(weights[weight_index(copies, i / width)])); }
}

// dweights[weight_index(i)] = <p[i], q[i]>, a thread per row, summed in compute_t<T>.
template <class T>
__global__ void row_dots_kernel(const T* p, const T* q, const int64_t* copies, T* dweights, int64_t rows,
                                int64_t width) {
  using C = compute_t<T>;
  FUSELAB_GRID_STRIDE_LOOP(i, rows) {
    C dot = 0;
    for (int64_t c = 0; c < width; ++c) dot += C(p[i * width + c]) * C(q[i * width + c]);
    dweights[weight_index(copies, i)] = T(dot);
  }
}

// The rows of the copies' tokens in `from` [tokens, width], gathered into scratch [rows, width].
template <class T>
T* gather_copies(const T* from, const int64_t* copies, int64_t top_k, int64_t rows, int64_t width,
                 KernelContext& ctx) {
  T* gathered = ctx.scratch<T>(rows * width);
  if (rows * width == 0) return gathered;
  use_device(ctx.device);
  gather_copies_kernel<T><<<blocks_for(rows * width), kThreads>>>(from, copies, top_k, gathered, rows * width, width);
  check_launch("gather_copies_kernel");
  return gathered;
}

template <class T>
void scale_rows(const T* from, T* to, const T* weights, const int64_t* copies, int64_t n, int64_t width) {
  if (n * width == 0) return;
  scale_rows_kernel<T><<<blocks_for(n * width), kThreads>>>(from, to, weights, copies, n * width, width);
  check_launch("scale_rows_kernel");
}

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {

template <class T>
void GroupedMlpForward<T>::cuda(KernelContext& ctx) const {
  using cuda::GemmProblem;
  const int64_t h = hidden, rows = cuda::total_rows(sizes, groups);
  T* a = act ? act : ctx.scratch<T>(rows * h);
  T* u = pre ? pre : ctx.scratch<T>(rows * 2 * h);
  const T* x_rows = copies ? cuda::gather_copies(x, copies, top_k, rows, in, ctx) : x;
  const auto up = cuda::per_expert<T>(sizes, groups, [&](int64_t g, int64_t first, int64_t n) {
    return GemmProblem<T>{n, 2 * h, in, x_rows + first * in, w1 + g * 2 * h * in, u + first * 2 * h};
  });
  cuda::grouped_gemm<T>(false, true, up, in, in, 0, 2 * h, ctx);
  GatedLinearUnitForward<T>{gate, u, a, rows, h}.cuda(ctx);
  const auto down = cuda::per_expert<T>(sizes, groups, [&](int64_t g, int64_t first, int64_t n) {
    return GemmProblem<T>{n, out, h, a + first * h, w2 + g * out * h, y + first * out};
  });
  cuda::grouped_gemm<T>(false, true, down, h, h, 0, out, ctx);
  if (scale) cuda::scale_rows(y, y, scale, nullptr, rows, out);
}

// A weight grad's problem of an expert without rows is an empty sum: its grad is 0. Routed, dy_rows
// is the gathered copy of the tokens' grads g: g W2 gives the weights' grads against a before the
// weights scale it into da, and the weights scale g before dW2 = (w g)^T a, as on the CPU; scaled,
// the same with s for w, s dy written to scratch.
template <class T>
void GroupedMlpBackward<T>::cuda(KernelContext& ctx) const {
  using cuda::GemmProblem;
  const int64_t h = hidden, rows = cuda::total_rows(sizes, groups);
  cuda::use_device(ctx.device);
  T* da = ctx.scratch<T>(rows * h);
  T* du = ctx.scratch<T>(rows * 2 * h);
  T* gathered_dy = copies ? cuda::gather_copies(dy, copies, top_k, rows, out, ctx) : nullptr;
  const T* dy_rows = copies ? gathered_dy : dy;
  const T* a = act;
  if (!act && (dw2 || dweights)) {
    T* recomputed = ctx.scratch<T>(rows * h);
    GatedLinearUnitForward<T>{gate, pre, recomputed, rows, h}.cuda(ctx);
    a = recomputed;
  }
  if (dx || dw1 || dweights) {
    const auto grad_a = cuda::per_expert<T>(sizes, groups, [&](int64_t g, int64_t first, int64_t n) {
      return GemmProblem<T>{n, h, out, dy_rows + first * out, w2 + g * out * h, da + first * h};
    });
    cuda::grouped_gemm<T>(false, false, grad_a, out, h, 0, h, ctx);
    if (dweights && rows > 0) {
      cuda::row_dots_kernel<T><<<cuda::blocks_for(rows), cuda::kThreads>>>(da, a, copies, dweights, rows, h);
      cuda::check_launch("row_dots_kernel");
    }
    if (weights) cuda::scale_rows(da, da, weights, copies, rows, h);
  }
  if (dw2) {
    const T* weighted_dy = dy_rows;  // (w g) or (s dy)
    if (weights) {
      T* scaled = copies ? gathered_dy : ctx.scratch<T>(rows * out);
      cuda::scale_rows(dy_rows, scaled, weights, copies, rows, out);
      weighted_dy = scaled;
    }
    const auto grad_down = cuda::per_expert<T>(sizes, groups, [&](int64_t g, int64_t first, int64_t n) {
      return GemmProblem<T>{out, h, n, weighted_dy + first * out, a + first * h, dw2 + g * out * h};
    });
    cuda::grouped_gemm<T>(true, false, grad_down, out, h, 0, h, ctx);
  }
  if (!dx && !dw1) return;
  GatedLinearUnitBackward<T>{gate, pre, da, du, rows, h}.cuda(ctx);
  if (dx) {
    const auto grad_x = cuda::per_expert<T>(sizes, groups, [&](int64_t g, int64_t first, int64_t n) {
      return GemmProblem<T>{n, in, 2 * h, du + first * 2 * h, w1 + g * 2 * h * in, dx + first * in};
    });
    cuda::grouped_gemm<T>(false, false, grad_x, 2 * h, in, 0, in, ctx);
  }
  if (dw1) {
    const T* x_rows = copies ? cuda::gather_copies(x, copies, top_k, rows, in, ctx) : x;
    const auto grad_up = cuda::per_expert<T>(sizes, groups, [&](int64_t g, int64_t first, int64_t n) {
      return GemmProblem<T>{2 * h, in, n, du + first * 2 * h, x_rows + first * in, dw1 + g * 2 * h * in};
    });
    cuda::grouped_gemm<T>(true, false, grad_up, 2 * h, in, 0, in, ctx);
  }
}

FUSELAB_GROUPED_MLP_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels

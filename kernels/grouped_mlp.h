// A mixture of experts' MLP, the experts' two GroupedLinears and the gated linear unit between
// them (GroupedMlp, ops/fused/grouped_mlp.h). Expert g takes its run of rows x_g [n_g, in] (the
// runs consecutive, their sizes on the host):
//
//   u_g = x_g W1_g^T    [n_g, 2h]    W1 [G, 2h, in], the gate and up halves
//   a_g = glu(u_g)      [n_g, h]     gate(u[:, :h]) * u[:, h:]  (kernels/gated_linear_unit.h)
//   y_g = a_g W2_g^T    [n_g, out]   W2 [G, out, h]
//
// and backward, from dy_g:
//
//   da_g = dy_g W2_g,   dW2_g = dy_g^T a_g   (a_g computed again from u_g)
//   du_g = glu backward(u_g, da_g),   dx_g = du_g W1_g,   dW1_g = du_g^T x_g
//
// Each expert runs its whole chain before the next, so a_g, da_g and du_g live in a buffer of the
// largest expert's rows (per thread), in cache at a mixture's expert sizes, and only u is kept for
// backward: the unfused ops keep u and a for every expert and hold da and du for all at once. An
// expert without rows gets dW1_g = dW2_g = 0. The chain is written once below for both backends'
// GEMMs and GLU kernels; on the CPU the experts run in parallel, one per thread, when at least as
// many have rows as there are threads (as GroupedMatmul), on CUDA one after another. Kernels:
// kernels/cpu/grouped_mlp.cc and kernels/cuda/grouped_mlp.cu.
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/kernel.h"

namespace fuselab::kernels {

template <class T>
struct GroupedMlpForward {
  Activation gate;
  int64_t groups;
  const int64_t* sizes;  // [groups], on the host, summing to the rows
  int64_t in, hidden, out;
  const T* x;   // [rows, in]
  const T* w1;  // [groups, 2 hidden, in]
  const T* w2;  // [groups, out, hidden]
  T* pre;       // u [rows, 2 hidden], kept for backward, or null
  T* y;         // [rows, out]
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct GroupedMlpBackward {
  Activation gate;
  int64_t groups;
  const int64_t* sizes;
  int64_t in, hidden, out;
  const T* x;
  const T* w1;
  const T* w2;
  const T* pre;  // u, as the forward kept it
  const T* dy;   // [rows, out]
  T* dx;         // [rows, in], or null
  T* dw1;        // [groups, 2 hidden, in], or null
  T* dw2;        // [groups, out, hidden], or null
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_GROUPED_MLP_KERNELS(X)       \
  X(GroupedMlpForward, FUSELAB_FLOAT_DOUBLE) \
  X(GroupedMlpBackward, FUSELAB_FLOAT_DOUBLE)

// The buffer one expert's chain works in, in elements for `rows`: the forward's a [rows, h] (and u
// [rows, 2h] where it keeps no pre), the backward's a, then da in its place, [rows, h], and du
// [rows, 2h].
inline int64_t grouped_mlp_buffer(int64_t rows, int64_t hidden) { return rows * 3 * hidden; }

// The chain of expert g starting at row `first`, for a backend's Ops: gemm(ta, tb, m, n, k, a, lda,
// b, ldb, c, ldc) for c = op(a) op(b), glu(u, a, rows), glu_backward(u, da, du, rows), zero(p, n).
template <class T, class Ops>
void grouped_mlp_forward_expert(const GroupedMlpForward<T>& k, const Ops& ops, int64_t g, int64_t first, T* buffer) {
  const int64_t n = k.sizes[g], h = k.hidden;
  if (n == 0) return;
  T* a = buffer;
  T* u = k.pre ? k.pre + first * 2 * h : buffer + n * h;
  ops.gemm(false, true, n, 2 * h, k.in, k.x + first * k.in, k.in, k.w1 + g * 2 * h * k.in, k.in, u, 2 * h);
  ops.glu(u, a, n);
  ops.gemm(false, true, n, k.out, h, a, h, k.w2 + g * k.out * h, h, k.y + first * k.out, k.out);
}

template <class T, class Ops>
void grouped_mlp_backward_expert(const GroupedMlpBackward<T>& k, const Ops& ops, int64_t g, int64_t first,
                                 T* buffer) {
  const int64_t n = k.sizes[g], h = k.hidden;
  T* dw1 = k.dw1 ? k.dw1 + g * 2 * h * k.in : nullptr;
  T* dw2 = k.dw2 ? k.dw2 + g * k.out * h : nullptr;
  if (n == 0) {
    if (dw1) ops.zero(dw1, 2 * h * k.in);
    if (dw2) ops.zero(dw2, k.out * h);
    return;
  }
  const T *x = k.x + first * k.in, *u = k.pre + first * 2 * h, *dy = k.dy + first * k.out;
  T *a = buffer, *da = buffer, *du = buffer + n * h;  // da replaces a once dW2 is made
  if (dw2) {
    ops.glu(u, a, n);
    ops.gemm(true, false, k.out, h, n, dy, k.out, a, h, dw2, h);
  }
  if (!k.dx && !dw1) return;
  ops.gemm(false, false, n, h, k.out, dy, k.out, k.w2 + g * k.out * h, h, da, h);
  ops.glu_backward(u, da, du, n);
  if (k.dx) ops.gemm(false, false, n, k.in, 2 * h, du, 2 * h, k.w1 + g * 2 * h * k.in, k.in, k.dx + first * k.in, k.in);
  if (dw1) ops.gemm(true, false, 2 * h, k.in, n, du, 2 * h, x, k.in, dw1, k.in);
}

}  // namespace fuselab::kernels

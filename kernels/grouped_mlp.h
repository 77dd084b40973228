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
// Each expert runs its whole chain before the next, so a_g, da_g and du_g live in a buffer of one
// chunk of its rows (per thread; below), in cache at a mixture's expert sizes, and only u is kept for
// backward: the unfused ops keep u and a for every expert and hold da and du for all at once. An
// expert without rows gets dW1_g = dW2_g = 0. The chain is written once below for both backends'
// GEMMs and GLU kernels; on the CPU the experts run in parallel, one per thread, when at least as
// many have rows as there are threads (as GroupedMatmul), on CUDA one after another. Kernels:
// kernels/cpu/grouped_mlp.cc and kernels/cuda/grouped_mlp.cu.
#pragma once

#include <algorithm>
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

// An expert's rows go through its chain in chunks of at most grouped_mlp_chunk(h) rows, so the
// buffer one chain works in stays near kGroupedMlpChunkBytes however skewed the load is (the weight
// grads sum over the chunks: their GEMMs after the first add into them, beta = 1). The buffer holds
// the forward's a [chunk, h] (and u [chunk, 2h] where it keeps no pre), the backward's a, then da
// in its place, [chunk, h], and du [chunk, 2h].
constexpr int64_t kGroupedMlpChunkBytes = 4 << 20;
template <class T>
int64_t grouped_mlp_chunk(int64_t hidden) {
  const int64_t rows = kGroupedMlpChunkBytes / (3 * hidden * int64_t(sizeof(T)));
  return rows > 256 ? rows : 256;
}
// The rows of each chunk of an expert of `rows` rows: as even as the chunks can be.
template <class T>
int64_t grouped_mlp_chunk_rows(int64_t rows, int64_t hidden) {
  const int64_t most = grouped_mlp_chunk<T>(hidden), chunks = (rows + most - 1) / most;
  return chunks > 1 ? (rows + chunks - 1) / chunks : rows;
}
// Elements of a buffer for the chunks of any of the experts.
template <class T>
int64_t grouped_mlp_buffer(const int64_t* sizes, int64_t groups, int64_t hidden) {
  const int64_t most = groups > 0 ? *std::max_element(sizes, sizes + groups) : 0;
  return std::min(most, grouped_mlp_chunk<T>(hidden)) * 3 * hidden;
}

// The chain of expert g, whose rows start at `first`, for a backend's Ops: gemm(ta, tb, m, n, k, a,
// lda, b, ldb, beta, c, ldc) for c = op(a) op(b) + beta c, glu(u, a, rows), glu_backward(u, da, du,
// rows), zero(p, count).
template <class T, class Ops>
void grouped_mlp_forward_expert(const GroupedMlpForward<T>& k, const Ops& ops, int64_t g, int64_t first, T* buffer) {
  const int64_t h = k.hidden, chunk = grouped_mlp_chunk_rows<T>(k.sizes[g], h);
  for (int64_t r = first; r < first + k.sizes[g]; r += chunk) {
    const int64_t m = std::min(chunk, first + k.sizes[g] - r);
    T* a = buffer;
    T* u = k.pre ? k.pre + r * 2 * h : buffer + m * h;
    ops.gemm(false, true, m, 2 * h, k.in, k.x + r * k.in, k.in, k.w1 + g * 2 * h * k.in, k.in, T(0), u, 2 * h);
    ops.glu(u, a, m);
    ops.gemm(false, true, m, k.out, h, a, h, k.w2 + g * k.out * h, h, T(0), k.y + r * k.out, k.out);
  }
}

template <class T, class Ops>
void grouped_mlp_backward_expert(const GroupedMlpBackward<T>& k, const Ops& ops, int64_t g, int64_t first,
                                 T* buffer) {
  const int64_t h = k.hidden, chunk = grouped_mlp_chunk_rows<T>(k.sizes[g], h);
  T* dw1 = k.dw1 ? k.dw1 + g * 2 * h * k.in : nullptr;
  T* dw2 = k.dw2 ? k.dw2 + g * k.out * h : nullptr;
  if (k.sizes[g] == 0) {
    if (dw1) ops.zero(dw1, 2 * h * k.in);
    if (dw2) ops.zero(dw2, k.out * h);
    return;
  }
  for (int64_t r = first; r < first + k.sizes[g]; r += chunk) {
    const int64_t m = std::min(chunk, first + k.sizes[g] - r);
    const T beta = r == first ? T(0) : T(1);
    const T *x = k.x + r * k.in, *u = k.pre + r * 2 * h, *dy = k.dy + r * k.out;
    T *a = buffer, *da = buffer, *du = buffer + m * h;  // da replaces a once dW2 has it
    if (dw2) {
      ops.glu(u, a, m);
      ops.gemm(true, false, k.out, h, m, dy, k.out, a, h, beta, dw2, h);
    }
    if (!k.dx && !dw1) continue;
    ops.gemm(false, false, m, h, k.out, dy, k.out, k.w2 + g * k.out * h, h, T(0), da, h);
    ops.glu_backward(u, da, du, m);
    if (k.dx) {
      ops.gemm(false, false, m, k.in, 2 * h, du, 2 * h, k.w1 + g * 2 * h * k.in, k.in, T(0), k.dx + r * k.in, k.in);
    }
    if (dw1) ops.gemm(true, false, 2 * h, k.in, m, du, 2 * h, x, k.in, beta, dw1, k.in);
  }
}

}  // namespace fuselab::kernels

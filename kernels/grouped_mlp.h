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
// Routed (RoutedGroupedMlp), row i of the runs is copy c_i of a token (MoEPermute's order,
// `copies`), x's row c_i / k, and the chain reads it from there; its output's grad is its routing
// weight w times its token's, and backward gives the weights' grads too (MoEUnpermute's backward):
//
//   dy_i = w[c_i] g_i,  g_i = dout[c_i / k]
//   dw[c_i] = <g_i, y_i> = <(g W2_g)_i, a_i>,   da_i = w[c_i] (g W2_g)_i,   dW2_g = g^T (w a)
//
// so y is not kept for backward, nor dy written. Scaled (a ScaledGatedLinearUnit between the
// GroupedLinears, TransformerEngine's ScaledSwiGLU), row i's GLU output is s_i glu(u_i), s the
// scale of each row, and as y is linear in it the chain computes
//
//   y_i = s_i (a W2_g^T)_i,  a = glu(u) unscaled
//   ds_i = <(dy W2_g)_i, a_i>,   da_i = s_i (dy W2_g)_i,   dW2_g = (s dy)^T a
//
// the routed backward with s for w and dy for g, and the routed forward's product scaled (routed,
// MoEUnpermute's weighted sum scales it). u is kept for backward, and a too unless the
// backward recomputes it from u (`act` null); an expert without rows gets dW1_g = dW2_g = 0. The
// two backends order the work for their hardware:
// - CPU (kernels/cpu/grouped_mlp.cc): each expert runs its whole chain before the next, in chunks
//   of its rows, so a_g, da_g and du_g (and the chunk's rows of x and dout, gathered) live in a
//   buffer of one chunk (per thread), in cache at a mixture's expert sizes; the unfused ops keep u
//   and a for every expert and hold da and du for all at once. The experts run in parallel, one
//   per thread, when at least as many have rows as there are threads (as GroupedMatmul), and their
//   GEMMs run as cpu::GemmShape::Varying (as GroupedMatmul's).
// - CUDA (kernels/cuda/grouped_mlp.cu): each line above runs for all experts at once, a GEMM as one
//   grouped cuBLAS call and the GLU as one launch over all rows, so the launches do not grow with
//   the experts; a, da and du (and the gathered rows) are scratch for all rows.
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/host_device.h"
#include "kernels/kernel.h"

namespace fuselab::kernels {

template <class T>
struct GroupedMlpForward {
  Activation gate;
  int64_t groups;
  const int64_t* sizes;  // [groups], on the host, summing to the rows
  int64_t in, hidden, out;
  const T* x;              // [rows, in], or routed the tokens [tokens, in]
  const int64_t* copies;   // routed: [rows] on x's device, the copy each row is (of token copy / top_k); else null
  int64_t top_k;           // routed: the copies of each token
  const T* w1;             // [groups, 2 hidden, in]
  const T* w2;             // [groups, out, hidden]
  const T* scale;          // scaled: s [rows], which multiplies y's rows; else null
  T* pre;                  // u [rows, 2 hidden], kept for backward, or null
  T* act;                  // a [rows, hidden], kept for backward, or null (backward recomputes it)
  T* y;                    // [rows, out]
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct GroupedMlpBackward {
  Activation gate;
  int64_t groups;
  const int64_t* sizes;
  int64_t in, hidden, out;
  const T* x;
  const int64_t* copies;
  int64_t top_k;
  const T* w1;
  const T* w2;
  const T* pre;      // u, as the forward kept it
  const T* act;      // a, as the forward kept it, or null: recomputed from u
  const T* dy;       // [rows, out], or routed dout [tokens, out]
  const T* weights;  // routed: the routing weights [tokens, top_k], row i's w[c_i]; scaled: s [rows]; else null
  T* dx;             // [rows, in], each row's own (summing a token's copies is MoEPermute's backward), or null
  T* dw1;            // [groups, 2 hidden, in], or null
  T* dw2;            // [groups, out, hidden], or null
  T* dweights;       // the weights' grads, of their shape (routed: written for the copies in the rows), or null
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// The index of row r's weight (or scale), for both backends: routed its copy's, scaled its own.
FUSELAB_HOST_DEVICE inline int64_t weight_index(const int64_t* copies, int64_t r) { return copies ? copies[r] : r; }

#define FUSELAB_GROUPED_MLP_KERNELS(X)                 \
  X(GroupedMlpForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)  \
  X(GroupedMlpBackward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)

}  // namespace fuselab::kernels

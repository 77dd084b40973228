// A mixture of experts' combine (MoEUnpermute, ops/basic/moe_permute.h): each row's k expert
// outputs, found by their slots among the expert-ordered rows y [kept, dim], summed by the row's
// routing weights w [rows, k]:
//
//   out[r] = sum_j w[r, j] y[slot[r, j]]
//   dy[slot[r, j]] = w[r, j] dout[r]          (the slots are a permutation of y's rows: each row
//                                              of dy is written once)
//   dw[r, j] = <dout[r], y[slot[r, j]]>
// A copy its expert dropped has slot -1: it adds nothing, and its dw is 0. The forward with null
// weights (each 1) is MoEPermute's backward, dx[r] = sum_j dy[slot[r, j]]: a gather per row, in
// parallel and in a fixed order, where a scatter-add would have to serialize.
//
// The caller checks that the slots other than -1 are a permutation of y's rows. Kernels:
// kernels/cpu/moe_combine.cc and kernels/cuda/moe_combine.cu.
#pragma once

#include <cstdint>

#include "kernels/kernel.h"

namespace fuselab::kernels {

template <class T>
struct MoECombineForward {
  const T* y;            // [kept, dim]
  const T* weights;      // [rows, k], or null for weights of 1
  const int64_t* slots;  // [rows, k]
  T* out;                // [rows, dim]
  int64_t rows, k, dim;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct MoECombineBackward {
  const T* dout;  // [rows, dim]
  const T* y;
  const T* weights;
  const int64_t* slots;
  T* dy;        // [kept, dim]
  T* dweights;  // [rows, k]
  int64_t rows, k, dim;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_MOE_COMBINE_KERNELS(X)                 \
  X(MoECombineForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)  \
  X(MoECombineBackward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)

}  // namespace fuselab::kernels

// Attention's two matrix products, for the basic ops of ops/basic/attention.h. The input qkv is
// [B, T, 3C] = [q | k | v] with C = H D: head h of q is columns h D .. h D + D - 1 of the first C,
// of k and v the same columns of the second and third C. For each batch b and head h:
//
//   scores:   s = q k^T * scale   [T, T], -inf above the diagonal when causal (a query sees only
//             itself and earlier keys)
//   backward: dq = ds k * scale,  dk = ds^T q * scale   (ds taken as 0 where masked), added to
//             the grad of qkv passed on
//   values:   y = p v   [T, D], written to columns h D .. of y [B, T, C] (the heads side by side)
//   backward: dp = dy v^T,  dv = p^T dy
//
// Every product is one GEMM on strided operands (leading dimension 3C, C or T): OpenBLAS on the
// CPU (kernels/cpu/attention.cc), cuBLASLt on CUDA (kernels/cuda/attention.cu). scores and p are
// [B, H, T, T]: this is the path that materializes the probabilities, as PyTorch's math attention.
#pragma once

#include <cstdint>

#include "kernels/kernel.h"

namespace fuselab::kernels {

struct AttentionShape {
  int64_t batch, heads, tokens, head_dim;
  int64_t width() const { return heads * head_dim; }                     // C
  int64_t qkv_row() const { return 3 * width(); }                        // 3C, qkv's leading dimension
  int64_t qkv_at(int64_t b, int64_t h) const { return b * tokens * qkv_row() + h * head_dim; }  // q of (b, h)
  int64_t scores_at(int64_t b, int64_t h) const { return (b * heads + h) * tokens * tokens; }
  int64_t output_at(int64_t b, int64_t h) const { return b * tokens * width() + h * head_dim; }
};

template <class T>
struct AttentionScoresForward {
  AttentionShape s;
  const T* qkv;
  T* scores;
  compute_t<T> scale;
  bool causal;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// dqkv = dqkv_out + [dq | dk | 0], where dqkv_out is the grad of the extra output that passes
// qkv on (null: zero).
template <class T>
struct AttentionScoresBackward {
  AttentionShape s;
  const T* qkv;
  const T* dscores;
  const T* dqkv_out;
  T* dqkv;
  compute_t<T> scale;
  bool causal;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct AttentionValuesForward {
  AttentionShape s;
  const T* probs;
  const T* qkv;
  T* y;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// dprobs and dqkv may be null (not needed). dqkv is written whole: dv in its v columns, zero in
// its q and k columns.
template <class T>
struct AttentionValuesBackward {
  AttentionShape s;
  const T* probs;
  const T* qkv;
  const T* dy;
  T* dprobs;
  T* dqkv;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_ATTENTION_KERNELS(X)                       \
  X(AttentionScoresForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)  \
  X(AttentionScoresBackward, FUSELAB_FLOAT_DOUBLE_BFLOAT16) \
  X(AttentionValuesForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)  \
  X(AttentionValuesBackward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)

}  // namespace fuselab::kernels

// Attention's two matrix products, for the basic ops of ops/basic/attention.h. The input qkv is
// [B, T, (H + 2 K) D] = [q | k | v]: H query heads, then K key heads and K value heads (K divides H;
// K = H is multi-head attention, K = 1 multi-query, between them grouped-query attention). Query
// head h reads the key and value heads h / (H / K): each of those serves H / K query heads. For each
// batch b and query head h:
//
//   scores:   s = q k^T * scale   [T, T], -inf above the diagonal when causal (a query sees only
//             itself and earlier keys)
//
// With a KV cache (generation), the first `past` tokens of qkv are earlier ones whose keys and
// values are attended over but which ask no query: the queries are the last T - past tokens, the
// scores and probabilities [B, H, T - past, T], y [B, T - past, H D], and query i sees the keys up
// to past + i. The backward kernels take past = 0 only (a cache is for forward without grad).
//   backward: dq = ds k * scale,  dk = ds^T q * scale   (ds taken as 0 where masked), added to
//             the grad of qkv passed on; a shared key head sums the dk of its query heads
//   values:   y = p v   [T, D], written to columns h D .. of y [B, T, H D] (the heads side by side)
//   backward: dp = dy v^T,  dv = p^T dy   (summed over the query heads sharing the value head)
//
// Every product is one GEMM on strided operands (leading dimension (H + 2 K) D, H D or T): OpenBLAS
// on the CPU (kernels/cpu/attention.cc), cuBLASLt on CUDA (kernels/cuda/attention.cu). scores and p
// are [B, H, T, T]: this is the path that materializes the probabilities, as PyTorch's math attention.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/kernel.h"

namespace fuselab::kernels {

struct AttentionShape {
  int64_t batch, heads, kv_heads, tokens, head_dim;
  int64_t past = 0;  // tokens before the first query (a KV cache's)
  FUSELAB_HOST_DEVICE int64_t queries() const { return tokens - past; }
  FUSELAB_HOST_DEVICE int64_t width() const { return heads * head_dim; }  // H D: y's row
  FUSELAB_HOST_DEVICE int64_t group() const { return heads / kv_heads; }  // query heads per key head
  FUSELAB_HOST_DEVICE int64_t qkv_row() const { return (heads + 2 * kv_heads) * head_dim; }  // qkv's leading dim
  // Where token 0 of query head h, and of the key and value heads it reads, lie in qkv.
  FUSELAB_HOST_DEVICE int64_t q_at(int64_t b, int64_t h) const {
    return (b * tokens + past) * qkv_row() + h * head_dim;
  }
  FUSELAB_HOST_DEVICE int64_t k_at(int64_t b, int64_t h) const {
    return b * tokens * qkv_row() + (heads + h / group()) * head_dim;
  }
  FUSELAB_HOST_DEVICE int64_t v_at(int64_t b, int64_t h) const { return k_at(b, h) + kv_heads * head_dim; }
  FUSELAB_HOST_DEVICE int64_t scores_at(int64_t b, int64_t h) const { return (b * heads + h) * queries() * tokens; }
  FUSELAB_HOST_DEVICE int64_t output_at(int64_t b, int64_t h) const { return b * queries() * width() + h * head_dim; }
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

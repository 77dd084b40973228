// FlashAttention: AttentionScores -> Softmax -> (Dropout) -> AttentionValues of kernels/attention.h
// in one pass over key tiles, never holding the [T, T] scores of a head. For each (batch, head) and
// query row i, over key tiles j (causal: only tiles that reach the diagonal; inside it j <= i):
//
//   s_ij = q_i . k_j * scale
//   m_i = max_j s_ij,  l_i = sum_j e^(s_ij - m_i)  (updated tile by tile: the online softmax)
//   y_i = sum_j e^(s_ij - m_i) z_ij v_j / l_i,  lse_i = m_i + log l_i
//
// where z_ij is Dropout's scaled mask (kernels/dropout_mask.h) at the flat index
// ((b H + h) T + i) T + j of the unfused [B, H, T, T] probabilities, so fused and unfused draw the
// same mask (z = 1 without dropout). The backward recomputes p_ij = e^(s_ij - lse_i) tile by tile:
//
//   D_i = dy_i . y_i
//   dv_j = sum_i p_ij z_ij dy_i
//   ds_ij = p_ij (z_ij (dy_i . v_j) - D_i)
//   dq_i = scale sum_j ds_ij k_j,  dk_j = scale sum_i ds_ij q_i
//
// With rotary tables (a RotaryEmbedding before the attention, kernels/rotary.h), q and k are turned
// by their positions' angles as each tile loads, so the rotated qkv is never written, and the
// backward turns dq and dk back: the result is the grad of the qkv before the rotation.
//
// qkv is [B, T, (H + 2 K) D] as in kernels/attention.h (query head h reads key and value head
// h / (H / K)); y is [B, T, H D]; lse is [B, H, T] in compute_t<T>.
// Kernels: kernels/cpu/flash_attention.cc (threaded over batch x heads x query tiles) and
// kernels/cuda/flash_attention.cu (one block per batch, head and query tile; shared-memory tiles).
#pragma once

#include <cstdint>

#include "kernels/attention.h"
#include "kernels/host_device.h"
#include "kernels/kernel.h"

namespace fuselab::kernels {

struct FlashDropout {
  double p = 0;  // 0: no dropout
  uint64_t seed = 0;
};

// cos and sin of the rotary angles, [T, D/2] each (kernels/rotary.h), or null: no rotation.
template <class C>
struct FlashRotary {
  const C* cos = nullptr;
  const C* sin = nullptr;
  FUSELAB_HOST_DEVICE bool active() const { return cos != nullptr; }
};

template <class T>
struct FlashAttentionForward {
  AttentionShape s;
  const T* qkv;
  T* y;
  compute_t<T>* lse;
  compute_t<T> scale;
  bool causal;
  FlashDropout dropout;
  FlashRotary<compute_t<T>> rotary;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// dqkv = dqkv_out + [dq | dk | dv], where dqkv_out (null: zero) is the grad of the qkv that
// AttentionScores passes on (with rotary tables: that sum turned back in its q and k columns).
template <class T>
struct FlashAttentionBackward {
  AttentionShape s;
  const T* qkv;
  const T* y;
  const compute_t<T>* lse;
  const T* dy;
  const T* dqkv_out;
  T* dqkv;
  compute_t<T> scale;
  bool causal;
  FlashDropout dropout;
  FlashRotary<compute_t<T>> rotary;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_FLASH_ATTENTION_KERNELS(X)                \
  X(FlashAttentionForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16) \
  X(FlashAttentionBackward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)

}  // namespace fuselab::kernels

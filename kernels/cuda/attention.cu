// The CUDA bodies of kernels/attention.h: one cuBLASLt GEMM per (batch, head) and product, and
// one elementwise launch for the causal mask.
#include "kernels/attention.h"

#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_api.h"
#include "kernels/cuda/gemm.h"

namespace fuselab::kernels::cuda {
namespace {

// Over [B H, queries, tokens]: out = -inf where key col lies after query row (col > past + row)
// and x elsewhere (out may be x), or 0 there when `zero` (the masked grad).
template <class T>
__global__ void causal_mask_kernel(const T* x, T* out, int64_t n, int64_t queries, int64_t tokens, int64_t past,
                                   bool zero) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) {
    const int64_t col = i % tokens, row = (i / tokens) % queries;
    out[i] = col > past + row ? T(zero ? 0.0f : -INFINITY) : x[i];
  }
}

template <class T>
void causal_mask(const T* x, T* out, const AttentionShape& s, bool zero, int device) {
  const int64_t n = s.batch * s.heads * s.queries() * s.tokens;
  if (n == 0) return;
  use_device(device);
  causal_mask_kernel<T><<<blocks_for(n), kThreads>>>(x, out, n, s.queries(), s.tokens, s.past, zero);
  check_launch("causal_mask_kernel");
}

}  // namespace
}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void AttentionScoresForward<T>::cuda(KernelContext& ctx) const {
  const int64_t q = s.queries(), t = s.tokens, d = s.head_dim, ld = s.qkv_row();
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      gemm<T>(false, true, q, t, d, scale, qkv + s.q_at(b, h), ld, qkv + s.k_at(b, h), ld, 0, scores + s.scores_at(b, h),
              t, ctx.device);
    }
  }
  if (causal) causal_mask<T>(scores, scores, s, false, ctx.device);
}

template <class T>
void AttentionScoresBackward<T>::cuda(KernelContext& ctx) const {
  const int64_t t = s.tokens, d = s.head_dim, ld = s.qkv_row();
  const size_t bytes = size_t(s.batch * t * ld) * sizeof(T);
  if (dqkv_out) copy_device_to_device(dqkv, dqkv_out, bytes, ctx.device);
  else fill_bytes(dqkv, 0, bytes, ctx.device);
  const T* ds = dscores;
  if (causal) {  // ds with its masked entries zeroed
    T* masked = ctx.scratch<T>(s.batch * s.heads * t * t);
    causal_mask<T>(dscores, masked, s, true, ctx.device);
    ds = masked;
  }
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const T* ds_bh = ds + s.scores_at(b, h);
      const int64_t q_at = s.q_at(b, h), k_at = s.k_at(b, h);
      gemm<T>(false, false, t, d, t, scale, ds_bh, t, qkv + k_at, ld, 1, dqkv + q_at, ld, ctx.device);  // dq += ds k
      gemm<T>(true, false, t, d, t, scale, ds_bh, t, qkv + q_at, ld, 1, dqkv + k_at, ld, ctx.device);   // dk += ds^T q
    }
  }
}

template <class T>
void AttentionValuesForward<T>::cuda(KernelContext& ctx) const {
  const int64_t q = s.queries(), t = s.tokens, d = s.head_dim;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      gemm<T>(false, false, q, d, t, 1, probs + s.scores_at(b, h), t, qkv + s.v_at(b, h), s.qkv_row(), 0,
              y + s.output_at(b, h), s.width(), ctx.device);
    }
  }
}

template <class T>
void AttentionValuesBackward<T>::cuda(KernelContext& ctx) const {
  const int64_t t = s.tokens, d = s.head_dim, ld = s.qkv_row();
  if (dqkv) fill_bytes(dqkv, 0, size_t(s.batch * t * ld) * sizeof(T), ctx.device);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t v_at = s.v_at(b, h);
      const T* g = dy + s.output_at(b, h);
      if (dprobs) {
        gemm<T>(false, true, t, t, d, 1, g, s.width(), qkv + v_at, ld, 0, dprobs + s.scores_at(b, h), t, ctx.device);
      }
      if (dqkv) {
        gemm<T>(true, false, t, d, t, 1, probs + s.scores_at(b, h), t, g, s.width(), 1, dqkv + v_at, ld, ctx.device);
      }
    }
  }
}

FUSELAB_ATTENTION_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels

// The CPU bodies of kernels/attention.h: one OpenBLAS GEMM per (batch, head) and product.
#include "kernels/attention.h"

#include <algorithm>
#include <limits>

#include "kernels/cpu/gemm.h"

namespace fuselab::kernels {
using cpu::gemm;

template <class T>
void AttentionScoresForward<T>::cpu(KernelContext&) const {
  const int64_t q = s.queries(), t = s.tokens, d = s.head_dim, ld = s.qkv_row();
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      T* out = scores + s.scores_at(b, h);
      gemm<T>(false, true, q, t, d, T(scale), qkv + s.q_at(b, h), ld, qkv + s.k_at(b, h), ld, T(0), out, t);
      if (!causal) continue;
      const T minus_infinity = T(-std::numeric_limits<float>::infinity());
      for (int64_t i = 0; i < q; ++i) std::fill(out + i * t + s.past + i + 1, out + (i + 1) * t, minus_infinity);
    }
  }
}

template <class T>
void AttentionScoresBackward<T>::cpu(KernelContext& ctx) const {
  const int64_t t = s.tokens, d = s.head_dim, ld = s.qkv_row();
  T* masked = causal ? ctx.scratch<T>(t * t) : nullptr;
  const int64_t n = s.batch * t * ld;
  if (dqkv_out) std::copy_n(dqkv_out, n, dqkv);
  else std::fill_n(dqkv, n, T(0));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const T* ds = dscores + s.scores_at(b, h);
      if (causal) {  // ds with its masked entries zeroed
        for (int64_t i = 0; i < t; ++i) {
          std::copy(ds + i * t, ds + i * t + i + 1, masked + i * t);
          std::fill(masked + i * t + i + 1, masked + (i + 1) * t, T(0));
        }
        ds = masked;
      }
      const int64_t q_at = s.q_at(b, h), k_at = s.k_at(b, h);
      gemm<T>(false, false, t, d, t, T(scale), ds, t, qkv + k_at, ld, T(1), dqkv + q_at, ld);  // dq += ds k
      gemm<T>(true, false, t, d, t, T(scale), ds, t, qkv + q_at, ld, T(1), dqkv + k_at, ld);   // dk += ds^T q
    }
  }
}

template <class T>
void AttentionValuesForward<T>::cpu(KernelContext&) const {
  const int64_t q = s.queries(), t = s.tokens, d = s.head_dim;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      gemm<T>(false, false, q, d, t, T(1), probs + s.scores_at(b, h), t, qkv + s.v_at(b, h), s.qkv_row(), T(0),
              y + s.output_at(b, h), s.width());
    }
  }
}

template <class T>
void AttentionValuesBackward<T>::cpu(KernelContext&) const {
  const int64_t t = s.tokens, d = s.head_dim, ld = s.qkv_row();
  if (dqkv) std::fill_n(dqkv, s.batch * t * ld, T(0));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t v_at = s.v_at(b, h);
      const T* g = dy + s.output_at(b, h);
      if (dprobs) gemm<T>(false, true, t, t, d, T(1), g, s.width(), qkv + v_at, ld, T(0), dprobs + s.scores_at(b, h), t);
      if (dqkv) gemm<T>(true, false, t, d, t, T(1), probs + s.scores_at(b, h), t, g, s.width(), T(1), dqkv + v_at, ld);
    }
  }
}

FUSELAB_ATTENTION_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

// The CPU bodies of kernels/flash_attention.h. The forward runs one job per (batch, head, query
// tile) in parallel: each key tile is read once per query tile and stays in cache while the
// tile's rows use it. The backward runs one job per (batch, head), its rows in order, so dk and
// dv sum in a fixed order: deterministic at any thread count. Sums and the softmax are in
// compute_t<T> (float32 for bfloat16).
#include "kernels/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/threading.h"
#include "kernels/dropout_mask.h"

namespace fuselab::kernels {
namespace {

constexpr int64_t kQueryTile = 32, kKeyTile = 64;

template <class C, class T>
C dot(const C* a, const T* b, int64_t n) {
  C sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t e = 0; e < n; ++e) sum += a[e] * C(b[e]);
  return sum;
}

template <class C, class T>
void add_scaled(C* out, C alpha, const T* x, int64_t n) {
#pragma omp simd
  for (int64_t e = 0; e < n; ++e) out[e] += alpha * C(x[e]);
}

template <class C, class T>
void widen(const T* x, int64_t n, C* out) {
  for (int64_t e = 0; e < n; ++e) out[e] = C(x[e]);
}

// z_ij: Dropout's scaled mask at the unfused probabilities' flat index, 1 without dropout.
template <class C>
C keep(const FlashDropout& dropout, int64_t flat) {
  return dropout.p > 0 ? dropout_scaled_mask<C>(dropout.seed, uint64_t(flat), dropout.p) : C(1);
}

}  // namespace

template <class T>
void FlashAttentionForward<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
  const int64_t t = s.tokens, d = s.head_dim, ld = s.qkv_row(), c = s.width();
  const int64_t query_tiles = (t + kQueryTile - 1) / kQueryTile, jobs = s.batch * s.heads * query_tiles;
#pragma omp parallel for schedule(dynamic) if (jobs > 1 && t * t * d > cpu::kParallelGrain)
  for (int64_t job = 0; job < jobs; ++job) {
    const int64_t b = job / (s.heads * query_tiles), h = job / query_tiles % s.heads;
    const int64_t i0 = job % query_tiles * kQueryTile, i1 = std::min(t, i0 + kQueryTile), rows = i1 - i0;
    const T* q = qkv + s.qkv_at(b, h);
    const T* k = q + c;
    const T* v = q + 2 * c;
    std::vector<C> qi(size_t(rows * d)), acc(size_t(rows * d), C(0)), score(kKeyTile);
    std::vector<C> m(size_t(rows), -std::numeric_limits<C>::infinity()), l(size_t(rows), C(0));
    for (int64_t r = 0; r < rows; ++r) widen(q + (i0 + r) * ld, d, qi.data() + r * d);
    const int64_t keys = causal ? i1 : t;  // causal: tiles past the last query row are skipped
    for (int64_t j0 = 0; j0 < keys; j0 += kKeyTile) {
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r, j1 = std::min(j0 + kKeyTile, causal ? i + 1 : t);
        if (j1 <= j0) continue;
        C* acc_i = acc.data() + r * d;
        C tile_max = -std::numeric_limits<C>::infinity();
        for (int64_t j = j0; j < j1; ++j) {
          score[size_t(j - j0)] = dot(qi.data() + r * d, k + j * ld, d) * scale;
          tile_max = std::max(tile_max, score[size_t(j - j0)]);
        }
        const C m_new = std::max(m[size_t(r)], tile_max), correction = std::exp(m[size_t(r)] - m_new);
        l[size_t(r)] *= correction;
        for (int64_t e = 0; e < d; ++e) acc_i[e] *= correction;
        const int64_t flat = ((b * s.heads + h) * t + i) * t;
        for (int64_t j = j0; j < j1; ++j) {
          const C p = std::exp(score[size_t(j - j0)] - m_new);
          l[size_t(r)] += p;
          const C pz = p * keep<C>(dropout, flat + j);
          if (pz != C(0)) add_scaled(acc_i, pz, v + j * ld, d);
        }
        m[size_t(r)] = m_new;
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      T* y_i = y + s.output_at(b, h) + (i0 + r) * c;
      for (int64_t e = 0; e < d; ++e) y_i[e] = T(acc[size_t(r * d + e)] / l[size_t(r)]);
      lse[(b * s.heads + h) * t + i0 + r] = m[size_t(r)] + std::log(l[size_t(r)]);
    }
  }
}

template <class T>
void FlashAttentionBackward<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
  const int64_t t = s.tokens, d = s.head_dim, ld = s.qkv_row(), c = s.width();
  const int64_t jobs = s.batch * s.heads;
#pragma omp parallel for schedule(dynamic) if (jobs > 1 && t * t * d > cpu::kParallelGrain)
  for (int64_t job = 0; job < jobs; ++job) {
    const int64_t b = job / s.heads, h = job % s.heads;
    const T* q = qkv + s.qkv_at(b, h);
    const T* k = q + c;
    const T* v = q + 2 * c;
    std::vector<C> dq(size_t(t * d), C(0)), dk(size_t(t * d), C(0)), dv(size_t(t * d), C(0));
    std::vector<C> qi(static_cast<size_t>(d)), dyi(static_cast<size_t>(d));
    for (int64_t i = 0; i < t; ++i) {
      widen(q + i * ld, d, qi.data());
      widen(dy + s.output_at(b, h) + i * c, d, dyi.data());
      const C big_d = dot(dyi.data(), y + s.output_at(b, h) + i * c, d);  // D_i = dy_i . y_i
      const C lse_i = lse[(b * s.heads + h) * t + i];
      const int64_t flat = ((b * s.heads + h) * t + i) * t;
      for (int64_t j = 0; j < (causal ? i + 1 : t); ++j) {
        const C p = std::exp(dot(qi.data(), k + j * ld, d) * scale - lse_i), z = keep<C>(dropout, flat + j);
        const C ds = p * (z * dot(dyi.data(), v + j * ld, d) - big_d);
        C* dv_j = dv.data() + j * d;
        C* dk_j = dk.data() + j * d;
        C* dq_i = dq.data() + i * d;
#pragma omp simd
        for (int64_t e = 0; e < d; ++e) {
          dv_j[e] += p * z * dyi[e];
          dk_j[e] += ds * scale * qi[e];
          dq_i[e] += ds * scale * C(k[j * ld + e]);
        }
      }
    }
    // dqkv = dqkv_out + [dq | dk | dv] in this head's columns.
    for (int64_t i = 0; i < t; ++i) {
      const int64_t at = s.qkv_at(b, h) + i * ld;
      for (int64_t part = 0; part < 3; ++part) {
        const C* grad = (part == 0 ? dq : part == 1 ? dk : dv).data() + i * d;
        for (int64_t e = 0; e < d; ++e) {
          const int64_t x = at + part * c + e;
          dqkv[x] = T((dqkv_out ? C(dqkv_out[x]) : C(0)) + grad[e]);
        }
      }
    }
  }
}

FUSELAB_FLASH_ATTENTION_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

// The CPU bodies of kernels/flash_attention.h, on tiles of queries by keys whose products
// are GEMMs in compute_t<T> (kernels/cpu/gemm.h) on the head's rows where they lie (bfloat16 rows
// are widened to float32 first). The forward turns (and widens) each key head once, then runs one
// job per (batch, head, query tile) in parallel; the backward one job per (batch, key head), its
// tiles in a fixed order, so every sum is deterministic at any thread count.
#include "kernels/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/activation_math.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/threading.h"
#include "kernels/dropout_mask.h"
#include "kernels/rotary.h"

namespace fuselab::kernels {
namespace {

// Tiles of 64 queries by up to 256 keys. Longer key tiles make fewer and larger GEMMs (a 64 x 64
// tile's products ran at well under half of the FMA peak) without more work on the causal diagonal:
// a query tile's keys end at its last query. At T = 1024 the forward took 0.85x the time of 64 x 64
// tiles, the backward 0.96x (bench/RESULTS.md).
constexpr int64_t kQueryTile = 64, kKeyTile = 256;

// Rows of one head's q, k, v, y or dy in compute_t<T>: row i at data + i * ld.
template <class C>
struct HeadRows {
  const C* data;
  int64_t ld;
  const C* row(int64_t i) const { return data + i * ld; }
};

// Rows [from, to) of a query or key head (rows of `ld` elements, the head at column 0 of `x`),
// renumbered from 0: where they lie when T is already C and there are no rotary tables, else
// widened and turned by the rotary angles of their positions into `buffer` as [to - from, d].
template <class C, class T>
HeadRows<C> rotated_head_rows(const T* x, int64_t ld, int64_t from, int64_t to, int64_t d,
                              const FlashRotary<C>& rotary, std::vector<C>& buffer) {
  if constexpr (std::is_same_v<C, T>) {
    if (!rotary.active()) return {x + from * ld, ld};
  }
  const int64_t half = d / 2;
  buffer.resize(size_t((to - from) * d));
  for (int64_t i = from; i < to; ++i) {
    const T* in = x + i * ld;
    C* out = buffer.data() + (i - from) * d;
    if (rotary.active()) {
      const C *c = rotary.cos + i * half, *s = rotary.sin + i * half;
#pragma omp simd
      for (int64_t e = 0; e < half; ++e) rotate_pair(C(in[e]), C(in[e + half]), c[e], s[e], &out[e], &out[e + half]);
    } else {
#pragma omp simd
      for (int64_t e = 0; e < d; ++e) out[e] = C(in[e]);
    }
  }
  return {buffer.data(), d};
}

// The same for rows that are never rotated (v, y, dy).
template <class C, class T>
HeadRows<C> head_rows(const T* x, int64_t ld, int64_t from, int64_t to, int64_t d, std::vector<C>& buffer) {
  return rotated_head_rows(x, ld, from, to, d, FlashRotary<C>{}, buffer);
}

// z_ij: Dropout's scaled mask at the unfused probabilities' flat index, 1 without dropout.
template <class C>
C keep(const FlashDropout& dropout, int64_t flat) {
  return dropout.p > 0 ? dropout_scaled_mask<C>(dropout.seed, uint64_t(flat), dropout.p) : C(1);
}

// The keys j0 .. j0 + live - 1 of a tile of `cols` that query i sees.
int64_t live_keys(bool causal, int64_t i, int64_t j0, int64_t cols) {
  return causal ? std::clamp<int64_t>(i - j0 + 1, 0, cols) : cols;
}

// The rows' exponentials, most of the kernels' own work. Forward, one query row of a tile: s_j
// becomes e^(s_j - m_new) over the live keys, where m_new = max(m, max_j s_j); returns m_new and
// the sum of the exponentials.
template <class C>
[[gnu::always_inline]] inline std::pair<C, C> exponentiate_row(C* s, int64_t live, C m) {
  C tile_max = -std::numeric_limits<C>::infinity();
#pragma omp simd reduction(max : tile_max)
  for (int64_t jj = 0; jj < live; ++jj) tile_max = std::max(tile_max, s[jj]);
  const C m_new = std::max(m, tile_max);
  C sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t jj = 0; jj < live; ++jj) {
    s[jj] = exp_approx(s[jj] - m_new);
    sum += s[jj];
  }
  return {m_new, sum};
}

// Backward, one query row of a tile: s_j becomes p_j = e^(s_j - lse) over the live keys, 0 beyond;
// then, without dropout (`ds` not null), dp_j becomes ds_j = p_j (dp_j - D).
template <class C>
[[gnu::always_inline]] inline void probabilities_row(C* s, C* ds, int64_t live, int64_t cols, C lse, C big_d) {
#pragma omp simd
  for (int64_t jj = 0; jj < live; ++jj) s[jj] = exp_approx(s[jj] - lse);
  std::fill(s + live, s + cols, C(0));
  if (!ds) return;
#pragma omp simd
  for (int64_t jj = 0; jj < cols; ++jj) ds[jj] = s[jj] * (ds[jj] - big_d);
}

// Both rows compiled for baseline x86-64, AVX2 and AVX-512 (isa.h), one picked per kernel call.
template <class C>
std::pair<C, C> baseline_exponentiate_row(C* s, int64_t live, C m) {
  return exponentiate_row(s, live, m);
}
template <class C>
FUSELAB_TARGET_AVX2 std::pair<C, C> avx2_exponentiate_row(C* s, int64_t live, C m) {
  return exponentiate_row(s, live, m);
}
template <class C>
FUSELAB_TARGET_AVX512 std::pair<C, C> avx512_exponentiate_row(C* s, int64_t live, C m) {
  return exponentiate_row(s, live, m);
}
template <class C>
void baseline_probabilities_row(C* s, C* ds, int64_t live, int64_t cols, C lse, C big_d) {
  probabilities_row(s, ds, live, cols, lse, big_d);
}
template <class C>
FUSELAB_TARGET_AVX2 void avx2_probabilities_row(C* s, C* ds, int64_t live, int64_t cols, C lse, C big_d) {
  probabilities_row(s, ds, live, cols, lse, big_d);
}
template <class C>
FUSELAB_TARGET_AVX512 void avx512_probabilities_row(C* s, C* ds, int64_t live, int64_t cols, C lse, C big_d) {
  probabilities_row(s, ds, live, cols, lse, big_d);
}

// p[jj] *= z_ij over a row of the tile.
template <class C>
void apply_dropout(const FlashDropout& dropout, int64_t flat, C* p, int64_t cols) {
  if (dropout.p == 0) return;
  for (int64_t jj = 0; jj < cols; ++jj) p[jj] *= keep<C>(dropout, flat + jj);
}

// out = dqkv_out + grad over rows [0, T) of one head's columns at `at` (dqkv_out null: zero), turned
// back by the rotary angles when given tables (the grad of a rotated q or k is that of the unrotated
// one turned by -a).
template <class T, class C>
void write_head_grad(T* dqkv, const T* dqkv_out, int64_t at, int64_t ld, const std::vector<C>& grad, int64_t t,
                     int64_t d, const FlashRotary<C>& turn_back) {
  const int64_t half = d / 2;
  std::vector<C> row(static_cast<size_t>(d));
  for (int64_t i = 0; i < t; ++i) {
    const C* g = grad.data() + i * d;
    T* out = dqkv + at + i * ld;
    const T* passed_on = dqkv_out ? dqkv_out + at + i * ld : nullptr;
#pragma omp simd
    for (int64_t e = 0; e < d; ++e) row[size_t(e)] = (passed_on ? C(passed_on[e]) : C(0)) + g[e];
    if (turn_back.active()) {
      const C *c = turn_back.cos + i * half, *s = turn_back.sin + i * half;
#pragma omp simd
      for (int64_t e = 0; e < half; ++e) {
        C x1, x2;
        rotate_pair(row[size_t(e)], row[size_t(e + half)], c[e], -s[e], &x1, &x2);
        out[e] = T(x1);
        out[e + half] = T(x2);
      }
    } else {
#pragma omp simd
      for (int64_t e = 0; e < d; ++e) out[e] = T(row[size_t(e)]);
    }
  }
}

}  // namespace

template <class T>
void FlashAttentionForward<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
  const int64_t t = s.tokens, d = s.head_dim, ld = s.qkv_row(), c = s.width();
  const int64_t tiles = (t + kQueryTile - 1) / kQueryTile, jobs = s.batch * s.heads * tiles;
  const auto exponentiate = cpu::pick_isa(&avx512_exponentiate_row<C>, &avx2_exponentiate_row<C>,
                                          &baseline_exponentiate_row<C>);
  const bool parallel = t * t * d > cpu::kParallelGrain;
  // Each key and value head once, turned and widened where needed, for all the query tiles of all
  // the query heads that read it, rather than once per query tile.
  const int64_t kv_jobs = s.batch * s.kv_heads;
  const size_t kv_count = static_cast<size_t>(kv_jobs);
  std::vector<std::vector<C>> k_buffers(kv_count), v_buffers(kv_count);
  std::vector<HeadRows<C>> keys(kv_count), values(kv_count);
#pragma omp parallel for schedule(static) if (kv_jobs > 1 && parallel)
  for (int64_t job = 0; job < kv_jobs; ++job) {
    const int64_t b = job / s.kv_heads, h = job % s.kv_heads * s.group();
    keys[size_t(job)] = rotated_head_rows(qkv + s.k_at(b, h), ld, 0, t, d, rotary, k_buffers[size_t(job)]);
    values[size_t(job)] = head_rows(qkv + s.v_at(b, h), ld, 0, t, d, v_buffers[size_t(job)]);
  }
#pragma omp parallel for schedule(dynamic) if (jobs > 1 && parallel)
  for (int64_t job = 0; job < jobs; ++job) {
    const int64_t b = job / (s.heads * tiles), h = job / tiles % s.heads;
    const int64_t i0 = job % tiles * kQueryTile, i1 = std::min(t, i0 + kQueryTile), rows = i1 - i0;
    std::vector<C> q_buffer, p(size_t(rows * kKeyTile));
    std::vector<C> o(size_t(rows * d), C(0)), m(size_t(rows), -std::numeric_limits<C>::infinity()), l(size_t(rows), C(0));
    const HeadRows<C> qi = rotated_head_rows(qkv + s.q_at(b, h), ld, i0, i1, d, rotary, q_buffer);
    const size_t kv_head = size_t(b * s.kv_heads + h / s.group());
    const HeadRows<C> &kc = keys[kv_head], &vc = values[kv_head];
    const int64_t keys_seen = causal ? i1 : t;  // causal: later keys skipped
    for (int64_t j0 = 0; j0 < keys_seen; j0 += kKeyTile) {
      const int64_t j1 = std::min(keys_seen, j0 + kKeyTile), cols = j1 - j0;
      const C *kj = kc.row(j0), *vj = vc.row(j0);
      cpu::gemm<C>(false, true, rows, cols, d, scale, qi.data, qi.ld, kj, kc.ld, C(0), p.data(), cols);  // s
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r, live = live_keys(causal, i, j0, cols);
        C* pr = p.data() + r * cols;
        std::fill(pr + live, pr + cols, C(0));
        if (live == 0) continue;  // this row sees none of the tile's keys
        const auto [m_new, sum] = exponentiate(pr, live, m[size_t(r)]);
        const C correction = exp_approx(m[size_t(r)] - m_new);
        apply_dropout(dropout, ((b * s.heads + h) * t + i) * t + j0, pr, live);
        l[size_t(r)] = l[size_t(r)] * correction + sum;
        m[size_t(r)] = m_new;
        C* o_r = o.data() + r * d;
#pragma omp simd
        for (int64_t e = 0; e < d; ++e) o_r[e] *= correction;
      }
      cpu::gemm<C>(false, false, rows, d, cols, C(1), p.data(), cols, vj, vc.ld, C(1), o.data(), d);  // o += p v
    }
    for (int64_t r = 0; r < rows; ++r) {
      T* y_i = y + s.output_at(b, h) + (i0 + r) * c;
      const C *o_r = o.data() + r * d, l_r = l[size_t(r)];
#pragma omp simd
      for (int64_t e = 0; e < d; ++e) y_i[e] = T(o_r[e] / l_r);
      lse[(b * s.heads + h) * t + i0 + r] = m[size_t(r)] + std::log(l[size_t(r)]);
    }
  }
}

// One job per (batch, key head): the key head's dk and dv sum over the query heads that share it, in
// a fixed order, so no two jobs write the same columns.
template <class T>
void FlashAttentionBackward<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
  const int64_t t = s.tokens, d = s.head_dim, ld = s.qkv_row(), c = s.width();
  const int64_t jobs = s.batch * s.kv_heads;
  const auto probabilities = cpu::pick_isa(&avx512_probabilities_row<C>, &avx2_probabilities_row<C>,
                                           &baseline_probabilities_row<C>);
#pragma omp parallel for schedule(dynamic) if (jobs > 1 && t * t * d > cpu::kParallelGrain)
  for (int64_t job = 0; job < jobs; ++job) {
    const int64_t b = job / s.kv_heads, first_head = job % s.kv_heads * s.group();
    const size_t head = size_t(t * d);
    std::vector<C> buffers[5], dq(head), dk(head, C(0)), dv(head, C(0));
    const HeadRows<C> kc = rotated_head_rows(qkv + s.k_at(b, first_head), ld, 0, t, d, rotary, buffers[1]),
                      vc = head_rows(qkv + s.v_at(b, first_head), ld, 0, t, d, buffers[2]);
    std::vector<C> big_d(static_cast<size_t>(t)), p(size_t(kQueryTile * kKeyTile));
    std::vector<C> dp(p.size());
    for (int64_t h = first_head; h < first_head + s.group(); ++h) {
      const HeadRows<C> qc = rotated_head_rows(qkv + s.q_at(b, h), ld, 0, t, d, rotary, buffers[0]),
                        dyc = head_rows(dy + s.output_at(b, h), c, 0, t, d, buffers[3]),
                        yc = head_rows(y + s.output_at(b, h), c, 0, t, d, buffers[4]);
      for (int64_t i = 0; i < t; ++i) {  // D_i = dy_i . y_i
        const C *dy_i = dyc.row(i), *y_i = yc.row(i);
        C sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t e = 0; e < d; ++e) sum += dy_i[e] * y_i[e];
        big_d[size_t(i)] = sum;
      }
      std::fill(dq.begin(), dq.end(), C(0));
      for (int64_t j0 = 0; j0 < t; j0 += kKeyTile) {
        const int64_t j1 = std::min(t, j0 + kKeyTile);
        for (int64_t i0 = causal ? j0 : 0; i0 < t; i0 += kQueryTile) {  // causal: earlier queries see none
          const int64_t i1 = std::min(t, i0 + kQueryTile), rows = i1 - i0;
          const int64_t cols = (causal ? std::min(j1, i1) : j1) - j0;  // causal: keys after i1 skipped
          const C *qi = qc.row(i0), *dyi = dyc.row(i0), *kj = kc.row(j0), *vj = vc.row(j0);
          cpu::gemm<C>(false, true, rows, cols, d, scale, qi, qc.ld, kj, kc.ld, C(0), p.data(), cols);    // s
          cpu::gemm<C>(false, true, rows, cols, d, C(1), dyi, dyc.ld, vj, vc.ld, C(0), dp.data(), cols);  // dy v^T
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t i = i0 + r, live = live_keys(causal, i, j0, cols);
            const C lse_i = lse[(b * s.heads + h) * t + i], d_i = big_d[size_t(i)];
            C* pr = p.data() + r * cols;    // s, then p, then p z (the dropped probabilities)
            C* dsr = dp.data() + r * cols;  // dy v^T, then ds
            C* ds_now = dropout.p == 0 ? dsr : nullptr;  // with dropout, ds needs z: below
            probabilities(pr, ds_now, live, cols, lse_i, d_i);
            if (dropout.p > 0) {
              const int64_t flat = ((b * s.heads + h) * t + i) * t + j0;
              for (int64_t jj = 0; jj < cols; ++jj) {
                const C z = keep<C>(dropout, flat + jj);
                dsr[jj] = pr[jj] * (z * dsr[jj] - d_i);
                pr[jj] *= z;
              }
            }
          }
          C *dv_j = dv.data() + j0 * d, *dk_j = dk.data() + j0 * d, *dq_i = dq.data() + i0 * d;
          cpu::gemm<C>(true, false, cols, d, rows, C(1), p.data(), cols, dyi, dyc.ld, C(1), dv_j, d);   // dv += pz^T dy
          cpu::gemm<C>(true, false, cols, d, rows, scale, dp.data(), cols, qi, qc.ld, C(1), dk_j, d);   // dk += ds^T q
          cpu::gemm<C>(false, false, rows, d, cols, scale, dp.data(), cols, kj, kc.ld, C(1), dq_i, d);  // dq += ds k
        }
      }
      write_head_grad(dqkv, dqkv_out, s.q_at(b, h), ld, dq, t, d, rotary);
    }
    write_head_grad(dqkv, dqkv_out, s.k_at(b, first_head), ld, dk, t, d, rotary);
    write_head_grad(dqkv, dqkv_out, s.v_at(b, first_head), ld, dv, t, d, FlashRotary<C>{});  // v is not rotated
  }
}

FUSELAB_FLASH_ATTENTION_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

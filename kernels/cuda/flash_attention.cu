// The CUDA bodies of kernels/flash_attention.h (the math is there). Every kernel gives one row of a
// tile (a query row, or a key row in the key grads) to a group of kLanes consecutive threads of a
// warp: each lane keeps columns lane, lane + kLanes, ... of the row's vectors in registers, a dot
// product is the lanes' partial sums added across the group by shuffles (every lane gets the same
// bits), and the other operand's tile streams through shared memory. Tiles have kRows rows, the
// same for queries and keys, so under the causal mask a tile pair is either wholly below the
// diagonal, the diagonal tile (masked j > i inside it), or wholly above it (skipped).
//
//   forward:     one block per (b, h, query tile): K and V tiles stream; online softmax per row
//   row dots:    D_i = dy_i . y_i, one warp per row
//   key grads:   one block per (b, key head, key tile): the Q and dY tiles of each query head that
//                shares the key head stream; dk_j, dv_j in registers
//   query grads: one block per (b, h, query tile): K and V tiles stream; dq_i in registers
//
// With rotary tables, q and k elements are turned as they load (each reads its pair's partner), and
// the grads kernels write the grad of the rotated qkv to scratch, which ApplyRotary turns back into
// dqkv (the one extra pass: turning a grad back needs both halves of a row, which lanes split).
//
// The grads are split by who owns the sum, so nothing is added atomically and the results do not
// depend on the launch order. Each writes its own columns of dqkv with dqkv_out added, so dqkv is
// written whole without a copy first. Everything is computed in C = compute_t<T> (float32 for
// bfloat16, float64 for float64); the tiles are held in C too.
//
// Shared memory is static (at most 48 KiB): two tiles of kRows x kMaxHeadDim elements of C, 32 KiB
// for both float32 (32 rows) and float64 (16 rows).
#include "kernels/flash_attention.h"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/dropout_mask.h"
#include "kernels/rotary.h"

namespace fuselab::kernels::cuda {
namespace {

constexpr int kMaxHeadDim = 128;

// Rows per tile and lanes per row; kRows * kLanes = 256 threads a block.
template <class C>
struct Tile;
template <>
struct Tile<float> {
  static constexpr int kRows = 32, kLanes = 8;
};
template <>
struct Tile<double> {
  static constexpr int kRows = 16, kLanes = 16;
};
template <class C>
constexpr int kSlice = kMaxHeadDim / Tile<C>::kLanes;  // columns a lane holds
template <class C>
constexpr int kBlockThreads = Tile<C>::kRows * Tile<C>::kLanes;

struct Dims : AttentionShape {
  int64_t tiles;
  // Dropout's flat index of (query i, key j) in the unfused [B, H, T, T] probabilities.
  __host__ __device__ uint64_t mask_index(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return uint64_t(((b * heads + h) * tokens + i) * tokens + j);
  }
};

// The block's batch, head (of `heads`: query heads, or key heads in the key grads) and first tile
// row, and the calling thread's row and lane in the tile. Tiles run last first: under the causal
// mask they are the longest.
struct Place {
  int64_t b, h, first;
  int row, lane;
};

template <class C>
__device__ Place place_of_block(const Dims& n, int64_t heads) {
  const int64_t tile = n.tiles - 1 - int64_t(blockIdx.x) % n.tiles, bh = int64_t(blockIdx.x) / n.tiles;
  const int t = int(threadIdx.x);
  return {bh / heads, bh % heads, tile * Tile<C>::kRows, t / Tile<C>::kLanes, t % Tile<C>::kLanes};
}

// Element c of the row of token i, turned by the row's rotary angles when there are tables.
template <class C, class T>
__device__ C element(const T* row, int64_t c, int64_t i, int64_t head_dim, const FlashRotary<C>& rotary) {
  if (!rotary.active()) return C(row[c]);
  const int64_t half = head_dim / 2, pair = c % half, at = i * half + pair;
  C y1, y2;
  rotate_pair(C(row[pair]), C(row[pair + half]), rotary.cos[at], rotary.sin[at], &y1, &y2);
  return c < half ? y1 : y2;
}

// This lane's columns of the row of token i (zero past head_dim, or for a row past the last token:
// row null), rotated when there are tables.
template <class C, class T>
__device__ void load_slice(C (&out)[kSlice<C>], const T* row, int64_t i, int lane, int64_t head_dim,
                           const FlashRotary<C>& rotary = {}) {
  for (int k = 0; k < kSlice<C>; ++k) {
    const int64_t c = lane + k * Tile<C>::kLanes;
    out[k] = row != nullptr && c < head_dim ? element(row, c, i, head_dim, rotary) : C(0);
  }
}

// Rows first .. first + kRows - 1 of a [tokens, head_dim] matrix with leading dimension ld into a
// dense tile (zero rows past the last token), rotated when there are tables.
template <class C, class T>
__device__ void load_tile(C* tile, const T* m, int64_t ld, int64_t first, int64_t tokens, int64_t head_dim,
                          const FlashRotary<C>& rotary = {}) {
  const int64_t count = Tile<C>::kRows * head_dim;
  for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
    const int64_t r = e / head_dim, c = e % head_dim, i = first + r;
    tile[e] = i < tokens ? element(m + i * ld, c, i, head_dim, rotary) : C(0);
  }
}

// a . row over the whole row: this lane's part, then the sum over its group of lanes.
template <class C>
__device__ C row_dot(const C (&a)[kSlice<C>], const C* row, int lane, int64_t head_dim) {
  C partial = C(0);
  for (int k = 0; k < kSlice<C>; ++k) {
    const int64_t c = lane + k * Tile<C>::kLanes;
    if (c < head_dim) partial += a[k] * row[c];
  }
  for (int offset = Tile<C>::kLanes / 2; offset > 0; offset /= 2) {
    partial += __shfl_xor_sync(0xffffffffu, partial, offset);
  }
  return partial;
}

// acc += w * row on this lane's columns.
template <class C>
__device__ void add_scaled_row(C (&acc)[kSlice<C>], C w, const C* row, int lane, int64_t head_dim) {
  for (int k = 0; k < kSlice<C>; ++k) {
    const int64_t c = lane + k * Tile<C>::kLanes;
    if (c < head_dim) acc[k] += w * row[c];
  }
}

// out[c] = T(scale * acc[c] + addend[c]) on this lane's columns (addend null: zero).
template <class C, class T>
__device__ void store_slice(T* out, const T* addend, const C (&acc)[kSlice<C>], C scale, int lane, int64_t head_dim) {
  for (int k = 0; k < kSlice<C>; ++k) {
    const int64_t c = lane + k * Tile<C>::kLanes;
    if (c < head_dim) out[c] = T(scale * acc[k] + (addend != nullptr ? C(addend[c]) : C(0)));
  }
}

template <class C>
__device__ C dropout_factor(const FlashDropout& dropout, uint64_t index) {
  return dropout.p > 0 ? dropout_scaled_mask<C>(dropout.seed, index, dropout.p) : C(1);
}

// One block per (b, h, query tile). Per key tile: s_ij for the row's kRows keys, then the online
// softmax: m' = max(m, max_j s_ij), l' = l e^(m - m') + sum_j e^(s_ij - m'), o' = o e^(m - m') +
// sum_j e^(s_ij - m') z_ij v_j. Masked keys (past the last token, or j > i) get s = -inf.
template <class T>
__global__ void flash_attention_forward_kernel(const T* qkv, T* y, compute_t<T>* lse, Dims n, compute_t<T> scale,
                                               bool causal, FlashDropout dropout, FlashRotary<compute_t<T>> rotary) {
  using C = compute_t<T>;
  constexpr int kRows = Tile<C>::kRows;
  __shared__ C k_tile[kRows * kMaxHeadDim];
  __shared__ C v_tile[kRows * kMaxHeadDim];
  const Place at = place_of_block<C>(n, n.heads);
  const int64_t d = n.head_dim, ld = n.qkv_row(), i = at.first + at.row;
  const T* q_head = qkv + n.q_at(at.b, at.h);  // token 0's q of this head
  C q[kSlice<C>], o[kSlice<C>];
  load_slice(q, i < n.tokens ? q_head + i * ld : nullptr, i, at.lane, d, rotary);
  for (int k = 0; k < kSlice<C>; ++k) o[k] = C(0);
  C m = C(-INFINITY), l = C(0);
  const int64_t keys = causal && at.first + kRows < n.tokens ? at.first + kRows : n.tokens;
  for (int64_t k0 = 0; k0 < keys; k0 += kRows) {
    __syncthreads();  // every thread is done with the previous tiles
    load_tile(k_tile, qkv + n.k_at(at.b, at.h), ld, k0, n.tokens, d, rotary);
    load_tile(v_tile, qkv + n.v_at(at.b, at.h), ld, k0, n.tokens, d);
    __syncthreads();
    C s[kRows];
    C tile_max = C(-INFINITY);
    for (int jj = 0; jj < kRows; ++jj) {
      const C dot = row_dot(q, k_tile + jj * d, at.lane, d) * scale;
      const int64_t j = k0 + jj;
      s[jj] = j < n.tokens && !(causal && j > i) ? dot : C(-INFINITY);
      tile_max = s[jj] > tile_max ? s[jj] : tile_max;
    }
    const C m_new = tile_max > m ? tile_max : m;
    const C rescale = m == C(-INFINITY) ? C(0) : C(exp(m - m_new));  // nothing summed yet: 0, not exp(nan)
    l *= rescale;
    for (int k = 0; k < kSlice<C>; ++k) o[k] *= rescale;
    for (int jj = 0; jj < kRows; ++jj) {
      const C e = s[jj] == C(-INFINITY) ? C(0) : C(exp(s[jj] - m_new));
      l += e;  // the normalizer sums the undropped exponentials
      add_scaled_row(o, e * dropout_factor<C>(dropout, n.mask_index(at.b, at.h, i, k0 + jj)), v_tile + jj * d,
                     at.lane, d);
    }
    m = m_new;
  }
  if (i >= n.tokens) return;
  store_slice<C, T>(y + (at.b * n.tokens + i) * n.width() + at.h * d, nullptr, o, C(1) / l, at.lane, d);
  if (at.lane == 0) lse[(at.b * n.heads + at.h) * n.tokens + i] = m + log(l);
}

// D_i = dy_i . y_i for every (b, h, i), into [B, H, T]: one warp per row.
template <class T>
__global__ void flash_attention_row_dots_kernel(const T* y, const T* dy, compute_t<T>* row_dots, Dims n) {
  using C = compute_t<T>;
  const int warps = int(blockDim.x) / 32, lane = int(threadIdx.x) % 32;
  const int64_t rows = n.batch * n.heads * n.tokens;
  for (int64_t r = int64_t(blockIdx.x) * warps + threadIdx.x / 32; r < rows; r += int64_t(gridDim.x) * warps) {
    const int64_t i = r % n.tokens, h = r / n.tokens % n.heads, b = r / n.tokens / n.heads;
    const int64_t at = (b * n.tokens + i) * n.width() + h * n.head_dim;
    C partial = C(0);
    for (int64_t c = lane; c < n.head_dim; c += 32) partial += C(dy[at + c]) * C(y[at + c]);
    partial = warp_reduce(partial, Add{});
    if (lane == 0) row_dots[r] = partial;
  }
}

// One block per (b, key head, key tile), over the query heads that share the key head and, for
// each, the query tiles that see its keys (causal: from the diagonal tile down). For key row j,
// over queries i:
//   p_ij = e^(s_ij - lse_i),  dv_j += p_ij z_ij dy_i,  dk_j += p_ij (z_ij dy_i . v_j - D_i) q_i
// and dk_j is scaled once at the end.
template <class T>
__global__ void flash_attention_key_grads_kernel(const T* qkv, const T* dy, const compute_t<T>* lse,
                                                 const compute_t<T>* row_dots, const T* dqkv_out, T* dqkv, Dims n,
                                                 compute_t<T> scale, bool causal, FlashDropout dropout,
                                                 FlashRotary<compute_t<T>> rotary) {
  using C = compute_t<T>;
  constexpr int kRows = Tile<C>::kRows;
  __shared__ C q_tile[kRows * kMaxHeadDim];
  __shared__ C dy_tile[kRows * kMaxHeadDim];
  __shared__ C lse_tile[kRows];
  __shared__ C dot_tile[kRows];
  const Place at = place_of_block<C>(n, n.kv_heads);
  const int64_t d = n.head_dim, ld = n.qkv_row(), j = at.first + at.row, first_head = at.h * n.group();
  const int64_t k_at = n.k_at(at.b, first_head) + j * ld, v_at = n.v_at(at.b, first_head) + j * ld;
  C k[kSlice<C>], v[kSlice<C>], dk[kSlice<C>], dv[kSlice<C>];
  load_slice(k, j < n.tokens ? qkv + k_at : nullptr, j, at.lane, d, rotary);
  load_slice(v, j < n.tokens ? qkv + v_at : nullptr, j, at.lane, d);
  for (int c = 0; c < kSlice<C>; ++c) dk[c] = dv[c] = C(0);
  for (int64_t h = first_head; h < first_head + n.group(); ++h) {
    const int64_t bh = at.b * n.heads + h;
    for (int64_t q0 = causal ? at.first : 0; q0 < n.tokens; q0 += kRows) {
      __syncthreads();
      load_tile(q_tile, qkv + n.q_at(at.b, h), ld, q0, n.tokens, d, rotary);
      load_tile(dy_tile, dy + n.output_at(at.b, h), n.width(), q0, n.tokens, d);
      for (int r = int(threadIdx.x); r < kRows; r += int(blockDim.x)) {
        const bool real = q0 + r < n.tokens;
        lse_tile[r] = real ? lse[bh * n.tokens + q0 + r] : C(0);
        dot_tile[r] = real ? row_dots[bh * n.tokens + q0 + r] : C(0);
      }
      __syncthreads();
      for (int ii = 0; ii < kRows; ++ii) {
        const C s = row_dot(k, q_tile + ii * d, at.lane, d) * scale;
        const C dp = row_dot(v, dy_tile + ii * d, at.lane, d);
        const int64_t i = q0 + ii;
        if (i >= n.tokens || j >= n.tokens || (causal && j > i)) continue;
        const C p = exp(s - lse_tile[ii]), z = dropout_factor<C>(dropout, n.mask_index(at.b, h, i, j));
        add_scaled_row(dv, p * z, dy_tile + ii * d, at.lane, d);
        add_scaled_row(dk, p * (z * dp - dot_tile[ii]), q_tile + ii * d, at.lane, d);
      }
    }
  }
  if (j >= n.tokens) return;
  store_slice<C, T>(dqkv + k_at, dqkv_out != nullptr ? dqkv_out + k_at : nullptr, dk, scale, at.lane, d);
  store_slice<C, T>(dqkv + v_at, dqkv_out != nullptr ? dqkv_out + v_at : nullptr, dv, C(1), at.lane, d);
}

// One block per (b, h, query tile), over the key tiles it sees. For query row i, over keys j:
//   dq_i += p_ij (z_ij dy_i . v_j - D_i) k_j, scaled once at the end.
template <class T>
__global__ void flash_attention_query_grads_kernel(const T* qkv, const T* dy, const compute_t<T>* lse,
                                                   const compute_t<T>* row_dots, const T* dqkv_out, T* dqkv, Dims n,
                                                   compute_t<T> scale, bool causal, FlashDropout dropout,
                                                 FlashRotary<compute_t<T>> rotary) {
  using C = compute_t<T>;
  constexpr int kRows = Tile<C>::kRows;
  __shared__ C k_tile[kRows * kMaxHeadDim];
  __shared__ C v_tile[kRows * kMaxHeadDim];
  const Place at = place_of_block<C>(n, n.heads);
  const int64_t d = n.head_dim, ld = n.qkv_row(), i = at.first + at.row, bh = at.b * n.heads + at.h;
  const bool real = i < n.tokens;
  const T* q_head = qkv + n.q_at(at.b, at.h);
  C q[kSlice<C>], g[kSlice<C>], dq[kSlice<C>];
  load_slice(q, real ? q_head + i * ld : nullptr, i, at.lane, d, rotary);
  load_slice(g, real ? dy + (at.b * n.tokens + i) * n.width() + at.h * d : nullptr, i, at.lane, d);
  for (int c = 0; c < kSlice<C>; ++c) dq[c] = C(0);
  const C lse_i = real ? lse[bh * n.tokens + i] : C(0), dot_i = real ? row_dots[bh * n.tokens + i] : C(0);
  const int64_t keys = causal && at.first + kRows < n.tokens ? at.first + kRows : n.tokens;
  for (int64_t k0 = 0; k0 < keys; k0 += kRows) {
    __syncthreads();
    load_tile(k_tile, qkv + n.k_at(at.b, at.h), ld, k0, n.tokens, d, rotary);
    load_tile(v_tile, qkv + n.v_at(at.b, at.h), ld, k0, n.tokens, d);
    __syncthreads();
    for (int jj = 0; jj < kRows; ++jj) {
      const C s = row_dot(q, k_tile + jj * d, at.lane, d) * scale;
      const C dp = row_dot(g, v_tile + jj * d, at.lane, d);
      const int64_t j = k0 + jj;
      if (!real || j >= n.tokens || (causal && j > i)) continue;
      const C p = exp(s - lse_i), z = dropout_factor<C>(dropout, n.mask_index(at.b, at.h, i, j));
      add_scaled_row(dq, p * (z * dp - dot_i), k_tile + jj * d, at.lane, d);
    }
  }
  if (!real) return;
  const int64_t q_at = n.q_at(at.b, at.h) + i * ld;
  store_slice<C, T>(dqkv + q_at, dqkv_out != nullptr ? dqkv_out + q_at : nullptr, dq, scale, at.lane, d);
}

// The launch geometry of a shape, or an error naming the kernel for one these kernels cannot take.
template <class T>
Dims dims_for(const AttentionShape& s, const char* kernel) {
  if (s.batch < 0 || s.heads < 0 || s.kv_heads <= 0 || s.heads % s.kv_heads != 0 || s.tokens < 0 || s.head_dim < 0) {
    throw std::runtime_error(std::string(kernel) + ": negative size or key heads that do not divide the heads");
  }
  if (s.head_dim > kMaxHeadDim) {
    throw std::runtime_error(std::string(kernel) + ": head_dim " + std::to_string(s.head_dim) + " is above the " +
                             std::to_string(kMaxHeadDim) + " these kernels take");
  }
  constexpr int64_t kRows = Tile<compute_t<T>>::kRows;
  const Dims n{s, (s.tokens + kRows - 1) / kRows};
  if (n.batch * n.heads * n.tiles > INT32_MAX) {
    throw std::runtime_error(std::string(kernel) + ": " + std::to_string(n.batch * n.heads * n.tiles) +
                             " tiles, above the grid's limit");
  }
  return n;
}

// Blocks for one per (batch, head, tile), of `heads` heads.
int tile_blocks(const Dims& n, int64_t heads) { return int(n.batch * heads * n.tiles); }

}  // namespace
}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void FlashAttentionForward<T>::cuda(KernelContext& ctx) const {
  const Dims n = dims_for<T>(s, "flash_attention_forward_kernel");
  if (tile_blocks(n, n.heads) == 0) return;
  use_device(ctx.device);
  const int threads = kBlockThreads<compute_t<T>>;
  flash_attention_forward_kernel<T><<<tile_blocks(n, n.heads), threads>>>(qkv, y, lse, n, scale, causal, dropout,
                                                                          rotary);
  check_launch("flash_attention_forward_kernel");
}

template <class T>
void FlashAttentionBackward<T>::cuda(KernelContext& ctx) const {
  using C = compute_t<T>;
  const Dims n = dims_for<T>(s, "flash_attention_backward_kernel");
  if (tile_blocks(n, n.heads) == 0) return;
  use_device(ctx.device);
  const int64_t rows = n.batch * n.heads * n.tokens;
  C* row_dots = ctx.scratch<C>(rows);
  flash_attention_row_dots_kernel<T><<<blocks_for(rows * 32), kThreads>>>(y, dy, row_dots, n);
  check_launch("flash_attention_row_dots_kernel");
  // With rotation the grads kernels give the grad of the rotated qkv, which one more pass turns back.
  T* grad = rotary.active() ? ctx.scratch<T>(n.batch * n.tokens * n.qkv_row()) : dqkv;
  const int threads = kBlockThreads<C>;
  flash_attention_key_grads_kernel<T><<<tile_blocks(n, n.kv_heads), threads>>>(qkv, dy, lse, row_dots, dqkv_out, grad,
                                                                                n, scale, causal, dropout, rotary);
  check_launch("flash_attention_key_grads_kernel");
  flash_attention_query_grads_kernel<T><<<tile_blocks(n, n.heads), threads>>>(qkv, dy, lse, row_dots, dqkv_out, grad,
                                                                               n, scale, causal, dropout, rotary);
  check_launch("flash_attention_query_grads_kernel");
  if (!rotary.active()) return;
  const RotaryShape turn{n.batch * n.tokens, n.tokens, n.heads + n.kv_heads, n.qkv_row(), n.head_dim};
  ApplyRotary<T>{turn, grad, dqkv, rotary.cos, rotary.sin, /*inverse=*/true}.cuda(ctx);
}

FUSELAB_FLASH_ATTENTION_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels

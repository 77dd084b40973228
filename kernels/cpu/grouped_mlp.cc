// The CPU body of kernels/grouped_mlp.h: each expert's whole chain before the next, through
// OpenBLAS or oneDNN and the GLU kernels, the experts in parallel when there are enough of them
// (kernels/cpu/groups.h).
#include "kernels/grouped_mlp.h"

#include <algorithm>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/groups.h"
#include "kernels/cpu/store.h"
#include "kernels/gated_linear_unit.h"

namespace fuselab::kernels {
namespace {

// An expert's rows go through its chain in chunks of at most chunk_rows(row) rows, so the buffer
// one chain works in stays near kChunkBytes however skewed the load is (the weight grads sum over
// the chunks: their GEMMs after the first add into them, beta = 1). `row` is the buffer's values
// per row: forward_row and backward_row say what they hold.
constexpr int64_t kChunkBytes = 4 << 20;
template <class T>
int64_t chunk_rows(int64_t row) {
  const int64_t rows = kChunkBytes / (row * int64_t(sizeof(T)));
  return rows > 256 ? rows : 256;
}
// The rows of each chunk of an expert of `rows` rows: as even as the chunks can be.
template <class T>
int64_t even_chunk_rows(int64_t rows, int64_t row) {
  const int64_t most = chunk_rows<T>(row), chunks = (rows + most - 1) / most;
  return chunks > 1 ? (rows + chunks - 1) / chunks : rows;
}

// Forward, per row: a [h], u [2h] (where it keeps no pre), and routed the row of x [in].
template <class T>
int64_t forward_row(const GroupedMlpForward<T>& k) {
  return 3 * k.hidden + (k.copies ? k.in : 0);
}
// Backward, per row: a [h], da [h], du [2h], then routed the rows of dout [out] and x [in], or
// scaled the row of s dy [out].
template <class T>
int64_t backward_row(const GroupedMlpBackward<T>& k) {
  return 4 * k.hidden + (k.copies ? k.in + k.out : k.weights ? k.out : 0);
}

// Rows [first, first + m) of the experts' rows of `from` [.., width]: its own, or routed the
// rows of the copies' tokens, gathered into `gathered`.
template <class T>
const T* rows_of(const T* from, const int64_t* copies, int64_t top_k, int64_t width, int64_t first, int64_t m,
                 T* gathered) {
  if (!copies) return from + first * width;
  for (int64_t i = 0; i < m; ++i) std::copy_n(from + copies[first + i] / top_k * width, width, gathered + i * width);
  return gathered;
}

// to[i] = from[i] * weights[weight_index(first + i)], for the m rows of `width`, in compute_t<T>
// (from may be to).
template <class T>
void scale_rows(const T* from, T* to, int64_t m, int64_t width, const T* weights, const int64_t* copies,
                int64_t first) {
  using C = compute_t<T>;
  for (int64_t i = 0; i < m; ++i) {
    const C w = C(weights[weight_index(copies, first + i)]);
    const T* row = from + i * width;
    T* out = to + i * width;
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) cpu::store(out[c], C(row[c]) * w);
  }
}

// dweights[weight_index(first + i)] = <p[i], q[i]>, for the m rows of `width`, summed in compute_t<T>.
template <class T>
void row_dots(const T* p, const T* q, int64_t m, int64_t width, T* dweights, const int64_t* copies, int64_t first) {
  using C = compute_t<T>;
  for (int64_t i = 0; i < m; ++i) {
    C dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < width; ++c) dot += C(p[i * width + c]) * C(q[i * width + c]);
    dweights[weight_index(copies, first + i)] = T(dot);
  }
}

// c = op(a) op(b) + beta c, alpha 1; m or k is an expert's rows, which vary from call to call.
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
          T* c, int64_t ldc) {
  cpu::gemm<T>(ta, tb, m, n, k, T(1), a, lda, b, ldb, beta, c, ldc, cpu::GemmShape::Varying);
}

// Inside the parallel loop over the experts the GLU kernels' own loops run on the calling thread
// (OpenMP's nested regions are inactive).
template <class T>
void forward_expert(const GroupedMlpForward<T>& k, KernelContext& ctx, int64_t g, int64_t first, T* buffer) {
  const int64_t h = k.hidden, chunk = even_chunk_rows<T>(k.sizes[g], forward_row(k));
  for (int64_t r = first; r < first + k.sizes[g]; r += chunk) {
    const int64_t m = std::min(chunk, first + k.sizes[g] - r);
    T* a = k.act ? k.act + r * h : buffer;
    T* u = k.pre ? k.pre + r * 2 * h : buffer + m * h;
    const T* x = rows_of(k.x, k.copies, k.top_k, k.in, r, m, buffer + 3 * m * h);
    gemm(false, true, m, 2 * h, k.in, x, k.in, k.w1 + g * 2 * h * k.in, k.in, T(0), u, 2 * h);
    GatedLinearUnitForward<T>{k.gate, u, a, m, h}.cpu(ctx);
    gemm(false, true, m, k.out, h, a, h, k.w2 + g * k.out * h, h, T(0), k.y + r * k.out, k.out);
    if (k.scale) scale_rows(k.y + r * k.out, k.y + r * k.out, m, k.out, k.scale, nullptr, r);
  }
}

// Routed, dy is the chunk's gathered copy of the tokens' grads g: g W2 gives the weights' grads
// against a before the weights scale it into da, and the weights scale g before dW2 = (w g)^T a.
// Scaled, the same with s for w, s dy written to the buffer.
template <class T>
void backward_expert(const GroupedMlpBackward<T>& k, KernelContext& ctx, int64_t g, int64_t first, T* buffer) {
  const int64_t h = k.hidden, chunk = even_chunk_rows<T>(k.sizes[g], backward_row(k));
  T* dw1 = k.dw1 ? k.dw1 + g * 2 * h * k.in : nullptr;
  T* dw2 = k.dw2 ? k.dw2 + g * k.out * h : nullptr;
  if (k.sizes[g] == 0) {
    if (dw1) std::fill_n(dw1, 2 * h * k.in, T(0));
    if (dw2) std::fill_n(dw2, k.out * h, T(0));
    return;
  }
  for (int64_t r = first; r < first + k.sizes[g]; r += chunk) {
    const int64_t m = std::min(chunk, first + k.sizes[g] - r);
    const T beta = r == first ? T(0) : T(1);
    const T* u = k.pre + r * 2 * h;
    T *da = buffer + m * h, *du = da + m * h;
    T* gathered = du + 2 * m * h;  // routed: the chunk's rows of dout [m, out], then of x [m, in]; scaled: s dy
    const T* dy = rows_of(k.dy, k.copies, k.top_k, k.out, r, m, gathered);
    const T* a = k.act ? k.act + r * h : buffer;
    if (!k.act && (dw2 || k.dweights)) GatedLinearUnitForward<T>{k.gate, u, buffer, m, h}.cpu(ctx);
    if (k.dx || dw1 || k.dweights) {
      gemm(false, false, m, h, k.out, dy, k.out, k.w2 + g * k.out * h, h, T(0), da, h);
      if (k.dweights) row_dots(da, a, m, h, k.dweights, k.copies, r);
      if (k.weights) scale_rows(da, da, m, h, k.weights, k.copies, r);
    }
    if (dw2) {
      if (k.weights) {  // (w g) or (s dy)
        scale_rows(dy, gathered, m, k.out, k.weights, k.copies, r);
        dy = gathered;
      }
      gemm(true, false, k.out, h, m, dy, k.out, a, h, beta, dw2, h);
    }
    if (!k.dx && !dw1) continue;
    GatedLinearUnitBackward<T>{k.gate, u, da, du, m, h}.cpu(ctx);
    if (k.dx) gemm(false, false, m, k.in, 2 * h, du, 2 * h, k.w1 + g * 2 * h * k.in, k.in, T(0), k.dx + r * k.in, k.in);
    if (dw1) {
      const T* x = rows_of(k.x, k.copies, k.top_k, k.in, r, m, k.copies ? gathered + m * k.out : nullptr);
      gemm(true, false, 2 * h, k.in, m, du, 2 * h, x, k.in, beta, dw1, k.in);
    }
  }
}

// Runs chain(g, first, buffer) for every expert, with a buffer of its own per thread, large
// enough for the chunks of any of the experts (`row` values a row).
template <class T, class Chain>
void each_expert(KernelContext& ctx, const int64_t* sizes, int64_t groups, int64_t row, Chain&& chain) {
  const std::vector<int64_t> start = cpu::group_starts(sizes, groups);
  const int64_t most = groups > 0 ? *std::max_element(sizes, sizes + groups) : 0;
  const int64_t buffer = std::min(most, chunk_rows<T>(row)) * row;
  T* buffers = ctx.scratch<T>(cpu::group_workers(sizes, groups) * buffer);
  cpu::for_each_group(sizes, groups,
                      [&](int64_t g, int worker) { chain(g, start[size_t(g)], buffers + worker * buffer); });
}

}  // namespace

template <class T>
void GroupedMlpForward<T>::cpu(KernelContext& ctx) const {
  each_expert<T>(ctx, sizes, groups, forward_row(*this),
                 [&](int64_t g, int64_t first, T* buffer) { forward_expert(*this, ctx, g, first, buffer); });
}

template <class T>
void GroupedMlpBackward<T>::cpu(KernelContext& ctx) const {
  each_expert<T>(ctx, sizes, groups, backward_row(*this),
                 [&](int64_t g, int64_t first, T* buffer) { backward_expert(*this, ctx, g, first, buffer); });
}

FUSELAB_GROUPED_MLP_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

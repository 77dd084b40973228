// The CPU body of kernels/grouped_mlp.h: each expert's whole chain before the next, through
// OpenBLAS or oneDNN and the GLU kernels, the experts in parallel when there are enough of them
// (kernels/cpu/groups.h).
#include "kernels/grouped_mlp.h"

#include <algorithm>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/groups.h"
#include "kernels/gated_linear_unit.h"

namespace fuselab::kernels {
namespace {

// An expert's rows go through its chain in chunks of at most chunk_rows(row) rows, so the buffer
// one chain works in stays near kChunkBytes however skewed the load is (the weight grads sum over
// the chunks: their GEMMs after the first add into them, beta = 1). The buffer holds, per row, the
// forward's a [h] (and u [2h] where it keeps no pre), the backward's a, then da in its place, [h],
// and du [2h]; then the row of x, [in], where the rows are gathered: buffer_row() values a row.
constexpr int64_t kChunkBytes = 4 << 20;
int64_t buffer_row(int64_t hidden, int64_t in, const int64_t* sources) { return 3 * hidden + (sources ? in : 0); }
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

// Rows [first, first + m) of the experts' rows of x: x's own, or gathered by the sources into
// `gathered`.
template <class T>
const T* rows_of(const T* x, const int64_t* sources, int64_t in, int64_t first, int64_t m, T* gathered) {
  if (!sources) return x + first * in;
  for (int64_t i = 0; i < m; ++i) std::copy_n(x + sources[first + i] * in, in, gathered + i * in);
  return gathered;
}

// c = op(a) op(b) + beta c, alpha 1.
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
          T* c, int64_t ldc) {
  cpu::gemm<T>(ta, tb, m, n, k, T(1), a, lda, b, ldb, beta, c, ldc);
}

// Inside the parallel loop over the experts the GLU kernels' own loops run on the calling thread
// (OpenMP's nested regions are inactive).
template <class T>
void forward_expert(const GroupedMlpForward<T>& k, KernelContext& ctx, int64_t g, int64_t first, T* buffer) {
  const int64_t h = k.hidden, chunk = even_chunk_rows<T>(k.sizes[g], buffer_row(h, k.in, k.sources));
  for (int64_t r = first; r < first + k.sizes[g]; r += chunk) {
    const int64_t m = std::min(chunk, first + k.sizes[g] - r);
    T* a = buffer;
    T* u = k.pre ? k.pre + r * 2 * h : buffer + m * h;
    const T* x = rows_of(k.x, k.sources, k.in, r, m, buffer + 3 * m * h);
    gemm(false, true, m, 2 * h, k.in, x, k.in, k.w1 + g * 2 * h * k.in, k.in, T(0), u, 2 * h);
    GatedLinearUnitForward<T>{k.gate, u, a, m, h}.cpu(ctx);
    gemm(false, true, m, k.out, h, a, h, k.w2 + g * k.out * h, h, T(0), k.y + r * k.out, k.out);
  }
}

template <class T>
void backward_expert(const GroupedMlpBackward<T>& k, KernelContext& ctx, int64_t g, int64_t first, T* buffer) {
  const int64_t h = k.hidden, chunk = even_chunk_rows<T>(k.sizes[g], buffer_row(h, k.in, k.sources));
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
    const T *u = k.pre + r * 2 * h, *dy = k.dy + r * k.out;
    T *a = buffer, *da = buffer, *du = buffer + m * h;  // da replaces a once dW2 has it
    if (dw2) {
      GatedLinearUnitForward<T>{k.gate, u, a, m, h}.cpu(ctx);
      gemm(true, false, k.out, h, m, dy, k.out, a, h, beta, dw2, h);
    }
    if (!k.dx && !dw1) continue;
    gemm(false, false, m, h, k.out, dy, k.out, k.w2 + g * k.out * h, h, T(0), da, h);
    GatedLinearUnitBackward<T>{k.gate, u, da, du, m, h}.cpu(ctx);
    if (k.dx) gemm(false, false, m, k.in, 2 * h, du, 2 * h, k.w1 + g * 2 * h * k.in, k.in, T(0), k.dx + r * k.in, k.in);
    if (dw1) {
      const T* x = rows_of(k.x, k.sources, k.in, r, m, buffer + 3 * m * h);
      gemm(true, false, 2 * h, k.in, m, du, 2 * h, x, k.in, beta, dw1, k.in);
    }
  }
}

// Runs chain(g, first, buffer) for every expert, with a buffer of its own per thread, large
// enough for the chunks of any of the experts (buffer_row values a row).
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
  each_expert<T>(ctx, sizes, groups, buffer_row(hidden, in, sources),
                 [&](int64_t g, int64_t first, T* buffer) { forward_expert(*this, ctx, g, first, buffer); });
}

template <class T>
void GroupedMlpBackward<T>::cpu(KernelContext& ctx) const {
  each_expert<T>(ctx, sizes, groups, buffer_row(hidden, in, sources),
                 [&](int64_t g, int64_t first, T* buffer) { backward_expert(*this, ctx, g, first, buffer); });
}

FUSELAB_GROUPED_MLP_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

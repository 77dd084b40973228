// The CPU body of kernels/grouped_mlp.h: the experts' chains through OpenBLAS or oneDNN and the GLU
// kernels, in parallel over the experts when there are enough of them (kernels/cpu/groups.h).
#include "kernels/grouped_mlp.h"

#include <algorithm>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/groups.h"
#include "kernels/gated_linear_unit.h"

namespace fuselab::kernels {
namespace {

// The chain's Ops on the CPU. Inside the parallel loop the GLU kernels' own loops run on the
// calling thread (OpenMP's nested regions are inactive).
template <class T>
struct CpuOps {
  Activation gate;
  int64_t hidden;
  KernelContext& ctx;
  void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
            T beta, T* c, int64_t ldc) const {
    cpu::gemm<T>(ta, tb, m, n, k, T(1), a, lda, b, ldb, beta, c, ldc);
  }
  void glu(const T* u, T* a, int64_t rows) const { GatedLinearUnitForward<T>{gate, u, a, rows, hidden}.cpu(ctx); }
  void glu_backward(const T* u, const T* da, T* du, int64_t rows) const {
    GatedLinearUnitBackward<T>{gate, u, da, du, rows, hidden}.cpu(ctx);
  }
  void zero(T* p, int64_t count) const { std::fill_n(p, count, T(0)); }
};

// Runs chain(g, first, buffer) for every expert, with a buffer of its own per thread.
template <class T, class Chain>
void each_expert(KernelContext& ctx, const int64_t* sizes, int64_t groups, int64_t hidden, Chain&& chain) {
  const std::vector<int64_t> start = cpu::group_starts(sizes, groups);
  const int64_t buffer = grouped_mlp_buffer<T>(sizes, groups, hidden);
  T* buffers = ctx.scratch<T>(cpu::group_workers(sizes, groups) * buffer);
  cpu::for_each_group(sizes, groups,
                      [&](int64_t g, int worker) { chain(g, start[size_t(g)], buffers + worker * buffer); });
}

}  // namespace

template <class T>
void GroupedMlpForward<T>::cpu(KernelContext& ctx) const {
  const CpuOps<T> ops{gate, hidden, ctx};
  each_expert<T>(ctx, sizes, groups, hidden, [&](int64_t g, int64_t first, T* buffer) {
    grouped_mlp_forward_expert(*this, ops, g, first, buffer);
  });
}

template <class T>
void GroupedMlpBackward<T>::cpu(KernelContext& ctx) const {
  const CpuOps<T> ops{gate, hidden, ctx};
  each_expert<T>(ctx, sizes, groups, hidden, [&](int64_t g, int64_t first, T* buffer) {
    grouped_mlp_backward_expert(*this, ops, g, first, buffer);
  });
}

FUSELAB_GROUPED_MLP_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

// The CUDA body of kernels/grouped_mlp.h: the experts one after another, cuBLASLt for the GEMMs
// and the GLU kernels of kernels/cuda/gated_linear_unit.cu.

#include "kernels/cuda/device_api.h"
#include "kernels/cuda/gemm.h"
#include "kernels/gated_linear_unit.h"
#include "kernels/grouped_mlp.h"

// Named, not in an anonymous namespace: the emulator compiles this file pasted into another, where
// an entry point's lambda may not capture a type of internal linkage.
namespace fuselab::kernels::cuda {

template <class T>
struct GroupedMlpOps {
  Activation gate;
  int64_t hidden;
  KernelContext& ctx;
  void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
            T beta, T* c, int64_t ldc) const {
    cuda::gemm<T>(ta, tb, m, n, k, 1, a, lda, b, ldb, beta, c, ldc, ctx.device);
  }
  void glu(const T* u, T* a, int64_t rows) const { GatedLinearUnitForward<T>{gate, u, a, rows, hidden}.cuda(ctx); }
  void glu_backward(const T* u, const T* da, T* du, int64_t rows) const {
    GatedLinearUnitBackward<T>{gate, u, da, du, rows, hidden}.cuda(ctx);
  }
  void zero(T* p, int64_t count) const { cuda::fill_bytes(p, 0, size_t(count) * sizeof(T), ctx.device); }
};

// Runs chain(g, first, buffer) for every expert in order, with one buffer for all.
template <class T, class Chain>
void each_grouped_mlp_expert(KernelContext& ctx, const int64_t* sizes, int64_t groups, int64_t hidden, Chain&& chain) {
  T* buffer = ctx.scratch<T>(grouped_mlp_buffer<T>(sizes, groups, hidden));
  for (int64_t g = 0, first = 0; g < groups; first += sizes[g], ++g) chain(g, first, buffer);
}

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {

template <class T>
void GroupedMlpForward<T>::cuda(KernelContext& ctx) const {
  const cuda::GroupedMlpOps<T> ops{gate, hidden, ctx};
  cuda::each_grouped_mlp_expert<T>(ctx, sizes, groups, hidden, [&](int64_t g, int64_t first, T* buffer) {
    grouped_mlp_forward_expert(*this, ops, g, first, buffer);
  });
}

template <class T>
void GroupedMlpBackward<T>::cuda(KernelContext& ctx) const {
  const cuda::GroupedMlpOps<T> ops{gate, hidden, ctx};
  cuda::each_grouped_mlp_expert<T>(ctx, sizes, groups, hidden, [&](int64_t g, int64_t first, T* buffer) {
    grouped_mlp_backward_expert(*this, ops, g, first, buffer);
  });
}

FUSELAB_GROUPED_MLP_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels

// The CUDA bodies of kernels/embedding.h.
#include "kernels/embedding.h"

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/index_fault.cuh"

namespace fuselab::kernels::cuda {
namespace {

template <class T>
__global__ void embedding_forward_kernel(const T* table, const int64_t* ids, T* out, int64_t n, int64_t vocab,
                                         int64_t dim, IndexFault* fault) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) {
    const int64_t id = ids[i / dim];
    // The row's first element records a bad id: one atomic per id, not one per element.
    const bool valid = i % dim == 0 ? in_range(id, vocab, i / dim, IndexFault::kEmbeddingId, fault) : 0 <= id && id < vocab;
    out[i] = valid ? table[id * dim + i % dim] : T(0);
  }
}

// Block v sums the rows of dout whose id is v, in the order of the ids, in compute_t<T>.
template <class T>
__global__ void embedding_backward_kernel(const T* dout, const int64_t* ids, T* dtable, int64_t count, int64_t dim) {
  const int64_t v = blockIdx.x;
  for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) {
    compute_t<T> sum = 0;
    for (int64_t i = 0; i < count; ++i) {
      if (ids[i] == v) sum += compute_t<T>(dout[i * dim + c]);
    }
    dtable[v * dim + c] = T(sum);
  }
}

}  // namespace

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void EmbeddingForward<T>::cuda(KernelContext& ctx) const {
  if (count * dim == 0) return;
  use_device(ctx.device);
  embedding_forward_kernel<T><<<blocks_for(count * dim), kThreads>>>(table, ids, out, count * dim, vocab, dim, fault);
  check_launch("embedding_forward_kernel");
}

template <class T>
void EmbeddingBackward<T>::cuda(KernelContext& ctx) const {
  if (vocab * dim == 0) return;
  use_device(ctx.device);
  embedding_backward_kernel<T><<<unsigned(vocab), dim < kThreads ? 32 * int((dim + 31) / 32) : kThreads>>>(
      dout, ids, dtable, count, dim);
  check_launch("embedding_backward_kernel");
}

FUSELAB_EMBEDDING_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels

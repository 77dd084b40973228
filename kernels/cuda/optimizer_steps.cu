// The CUDA bodies of kernels/optimizer_steps.h: a multi-tensor apply.
#include "kernels/optimizer_steps.h"

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"

namespace fuselab::kernels::cuda {
namespace {

constexpr int64_t kChunk = 16384;  // elements per block

// What one launch covers, passed by value as the kernel's argument (under CUDA's 4 KiB limit):
// up to kMaxTensors parameters, and for each block the parameter and the chunk it updates.
template <class T>
struct ChunkTable {
  static constexpr int kMaxTensors = 24, kMaxBlocks = 192;
  ParamBuffers<T> tensors[kMaxTensors];
  int tensor_of_block[kMaxBlocks];
  int64_t start_of_block[kMaxBlocks];
};

template <class T, class Update>
__global__ void multi_tensor_kernel(ChunkTable<T> table, Update update) {
  const ParamBuffers<T>& t = table.tensors[table.tensor_of_block[blockIdx.x]];
  const int64_t start = table.start_of_block[blockIdx.x];
  const int64_t end = start + kChunk < t.n ? start + kChunk : t.n;
  for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) update(t, i);
}

// Fills tables with every chunk of every parameter and launches one kernel per full table (one
// in all unless there are more than kMaxTensors parameters or kMaxBlocks chunks).
template <class T, class Update>
void for_each_chunk(const std::vector<ParamBuffers<T>>& params, Update update, int device) {
  use_device(device);
  ChunkTable<T> table;
  int tensors = 0, blocks = 0;
  auto launch = [&] {
    if (blocks > 0) {
      multi_tensor_kernel<T><<<blocks, kThreads>>>(table, update);
      check_launch("multi_tensor_kernel");
    }
    tensors = blocks = 0;
  };
  for (const ParamBuffers<T>& p : params) {
    if (p.n == 0) continue;
    if (tensors == ChunkTable<T>::kMaxTensors) launch();
    table.tensors[tensors] = p;
    for (int64_t start = 0; start < p.n; start += kChunk) {
      if (blocks == ChunkTable<T>::kMaxBlocks) {
        launch();
        table.tensors[0] = p;  // the parameter continues in the next launch
      }
      table.tensor_of_block[blocks] = tensors;
      table.start_of_block[blocks++] = start;
    }
    ++tensors;
  }
  launch();
}

template <class T>
struct AdamWElement {
  AdamWUpdate<T> update;
  __device__ void operator()(const ParamBuffers<T>& t, int64_t i) const {
    update(t.param[i], t.grad[i], t.first[i], t.second[i]);
  }
};

template <class T>
struct SGDElement {
  SGDUpdate<T> update;
  __device__ void operator()(const ParamBuffers<T>& t, int64_t i) const {
    update(t.param[i], t.grad[i], t.first ? &t.first[i] : nullptr);
  }
};

}  // namespace

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void AdamWStep<T>::cuda(KernelContext& ctx) const {
  for_each_chunk(params, AdamWElement<T>{AdamWUpdate<T>(hyper)}, ctx.device);
}

template <class T>
void SGDStep<T>::cuda(KernelContext& ctx) const {
  for_each_chunk(params, SGDElement<T>{SGDUpdate<T>(hyper)}, ctx.device);
}

FUSELAB_OPTIMIZER_STEP_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels

// Embedding lookup, out[i] = table[ids[i]] (rows of `dim`), and its gradient
//
//   dtable[v] = sum over i with ids[i] == v of dout[i]   (every row written, zero where unused)
//
// Both backends sum in the order of the ids, in compute_t<T> (float32 for bfloat16), so the sums
// are deterministic: the CPU in one pass over the ids, CUDA with one block per table row scanning
// the ids (no atomics, at O(vocab * count) id reads: fine for small vocabularies such as
// charlm's). Ids must be in [0, vocab): on the CPU the caller checks; the CUDA lookup records an id
// out of range in `fault` and writes zeros for it (kernels/index_fault.h). Kernels:
// kernels/cpu/embedding.cc and kernels/cuda/embedding.cu.
#pragma once

#include <cstdint>

#include "kernels/index_fault.h"
#include "kernels/kernel.h"

namespace fuselab::kernels {

template <class T>
struct EmbeddingForward {
  const T* table;
  const int64_t* ids;
  T* out;
  int64_t count, vocab, dim;
  IndexFault* fault;  // CUDA only
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct EmbeddingBackward {
  const T* dout;
  const int64_t* ids;
  T* dtable;  // [vocab, dim]
  int64_t count, vocab, dim;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_EMBEDDING_KERNELS(X)                  \
  X(EmbeddingForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)  \
  X(EmbeddingBackward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)

}  // namespace fuselab::kernels

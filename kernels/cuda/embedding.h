// Embedding on CUDA: out[i] = table[ids[i]] (rows of `dim`), and its gradient
//
//   dtable[v] = sum over i with ids[i] == v of dout[i]
//
// The backward gives each table row one block, which scans the ids in order: no atomics, so the
// sums are deterministic, at O(vocab * count) id reads (fine for small vocabularies such as
// charlm's). Pointers are device pointers on `device`; the caller checks that ids are in range.
#pragma once

#include <cstdint>

namespace fuselab::kernels::cuda {

template <class T>
void embedding_forward(const T* table, const int64_t* ids, T* out, int64_t count, int64_t dim, int device);

// Writes every row of dtable [vocab, dim].
template <class T>
void embedding_backward(const T* dout, const int64_t* ids, T* dtable, int64_t count, int64_t vocab, int64_t dim,
                        int device);

// The explicit instantiations, for the .cu file and for stubs.cc (T = float, double).
#define FUSELAB_CUDA_EMBEDDING_INSTANTIATE(T) \
  template void embedding_forward<T>(const T*, const int64_t*, T*, int64_t, int64_t, int);                  \
  template void embedding_backward<T>(const T*, const int64_t*, T*, int64_t, int64_t, int64_t, int);

}  // namespace fuselab::kernels::cuda

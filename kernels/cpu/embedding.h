// Embedding lookup: out[i] = table[ids[i]] (rows of `dim`), and its scatter-add gradient.
#pragma once

#include <cstdint>

namespace fuselab::kernels::cpu {

template <class T>
void embedding_forward(const T* table, const int64_t* ids, T* out, int64_t count, int64_t dim);

// dtable[ids[i]] += dout[i]; repeated ids accumulate.
template <class T>
void embedding_backward(const T* dout, const int64_t* ids, T* dtable, int64_t count, int64_t dim);

}  // namespace fuselab::kernels::cpu

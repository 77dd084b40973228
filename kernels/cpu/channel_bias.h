// A per-channel bias over NCHW tensors, seen as [batch, channels, plane]:
//   y[n, k, i] = x[n, k, i] + b[k],   db[k] = sum_{n, i} dy[n, k, i]
#pragma once

#include <cstdint>

namespace fuselab::kernels::cpu {

template <class T>
void channel_bias_forward(const T* x, const T* b, T* y, int64_t batch, int64_t channels, int64_t plane);

template <class T>
void channel_bias_grad(const T* dy, T* db, int64_t batch, int64_t channels, int64_t plane);

}  // namespace fuselab::kernels::cpu

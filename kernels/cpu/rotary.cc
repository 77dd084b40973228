// The CPU body of kernels/rotary.h: rows in parallel, each head's pairs in a SIMD loop.
#include "kernels/rotary.h"

#include <algorithm>

#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
using namespace cpu;  // threading.h

template <class T>
void ApplyRotary<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
  const int64_t d = s.head_dim, half = d / 2, rotated = s.rotated_heads * d;
  const C sign = inverse ? C(-1) : C(1);
#pragma omp parallel for if (s.rows * s.row > kParallelGrain)
  for (int64_t r = 0; r < s.rows; ++r) {
    const T* xr = x + r * s.row;
    T* yr = y + r * s.row;
    const C* c = cos + r % s.tokens * half;
    const C* sn = sin + r % s.tokens * half;
    for (int64_t h = 0; h < s.rotated_heads; ++h) {
      const T* a = xr + h * d;
      T* out = yr + h * d;
#pragma omp simd
      for (int64_t e = 0; e < half; ++e) {
        C y1, y2;
        rotate_pair(C(a[e]), C(a[e + half]), c[e], sign * sn[e], &y1, &y2);
        out[e] = T(y1);
        out[e + half] = T(y2);
      }
    }
    std::copy(xr + rotated, xr + s.row, yr + rotated);  // the value heads pass
  }
}

FUSELAB_ROTARY_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels

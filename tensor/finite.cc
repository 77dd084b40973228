#include "tensor/finite.h"

#include <cmath>

#include "tensor/dispatch.h"

namespace fuselab {

int64_t count_non_finite(const Tensor& t) {
  if (t.dtype() == DType::Int64) return 0;
  const Tensor host = t.to(Device::cpu());
  int64_t count = 0;
  dispatch_floating<WithBFloat16::Yes>(host.dtype(), "count_non_finite", [&](auto zero) {
    using T = decltype(zero);
    const T* p = host.data<T>();
    for (int64_t i = 0; i < host.numel(); ++i) count += !std::isfinite(double(p[i]));
  });
  return count;
}

}  // namespace fuselab

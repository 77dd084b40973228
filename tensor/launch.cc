#include "tensor/launch.h"

#include "tensor/factories.h"

namespace fuselab {

namespace detail {
std::atomic<uint64_t> launches{0};
}  // namespace detail

uint64_t launch_count() { return detail::launches.load(std::memory_order_relaxed); }

void* LaunchContext::scratch_bytes(size_t bytes) {
  const int64_t words = int64_t((bytes + sizeof(double) - 1) / sizeof(double));
  blocks_.push_back(empty({words}, DType::Float64, device_));
  return blocks_.back().raw_data();
}

void fail_in_kernel(const char* op, const Tensor& on, const std::exception& e) {
  fail(op, " on a ", on.dtype(), " tensor of shape ", on.shape(), " on ", on.device(), ": ", e.what());
}

}  // namespace fuselab

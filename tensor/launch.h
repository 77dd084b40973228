// The one way ops reach a kernel (kernels/kernel.h): build its argument struct from tensors and
// launch it on their device.
//
//   launch_floating<WithBFloat16::Yes>("RMSNorm", x, [&](auto zero) {
//     using T = decltype(zero);
//     return kernels::RMSNormForward<T>{x.ptr<T>(), w.ptr<T>(), y.ptr<T>(), ...};
//   });
//
// launch() runs kernel.cpu() for a CPU tensor and kernel.cuda() for a CUDA one, with scratch
// memory from the caching allocator, and turns a kernel's failure (a CUDA error from kernels/cuda, a
// bad setting, a missing library, scratch memory that is not there) into a fuselab::Error naming
// the op, the shape and the device, then the cause.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <vector>

#include "kernels/cpu/threading.h"
#include "kernels/kernel.h"
#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace fuselab {

// A KernelContext whose scratch blocks are tensors, freed when the launch returns.
class LaunchContext final : public kernels::KernelContext {
 public:
  explicit LaunchContext(Device device) : KernelContext(device.is_cpu() ? -1 : device.index), device_(device) {}

 private:
  void* scratch_bytes(size_t bytes) override;
  Device device_;
  std::vector<Tensor> blocks_;
};

// A kernel argument for a tensor that may be undefined (an output nobody needs): null then.
template <class T>
T* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.ptr<T>() : nullptr;
}

[[noreturn]] void fail_in_kernel(const char* op, const Tensor& on, const std::exception& e);

// Kernel launches through launch() in this process, on every device and thread, since it started.
// A fused op earns its name partly by launching fewer kernels: the fusion report
// (fuser/fusion_report.h) counts one forward + backward as the difference of two readings.
uint64_t launch_count();

namespace detail {
extern std::atomic<uint64_t> launches;
}  // namespace detail

template <class Kernel>
void launch(const char* op, const Tensor& on, const Kernel& kernel) {
  LaunchContext ctx(on.device());
  detail::launches.fetch_add(1, std::memory_order_relaxed);  // a count, ordering nothing
  try {
    if (on.device().is_cpu()) {
      kernels::cpu::apply_num_threads();  // FUSELAB_NUM_THREADS, on this thread
      kernel.cpu(ctx);
    } else {
      kernel.cuda(ctx);
    }
  } catch (const std::exception& e) {
    fail_in_kernel(op, on, e);
  }
}

// launch() with the dtype dispatch folded in: make_kernel(zero) builds the kernel for the C++
// type of `on`'s dtype (zero is a value of that type).
template <WithBFloat16 bf16 = WithBFloat16::No, class MakeKernel>
void launch_floating(const char* op, const Tensor& on, MakeKernel&& make_kernel) {
  dispatch_floating<bf16>(on.dtype(), op, [&](auto zero) { launch(op, on, make_kernel(zero)); });
}

}  // namespace fuselab

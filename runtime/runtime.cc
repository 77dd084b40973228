#include "runtime/runtime.h"

#include <exception>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/threading.h"
#include "kernels/cuda/device_api.h"
#include "tensor/error.h"

namespace fuselab {

int num_threads() { return kernels::cpu::num_threads(); }

void set_num_threads(int threads) {
  check(threads >= 1 && threads <= 4096, "set_num_threads(", threads, "): a thread count is in [1, 4096]");
  kernels::cpu::set_num_threads(threads);
}

int cuda_device_count() { return kernels::cuda::device_count(); }

void synchronize(Device device) {
  if (device.is_cpu()) return;
  try {
    kernels::cuda::synchronize(device.index);
  } catch (const std::exception& e) {
    fail("synchronize(", device, "): ", e.what());
  }
}

std::string cpu_gemm_description() { return kernels::cpu::cpu_gemm_description(); }

}  // namespace fuselab

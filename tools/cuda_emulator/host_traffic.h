// What the emulated device has cost the host so far: copies each way and the calls that wait
// for the device (cudaDeviceSynchronize, and cudaFree, which waits on a GPU). On a GPU each is a
// stall of the host thread; tests count them around a training step.
#pragma once

#include <cstdint>

namespace cuda_emulator {

struct HostTraffic {
  int64_t to_device = 0;  // cudaMemcpy host to device
  int64_t to_host = 0;    // cudaMemcpy device to host
  int64_t waits = 0;      // cudaDeviceSynchronize and cudaFree

  HostTraffic operator-(const HostTraffic& since) const {
    return {to_device - since.to_device, to_host - since.to_host, waits - since.waits};
  }
};

// Since the program started.
HostTraffic host_traffic();

}  // namespace cuda_emulator

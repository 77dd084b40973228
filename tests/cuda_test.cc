// The CUDA path: tensors to and from the device, and the elementwise add kernel.
// Skips with the reason where there is no GPU (or no CUDA in the build).
#include <gtest/gtest.h>

#include "autograd/functional.h"
#include "kernels/cuda/device_api.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kernels::cuda::compiled_with_cuda()) GTEST_SKIP() << "built without CUDA (--config=cpu)";
    if (kernels::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount found none";
  }
};

TEST_F(Cuda, RoundTripKeepsValues) {
  const Tensor host = randn({1000});
  const Tensor device = host.to(Device::cuda(0));
  EXPECT_EQ(device.device(), Device::cuda(0));
  EXPECT_EQ(device.to(Device::cpu()).to_vector<float>(), host.to_vector<float>());
}

TEST_F(Cuda, AddMatchesCpuOnSizesThatAreNotBlockMultiples) {
  for (int64_t n : {1, 255, 257, 100003}) {
    const Tensor a = randn({n}), b = randn({n});
    const Tensor on_gpu = add(a.to(Device::cuda(0)), b.to(Device::cuda(0)));
    EXPECT_EQ(on_gpu.device(), Device::cuda(0));
    EXPECT_EQ(on_gpu.to(Device::cpu()).to_vector<float>(), add(a, b).to_vector<float>());
  }
}

TEST_F(Cuda, MixingDevicesIsAClearError) {
  EXPECT_THROW(add(zeros({2}), zeros({2}).to(Device::cuda(0))), Error);
}

TEST(CudaBuild, DeviceCountIsSafeWithoutADriver) {
  EXPECT_NO_THROW(kernels::cuda::device_count());  // no driver or GPU: 0, never an exception
}

}  // namespace
}  // namespace fuselab

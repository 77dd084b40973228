// The CUDA emulator (tools/cuda_emulator) on kernels written for it: shared memory and barriers
// across blocks, warp shuffles, the coordinates of every thread, launch errors, and the misuses
// it must stop with the kernel's name instead of hanging or corrupting memory. Built as the
// emulated kernels are: rewrite_launches, then the host compiler.
#include <gtest/gtest.h>

#include <vector>

namespace {

// Device copies of host vectors, freed at the end of the test.
template <class T>
struct DeviceBuffer {
  explicit DeviceBuffer(const std::vector<T>& host) : size(host.size()) {
    EXPECT_EQ(cudaMalloc(&ptr, size * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr, host.data(), size * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  std::vector<T> to_host() const {
    std::vector<T> host(size);
    EXPECT_EQ(cudaMemcpy(host.data(), ptr, size * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  T* ptr = nullptr;
  size_t size;
};

// out[block, i] = in[block, n - 1 - i]: each thread writes shared memory, the block waits, each
// reads another thread's element.
__global__ void reverse_each_block(const int* in, int* out) {
  __shared__ int staged[1024];
  const int n = blockDim.x, base = blockIdx.x * n;
  staged[threadIdx.x] = in[base + threadIdx.x];
  __syncthreads();
  out[base + threadIdx.x] = staged[n - 1 - threadIdx.x];
}

// out[i] = the sum of in over i's warp, by a butterfly of shuffles: every lane ends with it.
__global__ void warp_sums(const int* in, int* out) {
  int value = in[threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  out[threadIdx.x] = value;
}

// out[global thread] = its coordinates packed as digits: every thread runs once, where it should.
__global__ void coordinates(int* out) {
  const int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const int thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  out[block * blockDim.x * blockDim.y * blockDim.z + thread] =
      100000 * blockIdx.z + 10000 * blockIdx.y + 1000 * blockIdx.x + 100 * threadIdx.z + 10 * threadIdx.y + threadIdx.x;
}

// Half the warp waits at __syncthreads, the other half at a shuffle: neither can go on.
__global__ void split_barriers(int* out) {
  int value = int(threadIdx.x);
  if (threadIdx.x < 16) __syncthreads();
  if (threadIdx.x >= 16) value = __shfl_xor_sync(0xffffffffu, value, 1);
  out[threadIdx.x] = value;
}

// Lane 5 returns, then lane 4 reads it.
__global__ void shuffle_after_return(int* out) {
  if (threadIdx.x == 5) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, int(threadIdx.x), 1);
}

TEST(CudaEmulator, SharedMemoryAndBarriersWorkPerBlock) {
  const int blocks = 7, n = 100;  // 100 threads: four warps, the last one partial
  std::vector<int> in(blocks * n);
  for (size_t i = 0; i < in.size(); ++i) in[i] = int(i);
  DeviceBuffer<int> x(in), y(std::vector<int>(in.size(), -1));
  reverse_each_block<<<blocks, n>>>(x.ptr, y.ptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const std::vector<int> out = y.to_host();
  for (int b = 0; b < blocks; ++b) {
    for (int i = 0; i < n; ++i) ASSERT_EQ(out[b * n + i], b * n + n - 1 - i) << "block " << b << " element " << i;
  }
}

TEST(CudaEmulator, ShufflesExchangeLanesWithinEachWarp) {
  std::vector<int> in(64);
  for (int i = 0; i < 64; ++i) in[i] = i * i;
  DeviceBuffer<int> x(in), y(std::vector<int>(64, -1));
  warp_sums<<<1, 64>>>(x.ptr, y.ptr);
  int first = 0, second = 0;
  for (int i = 0; i < 32; ++i) first += in[i], second += in[32 + i];
  const std::vector<int> out = y.to_host();
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], i < 32 ? first : second) << "lane " << i;
}

TEST(CudaEmulator, EveryThreadOfAThreeDimensionalGridRunsOnceWithItsCoordinates) {
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  DeviceBuffer<int> y(std::vector<int>(3 * 2 * 2 * 4 * 3 * 2, -1));
  coordinates<<<grid, block>>>(y.ptr);
  const std::vector<int> out = y.to_host();
  for (int i = 0; i < int(out.size()); ++i) {  // i = tx + 4 (ty + 3 (tz + 2 (bx + 3 (by + 2 bz))))
    const int tx = i % 4, ty = i / 4 % 3, tz = i / 12 % 2, bx = i / 24 % 3, by = i / 72 % 2, bz = i / 144;
    EXPECT_EQ(out[i], 100000 * bz + 10000 * by + 1000 * bx + 100 * tz + 10 * ty + tx) << "thread " << i;
  }
}

TEST(CudaEmulator, ALaunchCudaWouldRefuseRunsNothingAndSetsTheError) {
  DeviceBuffer<int> y(std::vector<int>(2048, -1));
  coordinates<<<1, 2048>>>(y.ptr);  // over 1024 threads a block
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // read once, then cleared
  EXPECT_EQ(y.to_host(), std::vector<int>(2048, -1));
}

TEST(CudaEmulator, CopiesOutsideDeviceMemoryAreRefused) {
  DeviceBuffer<int> y(std::vector<int>(4, 0));
  std::vector<int> host(8);
  EXPECT_EQ(cudaMemcpy(host.data(), y.ptr, 8 * sizeof(int), cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(y.ptr, host.data(), 4 * sizeof(int), cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(y.ptr + 1, 0, 4 * sizeof(int)), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(y.ptr + 1), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetErrorString(cudaGetLastError()), std::string("invalid argument"));
}

TEST(CudaEmulatorDeathTest, MisusesStopWithTheKernelsNameInsteadOfHanging) {
  DeviceBuffer<int> y(std::vector<int>(32, 0));
  EXPECT_DEATH(split_barriers<<<1, 32>>>(y.ptr), "split_barriers: deadlock");
  EXPECT_DEATH(shuffle_after_return<<<1, 32>>>(y.ptr),
               "shuffle_after_return: a shuffle reads a lane that has returned");
  std::vector<int> host(32);
  EXPECT_DEATH(warp_sums<<<1, 32>>>(host.data(), y.ptr), "warp_sums: argument .* is not device memory");
}

}  // namespace

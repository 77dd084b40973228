// How the emulator runs a kernel launch on the CPU.
//
// One launch runs at a time, and its blocks one after another on the calling thread, in a
// shuffled order: CUDA promises none, and so a block that writes into its neighbour's rows shows
// up. Each CUDA thread of a block is a fiber (fiber.h) that runs until it returns or waits at a
// barrier, so __syncthreads() is a real barrier over the block and a warp shuffle a barrier over
// its warp. A thread that has returned counts as arrived at every later barrier, as on the
// hardware. What this checks: each thread's indexing and bounds, reductions, barriers and
// shuffles, and (under AddressSanitizer) every access against the cudaMalloc'd buffers. What it
// cannot: speed, races (fibers take turns, blocks never overlap), or anything of cuBLASLt and
// cuDNN.
//
// A misuse that would hang or corrupt memory on a GPU aborts with the kernel's name instead: a
// barrier some threads never reach, a shuffle from a lane that has returned, a host pointer
// passed to a kernel.
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>

struct uint3 {
  unsigned x, y, z;
};

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
};

// The running CUDA thread's coordinates, set by run_grid before it resumes each fiber.
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

namespace cuda_emulator {

// Calls thread_body in every thread of every block. A configuration CUDA would refuse (a zero
// dimension, over 1024 threads a block, a grid over its limits) runs nothing and sets the error
// that cudaGetLastError() returns.
void run_grid(const char* kernel, dim3 grid, dim3 block, const std::function<void()>& thread_body);

// The bits of `value` from lane (own lane ^ lane_mask) of the calling thread's warp.
uint64_t shuffle_xor(unsigned mask, uint64_t value, int lane_mask);

// Aborts unless ptr is null or points into memory from cudaMalloc.
void expect_device_pointer(const char* kernel, const void* ptr);

// kernel<<<grid, block>>>(args...) after rewrite_launches, with call_kernel(args...) calling
// kernel(args...): each thread makes that call, so each gets its own copy of the arguments.
template <class CallKernel>
auto launch(const char* name, CallKernel call_kernel, dim3 grid, dim3 block) {
  return [=](const auto&... args) {
    auto check = [name](const auto& arg) {
      if constexpr (std::is_pointer_v<std::decay_t<decltype(arg)>>) expect_device_pointer(name, arg);
    };
    (check(args), ...);
    run_grid(name, grid, block, [&] { call_kernel(args...); });
  };
}

}  // namespace cuda_emulator

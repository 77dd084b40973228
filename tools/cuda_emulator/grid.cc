// run_grid, __syncthreads and warp shuffles over fibers (see grid.h).
//
// A block's fibers are scheduled round robin: each pass resumes every fiber that has not
// returned, and each runs until it returns or waits at a barrier. A pass in which no barrier
// opened and no fiber returned leaves every fiber waiting for good: a deadlock, reported at once.
#include "tools/cuda_emulator/grid.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <vector>

#include "tools/cuda_emulator/fiber.h"
#include "tools/cuda_emulator/include/cuda_runtime.h"

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace cuda_emulator {
namespace {

constexpr int kWarpSize = 32;

[[noreturn]] void fail(const char* kernel, const char* what) {
  std::fprintf(stderr, "cuda_emulator: %s: %s\n", kernel, what);
  std::abort();
}

// A CUDA thread of the running block.
struct Thread {
  Fiber* fiber;
  uint3 index;
  unsigned shuffles = 0;  // made in this block
};

// A barrier over the threads of a block (or of a warp) that have not returned.
class Barrier {
 public:
  explicit Barrier(uint64_t* progress) : progress_(progress) {}

  void reset(int count) {
    count_ = count;
    arrived_ = 0;
  }

  void arrive_and_wait() {
    if (++arrived_ == count_) return open();
    const uint64_t phase = phase_;
    while (phase_ == phase) Fiber::yield();
  }

  // A thread has returned: the barrier waits for one fewer from now on.
  void leave() {
    --count_;
    if (arrived_ > 0 && arrived_ == count_) open();
  }

 private:
  void open() {
    arrived_ = 0;
    ++phase_;
    ++*progress_;
  }

  uint64_t* progress_;
  int count_ = 0, arrived_ = 0;
  uint64_t phase_ = 0;
};

// What the threads of one launch share.
struct Launch {
  Launch(const char* kernel, dim3 block, const std::function<void()>& body)
      : kernel(kernel),
        body(body),
        threads(int(block.x * block.y * block.z)),
        syncthreads(&progress),
        cuda_threads(size_t(threads)),
        lane_values(2 * size_t(threads)) {
    for (int first = 0; first < threads; first += kWarpSize) warps.emplace_back(&progress);
  }

  int warp_size(int rank) const { return std::min(kWarpSize, threads - rank / kWarpSize * kWarpSize); }
  Barrier& warp_of(int rank) { return warps[size_t(rank / kWarpSize)]; }

  const char* kernel;
  const std::function<void()>& body;
  const int threads;
  uint64_t progress = 0;  // barriers opened plus threads returned
  Barrier syncthreads;
  std::vector<Barrier> warps;
  std::vector<Thread> cuda_threads;
  // Two shuffle slots per thread, used in turn: a lane can be one shuffle ahead of the slowest
  // (the next one's barrier holds it), so it never overwrites a value still to be read.
  std::vector<uint64_t> lane_values;
};

// The launch running, and the CUDA thread running (rank: its linear index in the block, x fastest,
// as CUDA numbers lanes). One launch runs at a time, whichever host thread makes it.
std::mutex one_launch_at_a_time;
Launch* current = nullptr;
int rank = 0;

// A CUDA thread: the kernel, then it no longer holds up the barriers.
void thread_main() {
  Launch& launch = *current;
  launch.body();
  ++launch.progress;
  launch.syncthreads.leave();
  launch.warp_of(rank).leave();
}

uint3 unflatten(uint64_t index, dim3 dims) {
  return {unsigned(index % dims.x), unsigned(index / dims.x % dims.y), unsigned(index / dims.x / dims.y)};
}

// The first `count` fibers, made on first use and kept for every later launch.
const std::vector<std::unique_ptr<Fiber>>& fibers(int count) {
  static std::vector<std::unique_ptr<Fiber>> pool;
  while (int(pool.size()) < count) pool.push_back(std::make_unique<Fiber>());
  return pool;
}

// Every thread of the block starts from the kernel's first line; every barrier waits for all.
void start_block(Launch& launch) {
  const std::vector<std::unique_ptr<Fiber>>& pool = fibers(launch.threads);
  launch.syncthreads.reset(launch.threads);
  for (int r = 0; r < launch.threads; r += kWarpSize) launch.warp_of(r).reset(launch.warp_size(r));
  for (int r = 0; r < launch.threads; ++r) {
    Thread& thread = launch.cuda_threads[size_t(r)];
    thread = {pool[size_t(r)].get(), unflatten(uint64_t(r), blockDim)};
    thread.fiber->start(thread_main);
  }
}

void run_block(Launch& launch) {
  start_block(launch);
  for (int live = launch.threads; live > 0;) {
    const uint64_t progress = launch.progress;
    live = 0;
    for (int r = 0; r < launch.threads; ++r) {
      const Thread& thread = launch.cuda_threads[size_t(r)];
      if (thread.fiber->finished()) continue;
      rank = r;
      threadIdx = thread.index;
      thread.fiber->resume();
      live += !thread.fiber->finished();
    }
    if (live > 0 && launch.progress == progress) {
      fail(launch.kernel, "deadlock: a __syncthreads() or shuffle is waited at by only some threads");
    }
  }
}

bool valid(dim3 grid, dim3 block) {
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  return grid.x > 0 && grid.y > 0 && grid.z > 0 && grid.x <= 0x7fffffffu && grid.y <= 65535 && grid.z <= 65535 &&
         threads > 0 && threads <= 1024 && block.x <= 1024 && block.y <= 1024 && block.z <= 64;
}

Launch& running(const char* call) {
  if (current == nullptr) fail(call, "called outside a kernel");
  return *current;
}

}  // namespace

void run_grid(const char* kernel, dim3 grid, dim3 block, const std::function<void()>& thread_body) {
  if (!valid(grid, block)) return record_error(cudaErrorInvalidConfiguration);
  std::lock_guard<std::mutex> lock(one_launch_at_a_time);
  Launch launch(kernel, block, thread_body);
  current = &launch;
  gridDim = grid;
  blockDim = block;
  std::vector<uint64_t> blocks(uint64_t(grid.x) * grid.y * grid.z);
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), std::mt19937_64(blocks.size()));  // the same order every run
  for (uint64_t b : blocks) {
    blockIdx = unflatten(b, grid);
    run_block(launch);
  }
  current = nullptr;
}

uint64_t shuffle_xor(unsigned mask, uint64_t value, int lane_mask) {
  Launch& launch = running("__shfl_xor_sync");
  const int source = rank / kWarpSize * kWarpSize + (rank % kWarpSize ^ lane_mask);
  if (mask != 0xffffffffu || launch.warp_size(rank) != kWarpSize) {
    fail(launch.kernel, "only full-warp shuffles (mask 0xffffffff, 32 threads a warp) are emulated");
  }
  const unsigned shuffle = launch.cuda_threads[size_t(rank)].shuffles++;
  const size_t slots = size_t(shuffle % 2) * size_t(launch.threads);
  launch.lane_values[slots + size_t(rank)] = value;
  launch.warp_of(rank).arrive_and_wait();
  if (launch.cuda_threads[size_t(source)].shuffles <= shuffle) {
    fail(launch.kernel, "a shuffle reads a lane that has returned");
  }
  return launch.lane_values[slots + size_t(source)];
}

}  // namespace cuda_emulator

void __syncthreads() { cuda_emulator::running("__syncthreads").syncthreads.arrive_and_wait(); }

// run_grid, __syncthreads and warp shuffles over fibers (see grid.h).
//
// A block's fibers are scheduled round robin: each pass resumes every fiber that has not
// returned, and each runs until it returns or waits at a barrier. A pass in which no barrier
// opened and no fiber returned leaves every fiber waiting for good: a deadlock, reported at once.
//
// Fibers switch by swapping stack pointers (switch_fiber below). ucontext's swapcontext would do,
// but it makes a system call per switch, and a test switches millions of times.
#include "tools/cuda_emulator/grid.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <vector>

#include "tools/cuda_emulator/include/cuda_runtime.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#error "the CUDA emulator switches fibers with x86-64 code (switch_fiber)"
#endif

// switch_fiber(from, to): pushes the callee-saved registers on the running stack and stores the
// stack pointer in *from, then loads `to`, pops that stack's registers and returns into it. A new
// fiber's stack is laid out as if it had switched away just before its first line (new_fiber).
// The kernels leave the floating-point control registers alone, so those are not switched.
extern "C" void cuda_emulator_switch_fiber(void** from, void* to);
asm(R"(
  .text
  .globl cuda_emulator_switch_fiber
  .type cuda_emulator_switch_fiber, @function
cuda_emulator_switch_fiber:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cuda_emulator_switch_fiber, .-cuda_emulator_switch_fiber
)");

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace cuda_emulator {
namespace {

constexpr int kWarpSize = 32;
constexpr size_t kStackBytes = 256 << 10;  // kernels are shallow; sanitizers widen their frames

[[noreturn]] void fail(const char* kernel, const char* what) {
  std::fprintf(stderr, "cuda_emulator: %s: %s\n", kernel, what);
  std::abort();
}

// AddressSanitizer must be told when the running stack changes (no-ops without it).
void start_switch(void** fake_stack, const void* bottom, size_t size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#endif
}
void finish_switch(void* fake_stack, const void** bottom, size_t* size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(fake_stack, bottom, size);
#endif
}

// A fiber's stack, mapped once per thread and reused by every launch.
struct Stack {
  Stack() : base(mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0)) {
    if (base == MAP_FAILED) fail("cuda_emulator", "mmap of a fiber stack failed");
  }
  ~Stack() { munmap(base, kStackBytes); }
  Stack(const Stack&) = delete;
  void* base;
};

struct Fiber {
  void* sp;  // saved while switched out
  Stack* stack;
  uint3 thread_idx;
  bool returned = false;
  unsigned shuffles = 0;       // shuffles made in this block
  void* fake_stack = nullptr;  // AddressSanitizer's, while the fiber is switched out
};

void yield_to_scheduler();

// A barrier over the fibers of a block (or of a warp) that have not returned.
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
    while (phase_ == phase) yield_to_scheduler();
  }

  // A fiber has returned: the barrier waits for one fewer from now on.
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

// What the fibers of one launch share.
struct Launch {
  Launch(const char* kernel, dim3 block, const std::function<void()>& body)
      : kernel(kernel), body(body), threads(int(block.x * block.y * block.z)), syncthreads(&progress),
        fibers(size_t(threads)), lane_values(2 * size_t(threads)) {
    for (int first = 0; first < threads; first += kWarpSize) warps.emplace_back(&progress);
  }

  int warp_size(int rank) const { return std::min(kWarpSize, threads - rank / kWarpSize * kWarpSize); }
  Barrier& warp_of(int rank) { return warps[size_t(rank / kWarpSize)]; }

  const char* kernel;
  const std::function<void()>& body;
  const int threads;
  uint64_t progress = 0;  // barriers opened plus fibers returned
  Barrier syncthreads;
  std::vector<Barrier> warps;
  std::vector<Fiber> fibers;
  // Two shuffle slots per thread, used in turn: a lane can be one shuffle ahead of the slowest
  // (the next one's barrier holds it), so it never overwrites a value still to be read.
  std::vector<uint64_t> lane_values;
  void* scheduler_sp = nullptr;
  const void* scheduler_stack = nullptr;
  size_t scheduler_stack_size = 0;
};

// The launch running, and the fiber it is in (rank: its linear index in the block, x fastest, as
// CUDA numbers lanes). One launch runs at a time, whichever host thread makes it.
std::mutex one_launch_at_a_time;
Launch* current = nullptr;
int rank = 0;

Fiber& running_fiber() { return current->fibers[size_t(rank)]; }

void yield_to_scheduler() {
  Fiber& fiber = running_fiber();
  start_switch(&fiber.fake_stack, current->scheduler_stack, current->scheduler_stack_size);
  cuda_emulator_switch_fiber(&fiber.sp, current->scheduler_sp);
  finish_switch(fiber.fake_stack, &current->scheduler_stack, &current->scheduler_stack_size);
}

[[noreturn]] void fiber_main() {
  Launch& launch = *current;
  finish_switch(nullptr, &launch.scheduler_stack, &launch.scheduler_stack_size);
  launch.body();
  running_fiber().returned = true;
  ++launch.progress;
  launch.syncthreads.leave();
  launch.warp_of(rank).leave();
  start_switch(nullptr, launch.scheduler_stack, launch.scheduler_stack_size);  // this stack is done
  void* finished_sp;
  cuda_emulator_switch_fiber(&finished_sp, launch.scheduler_sp);
  __builtin_unreachable();  // nothing resumes a fiber that has returned
}

// The stack pointer of a fiber about to run fiber_main: from the top, a null return address for
// fiber_main (so the stack is aligned as at a call), fiber_main's address for switch_fiber's
// `ret`, and six zeros for the registers it pops.
void* new_fiber(Stack& stack) {
  void** top = reinterpret_cast<void**>(static_cast<char*>(stack.base) + kStackBytes);
  top[-1] = nullptr;
  top[-2] = reinterpret_cast<void*>(&fiber_main);
  for (int slot = 3; slot <= 8; ++slot) top[-slot] = nullptr;
  return top - 8;
}

void resume(Launch& launch, int fiber_rank) {
  Fiber& fiber = launch.fibers[size_t(fiber_rank)];
  rank = fiber_rank;
  threadIdx = fiber.thread_idx;
  void* scheduler_fake_stack = nullptr;
  start_switch(&scheduler_fake_stack, fiber.stack->base, kStackBytes);
  cuda_emulator_switch_fiber(&launch.scheduler_sp, fiber.sp);
  finish_switch(scheduler_fake_stack, nullptr, nullptr);
}

uint3 unflatten(uint64_t index, dim3 dims) {
  return {unsigned(index % dims.x), unsigned(index / dims.x % dims.y), unsigned(index / dims.x / dims.y)};
}

// The stacks of the first `count` fibers, mapped on first use and kept for every later launch.
const std::vector<std::unique_ptr<Stack>>& stacks(int count) {
  static std::vector<std::unique_ptr<Stack>> pool;
  while (int(pool.size()) < count) pool.push_back(std::make_unique<Stack>());
  return pool;
}

// Every fiber of the block starts from the kernel's first line; every barrier waits for all.
void start_block(Launch& launch) {
  const std::vector<std::unique_ptr<Stack>>& pool = stacks(launch.threads);
  launch.syncthreads.reset(launch.threads);
  for (int r = 0; r < launch.threads; r += kWarpSize) launch.warp_of(r).reset(launch.warp_size(r));
  for (int r = 0; r < launch.threads; ++r) {
    Fiber& fiber = launch.fibers[size_t(r)];
    fiber.stack = pool[size_t(r)].get();
    fiber.thread_idx = unflatten(uint64_t(r), blockDim);
    fiber.returned = false;
    fiber.shuffles = 0;
    fiber.sp = new_fiber(*fiber.stack);
  }
}

void run_block(Launch& launch) {
  start_block(launch);
  for (int live = launch.threads; live > 0;) {
    const uint64_t progress = launch.progress;
    live = 0;
    for (int r = 0; r < launch.threads; ++r) {
      if (!launch.fibers[size_t(r)].returned) resume(launch, r);
      live += !launch.fibers[size_t(r)].returned;
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
  const unsigned shuffle = launch.fibers[size_t(rank)].shuffles++;
  const size_t slots = size_t(shuffle % 2) * size_t(launch.threads);
  launch.lane_values[slots + size_t(rank)] = value;
  launch.warp_of(rank).arrive_and_wait();
  if (launch.fibers[size_t(source)].shuffles <= shuffle) fail(launch.kernel, "a shuffle reads a lane that has returned");
  return launch.lane_values[slots + size_t(source)];
}

}  // namespace cuda_emulator

void __syncthreads() { cuda_emulator::running("__syncthreads").syncthreads.arrive_and_wait(); }

// Fibers by swapping stack pointers (see fiber.h).
#include "tools/cuda_emulator/fiber.h"

#include <sys/mman.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#error "the CUDA emulator's fibers switch with x86-64 code (switch_stacks)"
#endif

// switch_stacks(from, to): pushes the callee-saved registers on the running stack and stores the
// stack pointer in *from, then loads `to`, pops that stack's registers and returns into it. The
// kernels leave the floating-point control registers alone, so those are not switched.
extern "C" void cuda_emulator_switch_stacks(void** from, void* to);
asm(R"(
  .text
  .globl cuda_emulator_switch_stacks
  .type cuda_emulator_switch_stacks, @function
cuda_emulator_switch_stacks:
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
  .size cuda_emulator_switch_stacks, .-cuda_emulator_switch_stacks
)");

namespace cuda_emulator {
namespace {

constexpr size_t kStackBytes = 256 << 10;  // kernels are shallow; sanitizers widen their frames

// AddressSanitizer must be told whenever the running stack changes (no-ops without it).
void start_switch(void** sanitizer_stack, const void* bottom, size_t size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(sanitizer_stack, bottom, size);
#endif
}
void finish_switch(void* sanitizer_stack, const void** bottom, size_t* size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(sanitizer_stack, bottom, size);
#endif
}
// A body that ran before left its last frames marked as live stack; start() writes over them.
void forget_frames(void* begin, size_t bytes) {
#if defined(__SANITIZE_ADDRESS__)
  __asan_unpoison_memory_region(begin, bytes);
#endif
}

// The fiber running, and the stack of the thread that resumed it.
Fiber* running = nullptr;
void* resumer_stack_pointer = nullptr;
const void* resumer_stack = nullptr;
size_t resumer_stack_size = 0;

}  // namespace

Fiber::Fiber() : stack_(mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) {
  if (stack_ == MAP_FAILED) {
    std::fprintf(stderr, "cuda_emulator: mmap of a fiber stack failed\n");
    std::abort();
  }
}

Fiber::~Fiber() { munmap(stack_, kStackBytes); }

// The stack is laid out as if the fiber had switched away just before run_body's first line:
// from the top, a null return address for run_body (which never returns; it keeps the stack
// aligned as at a call), run_body's address for switch_stacks' `ret`, and six zeros it pops.
void Fiber::start(void (*body)()) {
  void** top = reinterpret_cast<void**>(static_cast<char*>(stack_) + kStackBytes);
  forget_frames(top - 8, 8 * sizeof(void*));
  top[-1] = nullptr;
  top[-2] = reinterpret_cast<void*>(&Fiber::run_body);
  for (int slot = 3; slot <= 8; ++slot) top[-slot] = nullptr;
  stack_pointer_ = top - 8;
  body_ = body;
  finished_ = false;
}

void Fiber::resume() {
  running = this;
  void* sanitizer_stack = nullptr;
  start_switch(&sanitizer_stack, stack_, kStackBytes);
  cuda_emulator_switch_stacks(&resumer_stack_pointer, stack_pointer_);
  finish_switch(sanitizer_stack, nullptr, nullptr);
  running = nullptr;
}

void Fiber::yield() {
  Fiber& self = *running;
  start_switch(&self.sanitizer_stack_, resumer_stack, resumer_stack_size);
  cuda_emulator_switch_stacks(&self.stack_pointer_, resumer_stack_pointer);
  finish_switch(self.sanitizer_stack_, &resumer_stack, &resumer_stack_size);
}

void Fiber::run_body() {
  finish_switch(nullptr, &resumer_stack, &resumer_stack_size);
  running->body_();
  running->finished_ = true;
  start_switch(nullptr, resumer_stack, resumer_stack_size);  // this stack's frames are done with
  void* unused;
  cuda_emulator_switch_stacks(&unused, resumer_stack_pointer);
  __builtin_unreachable();  // a finished fiber is not resumed until start() again
}

}  // namespace cuda_emulator

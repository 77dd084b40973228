// A fiber: a function with a stack of its own that runs when resumed, gives control back when it
// yields, and goes on from there at the next resume. The emulator runs each CUDA thread of a
// block as one, so a barrier is a yield until every thread has arrived.
//
// One thread at a time may resume fibers (the emulator runs one launch at a time). x86-64 only:
// the switch is a few instructions of assembly, where ucontext's swapcontext would cost a system
// call per switch, and a test switches millions of times.
#pragma once

namespace cuda_emulator {

class Fiber {
 public:
  Fiber();  // maps the stack, kept until the fiber is destroyed
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // The next resume() calls body() from its first line, on this fiber's stack.
  void start(void (*body)());
  // Runs the fiber until it yields or its body returns.
  void resume();
  bool finished() const { return finished_; }

  // Called on the running fiber: back to the caller of resume(), until the next one.
  static void yield();

 private:
  [[noreturn]] static void run_body();

  void* stack_;
  void* stack_pointer_ = nullptr;  // saved while switched out
  void* sanitizer_stack_ = nullptr;
  void (*body_)() = nullptr;
  bool finished_ = true;
};

}  // namespace cuda_emulator

// What a kernel is. Each kernel is one argument struct, shared by both backends: its fields are
// the pointers and sizes it reads and writes, the math sits in a comment above it (in the
// family's header, kernels/<family>.h), and it has two entry points:
//
//   void cpu(KernelContext&) const;    defined in kernels/cpu/<family>.cc; host pointers
//   void cuda(KernelContext&) const;   defined in kernels/cuda/<family>.cu; device pointers
//
// Ops do not call them: tensor/launch.h's launch() runs the one for a tensor's device, so an op
// makes one call per kernel. A family header lists its kernels once, with the element types each
// takes (FUSELAB_<FAMILY>_KERNELS); that list instantiates both backends and the CUDA stubs of a
// build without the toolkit (kernels/cuda/stubs.cc).
//
// One rule for both backends: a kernel writes its outputs, parameter grads included; it never
// accumulates into memory the caller must zero first.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/bfloat16.h"

namespace fuselab::kernels {

// The device a kernel runs on, and memory for its intermediate results there.
class KernelContext {
 public:
  explicit KernelContext(int device) : device(device) {}
  const int device;  // the CUDA device index; -1 on the CPU

  // `count` elements of T on the kernel's device, valid until its entry point returns (on CUDA,
  // until the work it queued is done: the caching allocator reuses freed blocks in stream order).
  template <class T>
  T* scratch(int64_t count) {
    return static_cast<T*>(scratch_bytes(size_t(count > 0 ? count : 0) * sizeof(T)));
  }

 protected:
  virtual void* scratch_bytes(size_t bytes) = 0;
  ~KernelContext() = default;
};

// The element types a kernel takes, for the lists in the family headers.
#define FUSELAB_FLOAT_DOUBLE(X, Kernel) X(Kernel, float) X(Kernel, double)
#define FUSELAB_FLOAT_DOUBLE_BFLOAT16(X, Kernel) X(Kernel, float) X(Kernel, double) X(Kernel, bfloat16)
#define FUSELAB_EVERY_DTYPE(X, Kernel) FUSELAB_FLOAT_DOUBLE_BFLOAT16(X, Kernel) X(Kernel, int64_t)

// Explicit instantiations of one backend's entry points, for a family list:
//   FUSELAB_NORM_KERNELS(FUSELAB_INSTANTIATE_CPU)   at the end of kernels/cpu/norms.cc
#define FUSELAB_INSTANTIATE_CPU_ONE(Kernel, T) template void Kernel<T>::cpu(KernelContext&) const;
#define FUSELAB_INSTANTIATE_CUDA_ONE(Kernel, T) template void Kernel<T>::cuda(KernelContext&) const;
#define FUSELAB_INSTANTIATE_CPU(Kernel, TYPES) TYPES(FUSELAB_INSTANTIATE_CPU_ONE, Kernel)
#define FUSELAB_INSTANTIATE_CUDA(Kernel, TYPES) TYPES(FUSELAB_INSTANTIATE_CUDA_ONE, Kernel)

// cuda() entry points that throw, for builds without a backend's library (kernels/cuda/stubs.cc,
// tools/cuda_emulator/library_standins.cc): each defines `[[noreturn]] void unavailable(const
// char* kernel)` in fuselab::kernels before it expands FUSELAB_<FAMILY>_KERNELS(FUSELAB_CUDA_STUB).
#define FUSELAB_CUDA_STUB_ONE(Kernel, T)       \
  template <>                                  \
  void Kernel<T>::cuda(KernelContext&) const { \
    unavailable(#Kernel);                      \
  }
#define FUSELAB_CUDA_STUB(Kernel, TYPES) TYPES(FUSELAB_CUDA_STUB_ONE, Kernel)

// The argument structs' entry points, declared once for every kernel.
#define FUSELAB_KERNEL_ENTRY_POINTS    \
  void cpu(KernelContext& ctx) const;  \
  void cuda(KernelContext& ctx) const

}  // namespace fuselab::kernels

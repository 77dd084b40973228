// A KernelContext for calling a kernel's cpu() entry point directly, as tests and micro-benchmarks
// do: scratch comes from the heap and is freed with the context. Ops go through tensor/launch.h.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/kernel.h"

namespace fuselab::kernels::cpu {

class HostContext final : public KernelContext {
 public:
  HostContext() : KernelContext(-1) {}

 private:
  void* scratch_bytes(size_t bytes) override {
    blocks_.push_back(std::make_unique<double[]>((bytes + sizeof(double) - 1) / sizeof(double)));
    return blocks_.back().get();
  }
  std::vector<std::unique_ptr<double[]>> blocks_;
};

}  // namespace fuselab::kernels::cpu

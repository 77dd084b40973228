// After warm-up, a training step takes no memory from the system: every tensor it needs comes
// from the caching allocator's free blocks.
#include <gtest/gtest.h>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/linear.h"
#include "ops/basic/rmsnorm.h"
#include "optim/adamw.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

TEST(AllocatorSteadyState, TrainingStepsAfterWarmupAllocateNothingFromTheSystem) {
  for (bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "unfused");
    Generator gen(3);
    Sequential block;
    block.append(linear_with_bias(64, 256, &gen)).append(std::make_shared<GELU>());
    block.append(linear_with_bias(256, 64, &gen)).append(std::make_shared<AddExtraInput>());
    block.append(std::make_shared<RMSNorm>(64));
    block.set_fusion_switches(fused);
    AdamW optimizer(block.parameters(), {1e-3});
    const Tensor x = randn({512, 64}, DType::Float32, &gen);
    auto step = [&] {
      optimizer.zero_grad();
      backward(mean(block(x, {x}).output));
      optimizer.step();
    };
    for (int i = 0; i < 3; ++i) step();
    CachingAllocator& cpu = CachingAllocator::of(Device::cpu());
    const size_t before = cpu.stats().system_allocations;
    for (int i = 0; i < 20; ++i) step();
    EXPECT_EQ(cpu.stats().system_allocations, before);
  }
}

}  // namespace
}  // namespace fuselab

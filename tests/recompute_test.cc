// Activation recompute as a joint fusion (ops/fused/recompute.h): each scope fires where it should,
// gives the un-recomputed grads exactly (float64, one thread: the same basic ops in the same order),
// passes check_fusion, and lowers the allocator's peak by the activations it does not keep.
#include <gtest/gtest.h>

#include <memory>

#include "autograd/functional.h"
#include "fuser/fusion_check.h"
#include "fuser/registry.h"
#include "fuser/sequential.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/dropout.h"
#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "ops/fused/recompute.h"
#include "runtime/runtime.h"
#include "tensor/allocator.h"
#include "tests/expect_error.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::random_tensor;

constexpr int64_t kWidth = 32, kHidden = 96, kLayers = 3;

// Pre-norm residual SwiGLU MLP blocks, the same weights for the same seed.
std::vector<std::shared_ptr<BasicOp>> mlp_blocks(uint64_t seed, DType dtype) {
  Generator gen(seed);
  std::vector<std::shared_ptr<BasicOp>> ops;
  for (int64_t l = 0; l < kLayers; ++l) {
    for (std::shared_ptr<BasicOp> op : std::vector<std::shared_ptr<BasicOp>>{
             std::make_shared<MakeExtraOutput>(), std::make_shared<RMSNorm>(kWidth),
             std::make_shared<Linear>(kWidth, 2 * kHidden, &gen), std::make_shared<SwiGLU>(),
             std::make_shared<Linear>(kHidden, kWidth, &gen), std::make_shared<AddExtraInput>()}) {
      op->to(dtype);
      ops.push_back(op);
    }
  }
  return ops;
}

// Binds each block's AddExtraInput to its MakeExtraOutput, as the examples' blocks do.
Sequential residual_model(uint64_t seed, DType dtype) {
  std::vector<std::shared_ptr<BasicOp>> ops = mlp_blocks(seed, dtype);
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string channel = "residual" + std::to_string(l);
    ops[size_t(6 * l)]->set_extra_output_channel(0, channel, /*to_caller=*/false);
    ops[size_t(6 * l + 5)]->set_extra_input_channel(0, channel);
  }
  return Sequential(ops);
}

struct Step {
  std::vector<double> output;
  std::vector<std::vector<double>> grads;
};

Step train_step(Sequential& seq, const Tensor& x) {
  const Tensor y = seq(x);
  backward(sum(mul(y, y)));
  Step step{y.to(DType::Float64).to_vector<double>(), {}};
  for (Tensor& p : seq.parameters()) step.grads.push_back(p.grad().to(DType::Float64).to_vector<double>());
  return step;
}

TEST(Recompute, ScopesTakeTheRunsTheySay) {
  for (auto [scope, expected] : {std::pair{RecomputeScope::MLP, "Recompute(rmsnorm0, linear0, swiglu0, linear1)"},
                                 std::pair{RecomputeScope::Norms, "Recompute(rmsnorm0, linear0)"},
                                 std::pair{RecomputeScope::Block, "Recompute(rmsnorm0, linear0, swiglu0, linear1)"}}) {
    const FusionDefinition fusion = recompute_fusion(scope);
    ScopedFusion registered(register_forward_backward_fusion(fusion.name, fusion.fn));
    Sequential seq = residual_model(1, DType::Float64);
    const std::string lists = seq.describe();
    EXPECT_NE(lists.find(expected), std::string::npos) << fusion.name << "\n" << lists;
  }
}

TEST(Recompute, ADropoutIsNeverRecomputed) {
  const FusionDefinition fusion = recompute_fusion(RecomputeScope::Block);
  ScopedFusion registered(register_forward_backward_fusion(fusion.name, fusion.fn));
  Sequential seq({std::make_shared<Linear>(4, 4), std::make_shared<Dropout>(0.5, 1), std::make_shared<Linear>(4, 4)});
  EXPECT_EQ(seq.describe().find("Recompute("), std::string::npos) << seq.describe();
  EXPECT_THROW(parse_recompute_scope("blocks"), Error);
}

// The grads of the recomputed model are the unfused model's, bit for bit, in float64 on one thread
// (the recomputed runs are the same basic ops in the same order; no other fusion runs in either).
TEST(Recompute, GradsAreTheUnrecomputedOnesExactly) {
  const int threads = num_threads();
  set_num_threads(1);
  const Tensor x = random_tensor({2, 9, kWidth}, DType::Float64, 5);
  for (RecomputeScope scope : {RecomputeScope::MLP, RecomputeScope::Norms, RecomputeScope::Block}) {
    Sequential plain = residual_model(3, DType::Float64);
    plain.set_fusion_switches(false);
    const Step want = train_step(plain, x);
    const FusionDefinition fusion = recompute_fusion(scope);
    ScopedFusion registered(register_forward_backward_fusion(fusion.name, fusion.fn));
    Sequential recomputed = residual_model(3, DType::Float64);
    recomputed.set_fusion_switches(FusionSwitches::only({fusion.name}));
    ASSERT_NE(recomputed.describe().find("Recompute("), std::string::npos) << fusion.name;
    const Step got = train_step(recomputed, x);
    EXPECT_EQ(got.output, want.output) << fusion.name;
    EXPECT_EQ(got.grads, want.grads) << fusion.name;
  }
  set_num_threads(threads);
}

TEST(Recompute, MatchesUnfusedByCheckFusion) {
  for (RecomputeScope scope : {RecomputeScope::MLP, RecomputeScope::Norms, RecomputeScope::Block}) {
    const FusionDefinition fusion = recompute_fusion(scope);
    ScopedFusion registered(register_forward_backward_fusion(fusion.name, fusion.fn));
    for (DType dtype : {DType::Float64, DType::Float32}) {
      Generator gen(7);
      FusionExample e = fusion.example(13, 16, dtype, gen);
      Sequential seq(e.ops);
      testing::expect_fusion_equivalent(fusion.name, seq, e.input, e.extra_inputs);
    }
  }
}

// Between forward and backward the plain model holds each block's norm input and rstd, the first
// Linear's input [T, C], the SwiGLU input [T, 2H] and the second Linear's input [T, H]; the
// recomputed one holds the norm input alone. The allocator's peak over a training step drops by
// the rest, less the one block's activations that backward rebuilds at a time.
TEST(Recompute, LowersThePeakByTheActivationsItDoesNotKeep) {
  const int64_t tokens = 512;
  const Tensor x = random_tensor({tokens, kWidth}, DType::Float32, 9);
  auto peak_of_step = [&](Sequential& seq) {
    CachingAllocator& allocator = CachingAllocator::of(Device::cpu());
    allocator.empty_cache();
    const size_t before = allocator.stats().bytes_in_use;
    allocator.reset_peak();
    train_step(seq, x);
    return allocator.stats().peak_bytes_in_use - before;
  };
  Sequential plain = residual_model(4, DType::Float32);
  plain.set_fusion_switches(false);
  peak_of_step(plain);  // grads exist from here on in both runs
  const size_t plain_peak = peak_of_step(plain);
  const FusionDefinition fusion = recompute_fusion(RecomputeScope::MLP);
  ScopedFusion registered(register_forward_backward_fusion(fusion.name, fusion.fn));
  Sequential recomputed = residual_model(4, DType::Float32);
  recomputed.set_fusion_switches(FusionSwitches::only({fusion.name}));
  peak_of_step(recomputed);
  const size_t recomputed_peak = peak_of_step(recomputed);
  const size_t per_block_kept = size_t(tokens) * (kWidth + 2 * kHidden + kHidden) * sizeof(float);
  EXPECT_LT(recomputed_peak + (kLayers - 1) * per_block_kept, plain_peak + per_block_kept / 2)
      << "plain " << plain_peak << " B, recomputed " << recomputed_peak << " B";
}

}  // namespace
}  // namespace fuselab

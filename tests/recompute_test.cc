// Activation recompute as a joint fusion (ops/fused/recompute.h): each scope fires where it should,
// gives the un-recomputed grads exactly (float64, one thread: the same ops in the same order), also
// over branches holding FlashAttention and an MoE layer's channels and extra outputs, passes
// check_fusion, and lowers the allocator's peak by the activations it does not keep.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <utility>

#include "autograd/functional.h"
#include "fuser/fusion_check.h"
#include "fuser/registry.h"
#include "fuser/sequential.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/attention.h"
#include "ops/basic/dropout.h"
#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/moe_mlp.h"
#include "ops/basic/rmsnorm.h"
#include "ops/basic/rotary_embedding.h"
#include "ops/fused/flash_attention.h"
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

using Ops = std::vector<std::shared_ptr<BasicOp>>;

// `branch` between a MakeExtraOutput and the AddExtraInput that reads it on `channel`.
Ops residual(const std::string& channel, Ops branch) {
  auto opens = std::make_shared<MakeExtraOutput>();
  auto closes = std::make_shared<AddExtraInput>();
  opens->set_extra_output_channel(0, channel, /*to_caller=*/false);
  closes->set_extra_input_channel(0, channel);
  branch.insert(branch.begin(), opens);
  branch.push_back(closes);
  return branch;
}

// Llama blocks: a rotary grouped-query attention branch (4 heads over 2, which FlashAttention
// takes), then a SwiGLU MLP branch or, with `experts`, a top-2 MoE branch whose router's losses go
// to the caller.
Sequential llama_model(uint64_t seed, DType dtype, double dropout, int64_t experts = 0) {
  Generator gen(seed);
  const AttentionHeads heads{4, 2};
  Ops ops;
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string n = std::to_string(l);
    Ops attention{std::make_shared<RMSNorm>(kWidth), std::make_shared<Linear>(kWidth, 2 * kWidth, &gen),
                  std::make_shared<RotaryEmbedding>(heads)};
    for (const auto& op : attention_ops(heads, /*causal=*/true, dropout, gen.next_u64(), "qkv" + n)) {
      attention.push_back(op);
    }
    attention.push_back(std::make_shared<Linear>(kWidth, kWidth, &gen));
    Ops mlp{std::make_shared<RMSNorm>(kWidth)};
    if (experts > 0) {
      const MoEMlp moe = moe_mlp({kWidth, kHidden, experts, 2, RouterScore::Softmax, /*losses=*/true}, "moe" + n, gen);
      mlp.insert(mlp.end(), moe.ops.begin(), moe.ops.end());
    } else {
      mlp.insert(mlp.end(), {std::make_shared<Linear>(kWidth, 2 * kHidden, &gen), std::make_shared<SwiGLU>(),
                             std::make_shared<Linear>(kHidden, kWidth, &gen)});
    }
    for (const Ops& branch : {residual("attention" + n, attention), residual("mlp" + n, mlp)}) {
      ops.insert(ops.end(), branch.begin(), branch.end());
    }
  }
  for (const auto& op : ops) op->to(dtype);
  return Sequential(ops);
}

struct Step {
  std::vector<double> output;
  std::vector<std::vector<double>> grads;
  std::string lists;  // seq.describe()
};

// sum(y^2) plus every scalar extra output (an MoE router's losses), backward, through `times`
// backward calls of one graph.
Step train_step(Sequential& seq, const Tensor& x, int times = 1) {
  const SequentialOutput out = seq(x, {});
  Tensor loss = sum(mul(out.output, out.output));
  for (const Tensor& extra : out.extra_outputs) loss = add(loss, extra);
  for (int t = 0; t < times; ++t) backward(loss, Tensor(), BackwardOptions{/*retain_graph=*/t + 1 < times, {}});
  Step step{out.output.to(DType::Float64).to_vector<double>(), {}, seq.describe()};
  for (Tensor& p : seq.parameters()) {
    step.grads.push_back(p.grad().defined() ? p.grad().to(DType::Float64).to_vector<double>() : std::vector<double>{});
  }
  return step;
}

// `measure` of a model with `fusions` on, then of a fresh one with the scope's Recompute too.
template <class Measure>
auto without_and_with(RecomputeScope scope, const std::function<Sequential()>& model,
                      const std::vector<std::string>& fusions, Measure measure) {
  Sequential plain = model();
  plain.set_fusion_switches(FusionSwitches::only(fusions));
  const auto without = measure(plain);
  const FusionDefinition fusion = recompute_fusion(scope);
  ScopedFusion registered(register_forward_backward_fusion(fusion.name, fusion.fn));
  Sequential recomputed = model();
  std::vector<std::string> with_recompute = fusions;
  with_recompute.push_back(fusion.name);
  recomputed.set_fusion_switches(FusionSwitches::only(with_recompute));
  return std::pair{without, measure(recomputed)};
}

// The outputs and grads with `fusions` on, against those with the scope's Recompute too, bit for bit.
void expect_same_step(RecomputeScope scope, const std::function<Sequential()>& model, const Tensor& x,
                      const std::vector<std::string>& fusions, const std::string& expected, int times = 1) {
  const auto [want, got] = without_and_with(scope, model, fusions, [&](Sequential& seq) { return train_step(seq, x, times); });
  ASSERT_NE(got.lists.find(expected), std::string::npos) << got.lists;
  EXPECT_EQ(got.output, want.output) << got.lists;
  EXPECT_EQ(got.grads, want.grads) << got.lists;
}

TEST(Recompute, ScopesTakeTheRunsTheySay) {
  for (auto [scope, expected] : {std::pair{RecomputeScope::MLP, "Recompute(rmsnorm0, linear0, swiglu0, linear1)"},
                                 std::pair{RecomputeScope::Norms, "Recompute(rmsnorm0, linear0)"},
                                 std::pair{RecomputeScope::Block,
                                           "Recompute(makeextraoutput0, rmsnorm0, linear0, swiglu0, linear1, addextrainput0)"}}) {
    const FusionDefinition fusion = recompute_fusion(scope);
    ScopedFusion registered(register_forward_backward_fusion(fusion.name, fusion.fn));
    Sequential seq = residual_model(1, DType::Float64);
    const std::string lists = seq.describe();
    EXPECT_NE(lists.find(expected), std::string::npos) << fusion.name << "\n" << lists;
  }
}

TEST(Recompute, ADropoutThatDropsIsNeverRecomputed) {
  const FusionDefinition fusion = recompute_fusion(RecomputeScope::Block);
  ScopedFusion registered(register_forward_backward_fusion(fusion.name, fusion.fn));
  Sequential seq = llama_model(1, DType::Float32, /*dropout=*/0.1);
  const std::string lists = seq.describe();
  EXPECT_EQ(lists.find("Recompute(makeextraoutput0, rmsnorm0"), std::string::npos) << lists;  // attention drops
  EXPECT_NE(lists.find("Recompute(makeextraoutput1, rmsnorm1, linear2"), std::string::npos) << lists;  // the MLP
  EXPECT_THROW(parse_recompute_scope("blocks"), Error);
}

// The grads of the recomputed model are the un-recomputed model's, bit for bit, in float64 on one
// thread (the recomputed runs are the same ops in the same order).
TEST(Recompute, GradsAreTheUnrecomputedOnesExactly) {
  const int threads = num_threads();
  set_num_threads(1);
  const Tensor x = random_tensor({2, 9, kWidth}, DType::Float64, 5);
  for (RecomputeScope scope : {RecomputeScope::MLP, RecomputeScope::Norms, RecomputeScope::Block}) {
    expect_same_step(scope, [] { return residual_model(3, DType::Float64); }, x, {}, "Recompute(");
  }
  set_num_threads(threads);
}

// A run whose first ops need no backward (a frozen norm over an input that needs no grad) stops its
// backward there, as the Sequential's own does; the other grads are the same.
TEST(Recompute, AFrozenStartIsLeftOutOfTheBackward) {
  const int threads = num_threads();
  set_num_threads(1);
  const Tensor x = random_tensor({2, 9, kWidth}, DType::Float64, 7);
  auto frozen_model = [] {
    Sequential seq = residual_model(3, DType::Float64);
    seq.parameters()[0].set_requires_grad(false);  // the first block's RMSNorm
    return seq;
  };
  for (RecomputeScope scope : {RecomputeScope::MLP, RecomputeScope::Norms, RecomputeScope::Block}) {
    expect_same_step(scope, frozen_model, x, {}, "Recompute(");
  }
  set_num_threads(threads);
}

// A whole llama block is recomputed branch by branch, FlashAttention (with its rotary and GQA) as
// FlashAttention; the MoE branch wires its router's channels itself and passes its losses on.
TEST(Recompute, BranchesWithAttentionAndExpertsGiveTheSameGrads) {
  const int threads = num_threads();
  set_num_threads(1);
  const Tensor x = random_tensor({2, 9, kWidth}, DType::Float64, 6);
  expect_same_step(RecomputeScope::Block, [] { return llama_model(4, DType::Float64, 0); }, x, {"FlashAttention"},
                   "Recompute(makeextraoutput0, rmsnorm0, linear0, FlashAttention(rotaryembedding0");
  expect_same_step(RecomputeScope::Block, [] { return llama_model(4, DType::Float64, 0, /*experts=*/4); }, x,
                   {"FlashAttention"}, "Recompute(makeextraoutput1, rmsnorm1, router0, moepermute0");
  // A second backward through a retained graph runs the recompute again and adds the same grads.
  expect_same_step(RecomputeScope::Block, [] { return llama_model(4, DType::Float64, 0); }, x, {"FlashAttention"},
                   "Recompute(", /*times=*/2);
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

// The peaks of a training step with `fusions` on, without and then with the scope's fusion.
std::pair<size_t, size_t> peaks(RecomputeScope scope, const std::function<Sequential()>& model, const Tensor& x,
                                const std::vector<std::string>& fusions) {
  return without_and_with(scope, model, fusions, [&](Sequential& seq) {
    CachingAllocator& allocator = CachingAllocator::of(Device::cpu());
    train_step(seq, x);  // grads exist from here on
    allocator.empty_cache();
    const size_t before = allocator.stats().bytes_in_use;
    allocator.reset_peak();
    train_step(seq, x);
    return allocator.stats().peak_bytes_in_use - before;
  });
}

// Between forward and backward the plain model holds each block's norm input and rstd, the first
// Linear's input [T, C], the SwiGLU input [T, 2H] and the second Linear's input [T, H]; the
// recomputed one holds the norm input alone. The allocator's peak over a training step drops by
// the rest, less the one block's activations that backward rebuilds at a time.
TEST(Recompute, LowersThePeakByTheActivationsItDoesNotKeep) {
  const int64_t tokens = 512;
  const Tensor x = random_tensor({tokens, kWidth}, DType::Float32, 9);
  const auto [plain, recomputed] = peaks(RecomputeScope::MLP, [] { return residual_model(4, DType::Float32); }, x, {});
  const size_t per_block_kept = size_t(tokens) * (kWidth + 2 * kHidden + kHidden) * sizeof(float);
  EXPECT_LT(recomputed + (kLayers - 1) * per_block_kept, plain + per_block_kept / 2)
      << "plain " << plain << " B, recomputed " << recomputed << " B";
}

// A llama block keeps, besides its two branches' inputs: the attention branch's normed input [T, C],
// FlashAttention's qkv [T, 2C] and output [T, C] (the projection's input too), the MLP branch's
// normed input [T, C], SwiGLU's input [T, 2H] and the down projection's input [T, H]. With
// RecomputeBlock only the branches' inputs stay.
TEST(Recompute, BlockKeepsOnlyTheResidualStream) {
  const int64_t batch = 4, tokens = 128;
  const Tensor x = random_tensor({batch, tokens, kWidth}, DType::Float32, 10);
  const auto [plain, recomputed] = peaks(RecomputeScope::Block, [] { return llama_model(5, DType::Float32, 0); }, x,
                                         {"FlashAttention"});
  const size_t per_block_kept = size_t(batch * tokens) * (5 * kWidth + 3 * kHidden) * sizeof(float);
  EXPECT_LT(recomputed + (kLayers - 1) * per_block_kept, plain + per_block_kept / 2)
      << "plain " << plain << " B, recomputed " << recomputed << " B";
}

}  // namespace
}  // namespace fuselab

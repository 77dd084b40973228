// Sequential as a container (insert, pop, extend, indexing, slicing, iteration, named entries;
// every change rebuilds the fused lists), Modules that split the list into groups fusing on
// their own, per-call op arguments (a Dropout seed, reaching FlashAttention too), and channel
// bindings that lock once a fuser has read them.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/attention.h"
#include "ops/basic/bias.h"
#include "ops/basic/constant_scale.h"
#include "ops/basic/dropout.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tests/expect_error.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::expect_error;
using testing::random_tensor;

std::vector<std::string> names(const Sequential& seq) {
  std::vector<std::string> out;
  for (const auto& entry : seq) out.push_back(entry.name());
  return out;
}

std::shared_ptr<Module> function_module(const std::string& type, Module::Forward forward) {
  return std::make_shared<Module>(type, std::move(forward));
}

// run_with_backward with per-call op arguments: the outputs, then the input's and every
// parameter's grad of projected_loss.
RunResult run_with_args(Sequential& seq, const Tensor& x, const std::vector<OpCallArgs>& op_args) {
  Tensor input = x.clone();
  input.set_requires_grad(true);
  seq.zero_grad();
  const SequentialOutput out = seq(input, {}, op_args);
  backward(projected_loss({out.output}, 99));
  RunResult result{{out.output}, {input.grad()}, {}};
  for (const Tensor& p : seq.parameters()) result.param_grads.push_back(p.grad());
  return result;
}

TEST(SequentialContainer, InsertPopExtendIndexAndIterate) {
  auto two = std::make_shared<ConstantScale>(2), three = std::make_shared<ConstantScale>(3);
  auto five = std::make_shared<ConstantScale>(5);
  Sequential seq({two, three});
  seq.insert(1, five);
  EXPECT_EQ(seq.size(), 3u);
  EXPECT_EQ(seq[1].op, five);
  EXPECT_EQ(seq[-1].op, three);
  EXPECT_EQ(names(seq), (std::vector<std::string>{"constantscale0", "constantscale2", "constantscale1"}));
  EXPECT_EQ(seq(ones({2})).to_vector<float>(), (std::vector<float>{30, 30}));

  EXPECT_EQ(seq.pop().op, three);
  EXPECT_EQ(seq.pop(0).op, two);
  EXPECT_EQ(seq.size(), 1u);
  seq.extend({three}).extend(Sequential({two}));
  EXPECT_EQ(names(seq), (std::vector<std::string>{"constantscale2", "constantscale1", "constantscale0"}));
  // A freed name is reused, and a new one never collides with a name still in use.
  seq.pop(0);
  seq.append(std::make_shared<ConstantScale>(7));
  EXPECT_EQ(seq[-1].name(), "constantscale2");

  expect_error([&] { (void)seq[3]; }, {"index 3", "out of range", "3 entries"});
  expect_error([&] { (void)seq[-4]; }, {"index -4", "out of range"});
  expect_error([&] { seq.insert(5, std::make_shared<ConstantScale>(1)); }, {"insert", "index 5", "out of range"});
  expect_error([&] { seq.append(two); }, {"ConstantScale(constantscale0)", "already in it"});
  Sequential empty;
  expect_error([&] { empty.pop(); }, {"pop", "index -1", "0 entries"});
}

TEST(SequentialContainer, SliceSharesOpsAndParameters) {
  Generator gen(3);
  auto linear = std::make_shared<Linear>(3, 4, &gen);
  auto bias = std::make_shared<Bias>(4);
  Sequential seq({linear, bias, std::make_shared<GELU>()});
  Sequential head = seq.slice(0, -1);
  ASSERT_EQ(head.size(), 2u);
  EXPECT_EQ(head[0].op, linear);
  EXPECT_EQ(head[1].op, bias);
  EXPECT_EQ(head.named_parameters().count("linear0.weight"), 1u);
  // The same parameter tensors: an update through the slice is seen by the whole.
  const Tensor x = random_tensor({2, 3}, DType::Float32, 1);
  const std::vector<float> before = seq(x).to_vector<float>();
  head.parameters()[1].set_data(ones({4}));
  EXPECT_NE(seq(x).to_vector<float>(), before);
  EXPECT_EQ(seq.slice(1, 1).size(), 0u);
  expect_error([&] { seq.slice(2, 1); }, {"slice", "begin 2", "end 1"});
  expect_error([&] { seq.slice(0, 4); }, {"slice", "index 4", "out of range for 3 entries"});
}

TEST(SequentialContainer, NamedEntriesNameParametersAndRejectDuplicates) {
  Generator gen(3);
  auto nested = std::make_shared<Sequential>(std::vector<std::shared_ptr<BasicOp>>{std::make_shared<Linear>(4, 4, &gen)});
  Sequential seq({{"fc", std::make_shared<Linear>(3, 4, &gen)}, {"block", nested}});
  EXPECT_EQ(names(seq), (std::vector<std::string>{"fc", "block"}));
  std::vector<std::string> keys;
  for (const auto& [key, p] : seq.named_parameters()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"block.linear0.weight", "fc.weight"}));
  EXPECT_EQ(seq.parameters().size(), 2u);
  seq.eval();
  EXPECT_FALSE(nested->training());
  // A callable's own parameters, under its name.
  const Tensor gain = ones({4});
  auto gain_module =
      std::make_shared<Module>("Gain", [gain](const Tensor& x) { return mul(x, gain); }, NamedTensors{{"weight", gain}});
  seq.append(gain_module);
  EXPECT_EQ(seq.named_parameters().count("gain0.weight"), 1u);
  seq.to(DType::Float64);
  EXPECT_EQ(gain.dtype(), DType::Float64);
  expect_error([&] { Sequential({{"a", std::make_shared<GELU>()}, {"a", std::make_shared<GELU>()}}); },
               {"name 'a'", "GELU(a)", "taken"});
  // A Sequential in itself, directly or through another: calling it would never end.
  auto outer = std::make_shared<Sequential>(std::vector<std::shared_ptr<BasicOp>>{std::make_shared<GELU>()});
  auto inner = std::make_shared<Sequential>(std::vector<std::shared_ptr<BasicOp>>{std::make_shared<GELU>()});
  outer->append(inner);
  expect_error([&] { outer->append(outer); }, {"Sequential::insert", "cannot hold itself"});
  expect_error([&] { inner->append(outer); }, {"Sequential::insert", "cannot hold itself", "through the Sequentials"});
}

// Every change drops the cached fused lists: the next describe() and call see the new list, and
// give what an unfused Sequential of the same ops gives.
TEST(SequentialContainer, ChangesRebuildTheFusedLists) {
  Generator gen(5);
  auto linear = std::make_shared<Linear>(3, 4, &gen);
  auto bias = std::make_shared<Bias>(4);
  auto gelu = std::make_shared<GELU>();
  Sequential seq({linear, bias, gelu});
  seq.to(DType::Float64);
  const Tensor x = random_tensor({5, 3}, DType::Float64, 2);
  EXPECT_NE(seq.describe().find("ForwardLinearBiasActivation(linear0, bias0, gelu0)"), std::string::npos);
  run_with_backward(seq, x, {});

  auto expect_matches_unfused_copy = [&] {
    Sequential reference(seq.ops());
    reference.set_fusion_switches(false);
    testing::expect_runs_match(run_with_backward(seq, x, {}), run_with_backward(reference, x, {}), 1e-10, 1e-12);
  };
  EXPECT_EQ(seq.pop().op, gelu);
  EXPECT_EQ(seq.describe().find("gelu0"), std::string::npos) << seq.describe();
  expect_matches_unfused_copy();

  seq.insert(1, gelu);  // linear, gelu, bias: nothing to fuse with the activation
  EXPECT_EQ(seq.describe(), "forward: [Linear(linear0), GELU(gelu0), Bias(bias0)]\n"
                            "backward: [Linear(linear0), GELU(gelu0), Bias(bias0)]");
  expect_matches_unfused_copy();
}

// As TransformerEngine's test_module_groups: [te, te, nn, nn, te, nn, te, te, te], te a basic op
// and nn a Module, gives six groups, fused separately.
TEST(SequentialModuleGroups, ModulesSplitTheListIntoGroupsThatFuseSeparately) {
  Generator gen(7);
  auto nested = std::make_shared<Sequential>(std::vector<std::shared_ptr<BasicOp>>{std::make_shared<Linear>(8, 8, &gen)});
  Sequential seq({std::make_shared<Linear>(4, 8, &gen), std::make_shared<Bias>(8),
                  function_module("ReLU", [](const Tensor& x) { return relu(x); }), nested, std::make_shared<GELU>(),
                  function_module("Half", [](const Tensor& x) { return scale(x, 0.5); }),
                  std::make_shared<Linear>(8, 4, &gen), std::make_shared<Bias>(4), std::make_shared<GELU>()});
  seq.to(DType::Float64);
  for (Tensor p : seq.parameters()) p.set_data(random_tensor(p.shape(), DType::Float64, gen.next_u64()));
  EXPECT_EQ(seq.num_groups(), 6u);
  // Without the Modules, gelu0 would join linear0 and bias0 (forward) and bias0 (backward).
  EXPECT_EQ(seq.describe(),
            "forward: [ForwardLinearBiasActivation(linear0, bias0), ReLU(relu0), Sequential(sequential0), GELU(gelu0), "
            "Half(half0), ForwardLinearBiasActivation(linear1, bias1, gelu1)]\n"
            "backward: [Linear(linear0), Bias(bias0), ReLU(relu0), Sequential(sequential0), GELU(gelu0), Half(half0), "
            "Linear(linear1), BackwardActivationBias(bias1, gelu1)]");
  Sequential without_modules({std::make_shared<Linear>(4, 8), std::make_shared<Bias>(8), std::make_shared<GELU>()});
  EXPECT_NE(without_modules.describe().find("ForwardLinearBiasActivation(linear0, bias0, gelu0)"), std::string::npos);
  EXPECT_NE(without_modules.describe().find("BackwardActivationBias(bias0, gelu0)"), std::string::npos);

  const Tensor x = random_tensor({5, 4}, DType::Float64, 3);
  const RunResult fused = run_with_backward(seq, x, {});
  // The same computation by hand, through the functional API.
  const std::vector<Tensor> p = seq.parameters();  // W0, b0, W_nested, W1, b1
  for (Tensor q : p) q.zero_grad();
  Tensor input = x.clone();
  input.set_requires_grad(true);
  auto linear = [](const Tensor& h, const Tensor& w) { return matmul(h, transpose(w)); };
  Tensor h = relu(add(linear(input, p[0]), p[1]));
  h = scale(gelu(linear(h, p[2])), 0.5);
  const Tensor y = gelu(add(linear(h, p[3]), p[4]));
  backward(projected_loss({y}, 99));
  RunResult by_hand{{y}, {input.grad()}, {}};
  for (const Tensor& q : p) by_hand.param_grads.push_back(q.grad());
  testing::expect_runs_match(fused, by_hand, 1e-10, 1e-12);

  // Three fusible groups, the nested Sequential, relu and scale: one node each.
  EXPECT_EQ(graph_ops(seq(x)).size(), 6u) << ::testing::PrintToString(graph_ops(seq(x)));
}

TEST(SequentialModuleGroups, ExtraInputsAndOutputsCrossModulesButChannelsDoNot) {
  auto twice = function_module("Twice", [](const Tensor& x) { return scale(x, 2); });
  Sequential seq({std::make_shared<AddExtraInput>(), twice, std::make_shared<MakeExtraOutput>(),
                  std::make_shared<AddExtraInput>()});
  const Tensor x = ones({2}), e0 = full({2}, 3.0), e1 = full({2}, 10.0);
  const SequentialOutput out = seq(x, {e0, e1});
  EXPECT_EQ(out.output.to_vector<float>(), (std::vector<float>{18, 18}));  // 2 (x + e0) + e1
  ASSERT_EQ(out.extra_outputs.size(), 1u);
  EXPECT_EQ(out.extra_outputs[0].to_vector<float>(), (std::vector<float>{8, 8}));
  expect_error([&] { seq(x, {e0}); }, {"expected 2 extra input(s)", "2 fusible group(s)", "got 1"});

  auto branch = std::make_shared<MakeExtraOutput>();
  branch->set_extra_output_channel(0, "skip", /*to_caller=*/false);
  auto add = std::make_shared<AddExtraInput>();
  add->set_extra_input_channel(0, "skip");
  Sequential crossing({branch, twice, add});
  expect_error([&] { crossing(x); }, {"AddExtraInput(addextrainput0)", "channel 'skip'", "MakeExtraOutput",
                                      "Twice(twice0)", "may not cross a Module"});
}

TEST(SequentialCallArgs, DropoutSeedPerCall) {
  auto dropout = std::make_shared<Dropout>(0.5, 1);
  Sequential seq({std::make_shared<ConstantScale>(1), dropout});
  const Tensor x = ones({4, 64});
  auto with_seed = [&](OpCallArgs::Target target, int64_t seed) {
    return seq(x, {}, {{target, {{"seed", seed}}}}).output.to_vector<float>();
  };
  const std::vector<float> seven = with_seed(dropout, 7);
  EXPECT_EQ(with_seed(dropout, 7), seven);
  EXPECT_EQ(with_seed(-1, 7), seven);  // by entry index
  EXPECT_NE(with_seed(dropout, 8), seven);
  // A given seed leaves the op's own generator where it was: the next unseeded call draws the
  // mask an untouched twin draws.
  Sequential twin({std::make_shared<ConstantScale>(1), std::make_shared<Dropout>(0.5, 1)});
  EXPECT_EQ(seq(x).to_vector<float>(), twin(x).to_vector<float>());
}

// FlashAttention covers the Dropout, and applies the mask of the seed given to the Dropout.
TEST(SequentialCallArgs, FusedOpsCoveringTheOpGetItsArguments) {
  auto attention = [] { return Sequential(attention_ops(2, /*causal=*/true, 0.25, 42)); };
  Sequential fused = attention(), unfused = attention();
  fused.to(DType::Float64);
  unfused.to(DType::Float64).set_fusion_switches(false);
  ASSERT_NE(fused.describe().find("FlashAttention"), std::string::npos);
  const Tensor qkv = random_tensor({2, 5, 18}, DType::Float64, 4);
  const RunResult f = run_with_args(fused, qkv, {{2, {{"seed", 11}}}});
  testing::expect_runs_match(f, run_with_args(unfused, qkv, {{2, {{"seed", 11}}}}), 1e-10, 1e-12);
  EXPECT_NE(run_with_args(fused, qkv, {{2, {{"seed", 12}}}}).outputs[0].to_vector<double>(),
            f.outputs[0].to_vector<double>());
}

TEST(SequentialCallArgs, BadTargetsAndArgumentsAreErrors) {
  auto linear = std::make_shared<Linear>(4, 4);
  auto dropout = std::make_shared<Dropout>(0.5);
  Sequential seq({linear, dropout, function_module("ReLU", [](const Tensor& x) { return relu(x); })});
  const Tensor x = ones({2, 4});
  expect_error([&] { seq(x, {}, {{linear, {{"seed", 1}}}}); }, {"Linear(linear0)", "takes no per-call arguments"});
  expect_error([&] { seq(x, {}, {{dropout, {{"p", 0.1}}}}); }, {"Dropout(dropout0)", "argument 'p'", "'seed'"});
  expect_error([&] { seq(x, {}, {{dropout, {{"seed", 0.5}}}}); }, {"Dropout(dropout0)", "'seed' must be an integer"});
  expect_error([&] { seq(x, {}, {{std::make_shared<Dropout>(0.5), {{"seed", 1}}}}); },
               {"not a basic op of this Sequential", "linear0, dropout0, relu0"});
  expect_error([&] { seq(x, {}, {{2, {{"seed", 1}}}}); }, {"entry 2", "ReLU(relu0)", "is a Module"});
  expect_error([&] { seq(x, {}, {{3, {{"seed", 1}}}}); }, {"index 3", "out of range for 3 entries"});
  expect_error([&] { seq(x, {}, {{1, {{"seed", 1}}}, {dropout, {{"seed", 2}}}}); }, {"given twice", "dropout0"});
}

TEST(SequentialChannels, BindingsLockOnceTheFuserIsBuilt) {
  auto branch = std::make_shared<MakeExtraOutput>();
  auto add = std::make_shared<AddExtraInput>();
  branch->set_extra_output_channel(0, "skip", /*to_caller=*/false);
  add->set_extra_input_channel(0, "wrong");
  Sequential seq({branch, std::make_shared<ConstantScale>(2), add});
  add->set_extra_input_channel(0, "skip");  // still free: no fuser has read the bindings yet
  EXPECT_EQ(seq(ones({2})).to_vector<float>(), (std::vector<float>{3, 3}));
  expect_error([&] { add->set_extra_input_channel(0, "other"); },
               {"AddExtraInput(addextrainput0)", "extra input 0", "channel 'other'", "locked"});
  expect_error([&] { branch->set_extra_output_channel(0, "other"); },
               {"MakeExtraOutput(makeextraoutput0)", "extra output 0", "channel 'other'", "locked"});
}

}  // namespace
}  // namespace fuselab

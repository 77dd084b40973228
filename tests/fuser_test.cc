// The OperationFuser contract: rejected rewrites, output-count checks, channels, one tape node per
// call, memory released after backward, switches, and registry thread safety.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "autograd/functional.h"
#include "fuser/fusion_picture.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/bias.h"
#include "ops/basic/constant_scale.h"
#include "ops/basic/identity.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "ops/fuse_window.h"
#include "ops/fused_op.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"
#include "tests/expect_error.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::random_tensor;
using Ops = std::vector<std::shared_ptr<BasicOp>>;

using testing::expect_error;

Sequential three_ops() {
  return Sequential({std::make_shared<ConstantScale>(2), std::make_shared<Identity>(), std::make_shared<ConstantScale>(3)});
}

// A fused op that implements both passes by running its basic ops one after another.
class Chain : public FusedOp {
 public:
  explicit Chain(const OpList& ops, Pass pass = Pass::ForwardBackward)
      : FusedOp("Chain", ops, pass) {}
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x, const TensorLists& extra) override {
    Tensor y = x;
    for (size_t i = 0; i < ctxs.size(); ++i) y = basic_ops()[i]->op_forward(*ctxs[i], y, extra[i]).output;
    return {y, TensorLists(ctxs.size())};
  }
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy, const TensorLists& ge) override {
    Tensor g = dy;
    FusedBackward result{Tensor(), TensorLists(ctxs.size()), TensorLists(ctxs.size())};
    for (size_t i = ctxs.size(); i-- > 0;) {
      OpBackward b = basic_ops()[i]->op_backward(*ctxs[i], g, ge[i]);
      result.grad_params[i] = b.grad_params;
      result.grad_extra_inputs[i] = b.grad_extra_inputs;
      g = b.grad_input;
    }
    result.grad_input = g;
    return result;
  }
};

TEST(FuserValidation, RejectsReorderedDroppedDuplicatedAndNestedOps) {
  struct Bad {
    const char* name;
    FusionFunction fn;
    std::string says;
  };
  const std::vector<Bad> bad = {
      {"reorder", [](OpList ops, const FusionFacts&) { std::swap(ops[0], ops[1]); return ops; }, "same order"},
      {"drop", [](OpList ops, const FusionFacts&) { ops.pop_back(); return ops; }, "same basic ops"},
      {"duplicate", [](OpList ops, const FusionFacts&) { ops.push_back(ops[0]); return ops; }, "same basic ops"},
      {"nest",
       [](OpList ops, const FusionFacts&) {
         auto inner = std::make_shared<Chain>(OpList{ops[0], ops[1]});
         return OpList{std::make_shared<Chain>(OpList{inner, ops[2]})};
       },
       "never nest"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.name);
    ScopedFusion fusion(register_forward_fusion(b.name, b.fn));
    Sequential seq = three_ops();
    expect_error([&] { seq(ones({2})); }, {std::string("fusion function '") + b.name + "'", b.says});
  }
}

TEST(FuserValidation, MismatchMessageShowsBothSequences) {
  ScopedFusion fusion(register_forward_fusion("reorder", [](OpList ops, const FusionFacts&) {
    std::swap(ops[0], ops[2]);
    return ops;
  }));
  Sequential seq = three_ops();
  expect_error([&] { seq.describe(); },
               {"expected [constantscale0, identity0, constantscale1]", "got [constantscale1, identity0, constantscale0]"});
}

TEST(FuserValidation, ForwardOnlyFusedOpInTheBackwardListIsRejected) {
  ScopedFusion fusion(register_backward_fusion("misplaced", [](OpList ops, const FusionFacts&) {
    return OpList{std::make_shared<Chain>(ops, Pass::Forward)};
  }));
  Sequential seq = three_ops();
  expect_error([&] { seq.describe(); }, {"misplaced", "Chain(constantscale0, identity0, constantscale1)",
                                         "does not implement the backward pass"});
}

// A Chain whose backward result `tamper` spoils before the fuser checks it.
using Tamper = std::function<void(FusedBackward&)>;
class TamperedChain : public Chain {
 public:
  TamperedChain(const OpList& ops, Tamper tamper) : Chain(ops), tamper_(std::move(tamper)) {}
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy, const TensorLists& ge) override {
    FusedBackward result = Chain::fuser_backward(ctxs, dy, ge);
    tamper_(result);
    return result;
  }

 private:
  Tamper tamper_;
};

// Registers a backward fusion that covers the whole list with one TamperedChain.
FusionHandle register_tampered_backward_fusion(const std::string& name, Tamper tamper) {
  return register_backward_fusion(name, [tamper](OpList ops, const FusionFacts&) {
    return OpList{std::make_shared<TamperedChain>(ops, tamper)};
  });
}

TEST(FuserValidation, FusedOpsReturningWrongGradCountsAreRejected) {
  auto run = [](Tamper tamper) {
    ScopedFusion fusion(register_tampered_backward_fusion("wrong_counts", tamper));
    Sequential seq({std::make_shared<Linear>(2, 2), std::make_shared<Identity>()});
    Tensor x = ones({1, 2});
    x.set_requires_grad(true);
    backward(sum(seq(x)));
  };
  expect_error([&] { run([](FusedBackward& r) { r.grad_params.pop_back(); }); },
               {"Chain(linear0, identity0)", "(params) and 2 (extra inputs) basic ops, expected 2"});
  expect_error([&] { run([](FusedBackward& r) { r.grad_params[0].clear(); }); },
               {"Chain(linear0, identity0)", "0 param grads for Linear(linear0), expected 1"});
}

TEST(FuserValidation, FusedOpLeavingARequiredParameterGradUndefinedIsRejected) {
  ScopedFusion fusion(
      register_tampered_backward_fusion("no_weight_grad", [](FusedBackward& r) { r.grad_params[0][0] = Tensor(); }));
  Sequential seq({std::make_shared<Linear>(2, 2), std::make_shared<Identity>()});
  Tensor x = ones({1, 2});
  x.set_requires_grad(true);
  expect_error([&] { backward(sum(seq(x))); },
               {"Chain(linear0, identity0)", "no grad for parameter Linear(linear0).weight", "requires one"});
  // A frozen weight needs no grad.
  seq.ops()[0]->parameter(0).set_requires_grad(false);
  backward(sum(seq(x)));
  EXPECT_TRUE(x.grad().defined());
}

TEST(FuserValidation, FusedOpLeavingARequiredExtraInputGradUndefinedIsRejected) {
  ScopedFusion fusion(register_tampered_backward_fusion(
      "no_residual_grad", [](FusedBackward& r) { r.grad_extra_inputs[0][0] = Tensor(); }));
  Sequential seq({std::make_shared<AddExtraInput>(), std::make_shared<Identity>()});
  Tensor x = ones({1, 2}), residual = ones({1, 2});
  x.set_requires_grad(true);
  residual.set_requires_grad(true);
  expect_error([&] { backward(sum(seq(x, {residual}).output)); },
               {"Chain(addextrainput0, identity0)", "no grad for extra input 0 of AddExtraInput(addextrainput0)",
                "the call's extra input 0", "requires one"});
  residual.set_requires_grad(false);  // then nobody needs it
  backward(sum(seq(x, {residual}).output));
  EXPECT_TRUE(x.grad().defined());
}

TEST(FuserValidation, NonFuselabExceptionsFromAFusionFunctionNameTheFusion) {
  Sequential seq = three_ops();
  {
    ScopedFusion fusion(register_forward_fusion("indexes_past_the_end", [](OpList ops, const FusionFacts&) {
      ops.at(100);  // std::out_of_range
      return ops;
    }));
    expect_error([&] { seq(ones({2})); },
                 {"fusion function 'indexes_past_the_end' (forward pass) threw an exception", "100"});
  }
  ScopedFusion fusion(register_backward_fusion("throws_an_int", [](OpList, const FusionFacts&) -> OpList {
    throw 42;
  }));
  expect_error([&] { seq.describe(); }, {"fusion function 'throws_an_int' (backward pass)", "not a std::exception"});
}

TEST(FuserValidation, FusedOpReturningWrongExtraOutputCountIsRejected) {
  class NoExtras : public FusedOp {
   public:
    explicit NoExtras(const OpList& ops) : FusedOp("NoExtras", ops, Pass::Forward) {}
    FusedForward fuser_forward(const std::vector<OpContext*>&, const Tensor& x, const TensorLists&) override {
      return {x, TensorLists(1)};  // MakeExtraOutput owes one extra output
    }
  };
  ScopedFusion fusion(register_forward_fusion("no_extras", [](OpList ops, const FusionFacts&) {
    return OpList{std::make_shared<NoExtras>(ops)};
  }));
  Sequential seq({std::make_shared<MakeExtraOutput>()});
  expect_error([&] { seq(ones({2}), {}); }, {"NoExtras(makeextraoutput0)", "0 extra outputs", "expected 1"});
}

TEST(FuseWindow, AlwaysAdvancesAndNeverRematchesAFusedOp) {
  Ops basic;
  for (int i = 0; i < 6; ++i) basic.push_back(std::make_shared<Identity>());
  OpList ops(basic.begin(), basic.end());
  int windows = 0;
  auto pair_up = [&](const BasicOpWindow& w) -> std::optional<WindowMatch> {
    ++windows;
    if (w.size() < 2) return std::nullopt;
    return WindowMatch{2, std::make_shared<Chain>(first_ops(w, 2))};
  };
  const OpList once = fuse_window(ops, 2, pair_up);
  EXPECT_EQ(once.size(), 3u);
  windows = 0;
  const OpList twice = fuse_window(once, 2, pair_up);
  EXPECT_EQ(twice, once);  // fused ops are never shown to the matcher
  EXPECT_EQ(windows, 0);
  // A matcher that claims to consume nothing is an error, not an endless loop.
  EXPECT_THROW(fuse_window(ops, 2, [](const BasicOpWindow& w) { return std::optional<WindowMatch>({0, std::make_shared<Chain>(first_ops(w, 1))}); }), Error);
}

TEST(Channels, ResidualBlocksLiveInOneSequential) {
  // Two pre-norm residual blocks h = h + Linear(RMSNorm(h)), the residual on a hidden channel.
  const int64_t d = 4;
  Ops ops;
  for (int block = 0; block < 2; ++block) {
    const std::string channel = "residual" + std::to_string(block);
    auto branch = std::make_shared<MakeExtraOutput>();
    branch->set_extra_output_channel(0, channel, /*to_caller=*/false);
    auto add = std::make_shared<AddExtraInput>();
    add->set_extra_input_channel(0, channel);
    for (auto op : Ops{branch, std::make_shared<RMSNorm>(d), std::make_shared<Linear>(d, d), add}) ops.push_back(op);
  }
  Sequential seq(ops);
  seq.to(DType::Float64);
  const Tensor x = random_tensor({5, d}, DType::Float64, 1);
  const auto fused = testing::run_with_backward(seq, x, {});
  ASSERT_EQ(fused.outputs.size(), 1u);  // hidden channels are not returned
  EXPECT_NE(seq.describe().find("BackwardAddNorm(makeextraoutput0, rmsnorm0)"), std::string::npos);

  // Reference: the same ops wired by hand, h = h + linear(norm(h)), one Sequential per op.
  Tensor h = x.clone();
  h.set_requires_grad(true);
  const Tensor input = h;
  seq.zero_grad();
  for (int block = 0; block < 2; ++block) {
    Sequential norm({ops[4 * block + 1]}), linear({ops[4 * block + 2]});
    h = add(h, linear(norm(h)));
  }
  backward(sum(mul(h, random_tensor(h.shape(), h.dtype(), 99))));
  std::vector<Tensor> param_grads;
  for (const Tensor& p : seq.parameters()) param_grads.push_back(p.grad());
  testing::expect_runs_match(fused, testing::RunResult{{h}, {input.grad()}, param_grads}, 1e-12, 1e-12);
}

TEST(Channels, FanOutSumsTheConsumersGrads) {
  // y = x + x + x via one producer and two consumers; the public extra output adds its own grad.
  auto branch = std::make_shared<MakeExtraOutput>();
  branch->set_extra_output_channel(0, "x", /*to_caller=*/true);
  auto add1 = std::make_shared<AddExtraInput>(), add2 = std::make_shared<AddExtraInput>();
  add1->set_extra_input_channel(0, "x");
  add2->set_extra_input_channel(0, "x");
  Sequential seq({branch, add1, add2});
  Tensor x = from_vector<double>({1, 2}, {2});
  x.set_requires_grad(true);
  const SequentialOutput out = seq(x, {});
  ASSERT_EQ(out.extra_outputs.size(), 1u);
  EXPECT_EQ(out.output.to_vector<double>(), (std::vector<double>{3, 6}));
  backward(add(sum(out.output), scale(sum(out.extra_outputs[0]), 10)));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{13, 13}));  // 3 dy + d_route
}

TEST(Channels, BindingErrorsAreClear) {
  auto consumer = [](const std::string& channel) {
    auto op = std::make_shared<AddExtraInput>();
    op->set_extra_input_channel(0, channel);
    return op;
  };
  auto producer = [](const std::string& channel) {
    auto op = std::make_shared<MakeExtraOutput>();
    op->set_extra_output_channel(0, channel);
    return op;
  };
  expect_error([&] { Sequential({consumer("r")})(ones({2}), {}); }, {"channel 'r'", "no op produces"});
  expect_error([&] { Sequential({consumer("r"), producer("r")})(ones({2}), {}); }, {"channel 'r'", "before its producer"});
  expect_error([&] { Sequential({producer("r"), producer("r")})(ones({2}), {}); }, {"channel 'r'", "two producers"});
  expect_error([&] { std::make_shared<AddExtraInput>()->set_extra_input_channel(1, "r"); }, {"no extra input slot 1"});
  expect_error([&] { std::make_shared<AddExtraInput>()->set_extra_input_channel(0, ""); }, {"must not be empty"});
}

TEST(Channels, AMissingExtraInputNamesTheOpItWasFor) {
  Sequential seq({std::make_shared<AddExtraInput>(), std::make_shared<Identity>(), std::make_shared<AddExtraInput>()});
  expect_error([&] { seq(ones({2}), {}); },
               {"expected 2 extra input(s)", "got 0", "extra input 0 is missing", "AddExtraInput(addextrainput0)"});
  expect_error([&] { seq(ones({2}), {ones({2})}); },
               {"expected 2 extra input(s)", "got 1", "extra input 1 is missing", "AddExtraInput(addextrainput1)",
                "(op 2)"});
  expect_error([&] { seq(ones({2}), {ones({2}), ones({2}), ones({2})}); }, {"got 3", "too many"});
}

TEST(FuserExecution, OneTapeNodePerCall) {
  Sequential seq({std::make_shared<Linear>(3, 4), std::make_shared<Bias>(4), std::make_shared<GELU>(),
                  std::make_shared<Linear>(4, 2)});
  const Tensor y = seq(ones({5, 3}));
  EXPECT_EQ(graph_ops(y), (std::vector<std::string>{"Sequential"}));
  EXPECT_EQ(graph_ops(sum(add(y, seq(ones({5, 3}))))),
            (std::vector<std::string>{"sum", "add", "Sequential", "Sequential"}));
}

TEST(FuserExecution, NothingIsHeldAfterBackward) {
  CachingAllocator& cpu = CachingAllocator::of(Device::cpu());
  Sequential seq({std::make_shared<Linear>(64, 256), std::make_shared<Bias>(256), std::make_shared<GELU>(),
                  std::make_shared<Linear>(256, 64), std::make_shared<MakeExtraOutput>(), std::make_shared<RMSNorm>(64)});
  const Tensor x = random_tensor({128, 64}, DType::Float32, 1);
  const size_t baseline = cpu.stats().bytes_in_use;
  {
    SequentialOutput out = seq(x, {});
    backward(add(sum(out.output), sum(out.extra_outputs[0])));
  }
  seq.zero_grad();
  EXPECT_EQ(cpu.stats().bytes_in_use, baseline);
}

// A branch the loss never reads has no grad: the ops take it as zero, fused (BackwardLinearAdd)
// or not, and the result is the grad of the main path alone.
TEST(FuserExecution, AnUnusedExtraOutputContributesNoGrad) {
  for (bool fused : {true, false}) {
    auto linear = std::make_shared<Linear>(5, 3);
    Sequential seq({std::make_shared<MakeExtraOutput>(), linear});
    seq.to(DType::Float64).set_fusion_switches(fused);
    Tensor x = random_tensor({4, 5}, DType::Float64, 2).set_requires_grad(true);
    backward(sum(seq(x, {}).output));
    Tensor expected = x.detach().set_requires_grad(true);
    backward(sum(matmul(expected, transpose(linear->weight().detach()))));
    testing::expect_runs_match({{}, {x.grad()}, {linear->weight().grad()}},
                               {{}, {expected.grad()}, {linear->weight().grad()}}, 1e-12, 1e-12);
  }
}

// retain_graph keeps every op's saved context through the node's backward, so a second backward
// gives the same grads again and they accumulate.
TEST(FuserExecution, RetainGraphRunsTheSequentialBackwardTwice) {
  for (bool fused : {true, false}) {
    Sequential seq({std::make_shared<Linear>(3, 4), std::make_shared<Bias>(4), std::make_shared<GELU>(),
                    std::make_shared<Linear>(4, 2), std::make_shared<Bias>(2)});
    seq.set_fusion_switches(fused);
    const Tensor loss = sum(seq(random_tensor({5, 3}, DType::Float32, 2)));
    backward(loss, Tensor(), BackwardOptions{/*retain_graph=*/true});
    std::vector<std::vector<float>> once;
    for (const Tensor& p : seq.parameters()) once.push_back(p.grad().to_vector<float>());
    backward(loss);
    for (size_t i = 0; i < once.size(); ++i) {
      const std::vector<float> twice = seq.parameters()[i].grad().to_vector<float>();
      for (size_t j = 0; j < twice.size(); ++j) EXPECT_FLOAT_EQ(twice[j], 2 * once[i][j]) << "parameter " << i;
    }
    expect_error([&] { backward(loss); }, {"backward: sum", "freed", "retain_graph"});
  }
}

TEST(FuserExecution, GradsFlowOnlyWhereRequired) {
  Sequential seq({std::make_shared<Linear>(3, 3), std::make_shared<Bias>(3), std::make_shared<ReLU>()});
  seq.parameters()[0].set_requires_grad(false);
  Tensor x = ones({2, 3});
  backward(sum(seq(x)));  // only the bias requires grad
  EXPECT_FALSE(seq.parameters()[0].grad().defined());
  EXPECT_TRUE(seq.parameters()[1].grad().defined());
  EXPECT_FALSE(x.grad().defined());
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(seq(x).requires_grad());
  }
}

// The Sequential node hands each parameter's grad to the tape as soon as its op's backward has
// run: the last layer's parameters are reported ready while the first layer's grads are not
// computed yet (data-parallel training overlaps its reductions with this).
TEST(FuserExecution, ParameterGradsAreReadyAsSoonAsTheirOpHasRun) {
  for (bool fused : {true, false}) {
    Sequential seq({std::make_shared<Linear>(3, 4), std::make_shared<Bias>(4), std::make_shared<GELU>(),
                    std::make_shared<Linear>(4, 2), std::make_shared<Bias>(2)});
    seq.set_fusion_switches(fused);
    const std::vector<Tensor> params = seq.parameters();  // w1, b1, w2, b2
    std::vector<size_t> order;
    std::vector<bool> first_layer_done_when_ready;
    backward(sum(seq(random_tensor({5, 3}, DType::Float32, 2))), Tensor(), [&](const Tensor& leaf) {
      for (size_t p = 0; p < params.size(); ++p) {
        if (leaf.same(params[p])) order.push_back(p);
      }
      first_layer_done_when_ready.push_back(params[0].grad().defined());
      EXPECT_TRUE(leaf.grad().defined());
    });
    EXPECT_EQ(order, (std::vector<size_t>{3, 2, 1, 0})) << "fused " << fused;
    EXPECT_FALSE(first_layer_done_when_ready.front()) << "fused " << fused;
    seq.zero_grad();
  }
}

TEST(FusionSwitches, PerSequentialAndGlobal) {
  Sequential seq({std::make_shared<Linear>(3, 3), std::make_shared<Bias>(3)});
  EXPECT_NE(seq.describe().find("ForwardLinearBiasActivation"), std::string::npos);
  seq.set_fusion_switches(false);
  EXPECT_EQ(seq.describe(), "forward: [Linear(linear0), Bias(bias0)]\nbackward: [Linear(linear0), Bias(bias0)]");
  seq.set_fusion_switches(true);
  {
    const FusionSwitchesScope nothing_fuses(false);
    EXPECT_EQ(seq.describe().find("ForwardLinearBiasActivation"), std::string::npos);
  }
  EXPECT_NE(seq.describe().find("ForwardLinearBiasActivation"), std::string::npos);
}

// The node ids declared in a DOT text (`id [label=<...>]`), its edges' endpoints
// (`a:port:s -> b:port:n`, compass points dropped) and whether its braces outside quoted strings balance; a small reader for the
// text to_dot() writes, one statement a line.
struct DotShape {
  std::map<std::string, std::string> labels;  // node id -> label
  struct End {
    std::string node, port;  // port empty for the whole node
  };
  std::vector<std::pair<End, End>> edges;
  bool braces_balanced = true;
};

DotShape read_dot(const std::string& dot) {
  DotShape shape;
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < dot.size(); ++i) {
    if (quoted && dot[i] == '\\') { ++i; continue; }
    if (dot[i] == '"') quoted = !quoted;
    if (quoted) continue;
    depth += dot[i] == '{' ? 1 : dot[i] == '}' ? -1 : 0;
    if (depth < 0) shape.braces_balanced = false;
  }
  shape.braces_balanced = shape.braces_balanced && depth == 0 && !quoted;
  const std::regex node(R"(^\s*(\w+) \[label=<(.*)>\])"), 
      edge(R"(^\s*(\w+)(?::(\w+))?(?::[nsew])? -> (\w+)(?::(\w+))?(?::[nsew])?)");
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, edge)) shape.edges.push_back({{m[1], m[2]}, {m[3], m[4]}});
    else if (std::regex_search(line, m, node) && m[1] != "node") shape.labels[m[1]] = m[2];
  }
  return shape;
}

TEST(FusionPicture, ToDotDrawsBothListsWithAnEdgePerBasicOp) {
  Sequential seq({std::make_shared<Linear>(4, 8), std::make_shared<Bias>(8), std::make_shared<GELU>(),
                  std::make_shared<Linear>(8, 4), std::make_shared<Bias>(4)});
  const std::string dot = to_dot(seq);
  SCOPED_TRACE(dot);
  EXPECT_EQ(dot.rfind("digraph fusion {", 0), 0u);
  EXPECT_NE(dot.find("subgraph cluster_forward {"), std::string::npos);
  EXPECT_NE(dot.find("subgraph cluster_backward {"), std::string::npos);
  const DotShape shape = read_dot(dot);
  EXPECT_TRUE(shape.braces_balanced);

  // One node per list entry, labelled with its type and the basic ops it covers.
  const auto lists = seq.fused_lists();
  ASSERT_EQ(shape.labels.size(), lists->forward.ops.size() + lists->backward.ops.size());
  EXPECT_EQ(lists->forward.ops[0]->describe(), "ForwardLinearBiasActivation(linear0, bias0, gelu0)");
  const std::string& first = shape.labels.at("f0");
  for (const char* part : {">ForwardLinearBiasActivation<", "port=\"b0\">linear0<", "port=\"b1\">bias0<",
                           "port=\"b2\">gelu0<"})
    EXPECT_NE(first.find(part), std::string::npos) << part;
  for (size_t e = 0; e < lists->backward.ops.size(); ++e) {
    const auto& entry = *lists->backward.ops[e];
    const std::string type = entry.is_fused() ? static_cast<const FusedOp&>(entry).type() : entry.basic_ops()[0]->type();
    EXPECT_NE(shape.labels.at("b" + std::to_string(e)).find(type), std::string::npos) << type;
  }
  EXPECT_NE(dot.find("BackwardActivationBias"), std::string::npos);

  // Every edge joins declared nodes, at ports their labels declare; one dashed edge per basic op
  // goes from forward to backward.
  for (const auto& [from, to] : shape.edges) {
    for (const DotShape::End& end : {from, to}) {
      ASSERT_TRUE(shape.labels.count(end.node)) << end.node;
      if (!end.port.empty()) {
        EXPECT_NE(shape.labels.at(end.node).find("port=\"" + end.port + "\""), std::string::npos) << end.node << ":" << end.port;
      }
    }
  }
  size_t context_edges = 0;
  for (size_t pos = 0; (pos = dot.find("[style=dashed", pos)) != std::string::npos; ++pos) ++context_edges;
  EXPECT_EQ(context_edges, seq.ops().size());

  // With fusion off every entry is a basic op, and the DOT text follows.
  seq.set_fusion_switches(false);
  const DotShape unfused = read_dot(to_dot(seq));
  EXPECT_EQ(unfused.labels.size(), 2 * seq.ops().size());
  EXPECT_NE(unfused.labels.at("b2").find("<td port=\"b2\">gelu0</td></tr><tr><td colspan=\"1\"><b>GELU</b>"),
            std::string::npos);
}

TEST(FusionRegistry, RegistrationFromThreadsWhileSequentialsRun) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> runners;
  std::atomic<int> calls{0};
  for (int t = 0; t < 2; ++t) {
    runners.emplace_back([&, t] {
      Sequential seq({std::make_shared<Linear>(4, 4), std::make_shared<Bias>(4), std::make_shared<GELU>()});
      const Tensor x = random_tensor({3, 4}, DType::Float32, t);
      const auto expected = seq(x).to_vector<float>();
      while (!stop) {
        Tensor leaf = x.clone();
        leaf.set_requires_grad(true);
        const Tensor y = seq(leaf);
        backward(sum(y));
        EXPECT_EQ(y.to_vector<float>(), expected);
        ++calls;
      }
    });
  }
  std::vector<std::thread> registrars;
  for (int t = 0; t < 2; ++t) {
    registrars.emplace_back([t] {
      const std::string forward_name = "noop_forward" + std::to_string(t);
      const std::string backward_name = "noop_backward" + std::to_string(t);  // names are unique over passes
      for (int i = 0; i < 200; ++i) {
        FusionHandle h = register_forward_fusion(forward_name, [](OpList ops, const FusionFacts&) { return ops; }, i % 2);
        FusionHandle g = register_backward_fusion(backward_name, [](OpList ops, const FusionFacts&) { return ops; });
        h.unregister();
        g.unregister();
      }
    });
  }
  for (auto& r : registrars) r.join();
  while (calls.load() < 2) std::this_thread::yield();  // on a loaded machine the registrars can finish first
  stop = true;
  for (auto& r : runners) r.join();
  EXPECT_GT(calls.load(), 0);
}

TEST(FusionRegistry, EmptyAndDuplicateNamesAreRejected) {
  auto noop = [](OpList ops, const FusionFacts&) { return ops; };
  expect_error([&] { register_forward_fusion("", noop); }, {"register fusion", "name is empty"});
  // The built-ins hold their names too, in every pass.
  expect_error([&] { register_backward_fusion("ForwardLinearBiasActivation", noop); },
               {"'ForwardLinearBiasActivation'", "already registered"});
  {
    ScopedFusion first(register_forward_fusion("taken", noop));
    expect_error([&] { register_forward_fusion("taken", noop); }, {"'taken'", "already registered"});
    expect_error([&] { register_forward_backward_fusion("taken", noop, true); }, {"'taken'", "already registered"});
    const auto names = registered_fusion_names();
    EXPECT_EQ(std::count(names.begin(), names.end(), "taken"), 1);
  }
  // Unregistering frees the name: this is how a fusion is replaced.
  FusionHandle again = register_backward_fusion("taken", noop);
  again.unregister();
}

}  // namespace
}  // namespace fuselab

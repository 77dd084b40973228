// A mixture-of-experts layer in one Sequential of basic ops,
//   Router -> MoEPermute -> GroupedLinear -> SwiGLU -> GroupedLinear -> MoEUnpermute,
// the routing passed between them on channels, against a dense reference written here that runs
// every expert on every token and keeps each token's chosen ones by their weights; its grads
// against finite differences; and bad routing named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>

#include "autograd/functional.h"
#include "autograd/gradcheck.h"
#include "fuser/fusion_check.h"
#include "fuser/registry.h"
#include "fuser/sequential.h"
#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/grouped_linear.h"
#include "ops/basic/moe_mlp.h"
#include "ops/basic/moe_permute.h"
#include "ops/basic/router.h"
#include "ops/fused/grouped_mlp.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"

namespace fuselab {
namespace {

using testing::expect_error;

struct MoELayer {
  std::shared_ptr<Router> router;
  std::shared_ptr<GroupedLinear> up, down;
  Sequential seq;
};

// width -> experts' SwiGLU MLPs of `hidden` -> width, top_k of `experts`, float64.
MoELayer moe_layer(int64_t width, int64_t hidden, int64_t experts, int64_t top_k, RouterScore score, uint64_t seed,
                   double capacity_factor = 0) {
  Generator gen(seed);
  const MoEMlp mlp = moe_mlp({width, hidden, experts, top_k, score, false, false, capacity_factor}, "moe", gen);
  MoELayer layer{mlp.router, mlp.up, mlp.down, Sequential(mlp.ops)};
  layer.seq.to(DType::Float64);
  return layer;
}

double silu(double v) { return v / (1 + std::exp(-v)); }

// Every expert on every token; each token keeps its top_k experts' outputs by their weights, but
// for those an expert already full (capacity copies, counted in token order) drops.
std::vector<double> dense_reference(const MoELayer& layer, const Tensor& x, int64_t top_k, RouterScore score,
                                    int64_t capacity) {
  const int64_t tokens = x.size(0), width = x.size(1);
  const int64_t experts = layer.up->groups(), hidden = layer.down->weight().size(2);
  const auto xs = x.to_vector<double>(), wr = layer.router->weight().to_vector<double>();
  const auto w1 = layer.up->weight().to_vector<double>(), w2 = layer.down->weight().to_vector<double>();
  std::vector<double> out(size_t(tokens * width), 0.0);
  std::vector<int64_t> taken(size_t(experts), 0);
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<double> logits(size_t(experts), 0.0), expert_out(size_t(experts * width), 0.0);
    for (int64_t e = 0; e < experts; ++e) {
      for (int64_t c = 0; c < width; ++c) logits[size_t(e)] += xs[size_t(t * width + c)] * wr[size_t(e * width + c)];
      std::vector<double> pre(size_t(2 * hidden), 0.0);
      for (int64_t h = 0; h < 2 * hidden; ++h) {
        for (int64_t c = 0; c < width; ++c) {
          pre[size_t(h)] += xs[size_t(t * width + c)] * w1[size_t((e * 2 * hidden + h) * width + c)];
        }
      }
      for (int64_t c = 0; c < width; ++c) {
        for (int64_t h = 0; h < hidden; ++h) {
          expert_out[size_t(e * width + c)] +=
              silu(pre[size_t(h)]) * pre[size_t(hidden + h)] * w2[size_t((e * width + c) * hidden + h)];
        }
      }
    }
    std::vector<int64_t> order(static_cast<size_t>(experts), 0);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
    double top = 0, all = 0;
    for (int64_t j = 0; j < top_k; ++j) top += std::exp(logits[size_t(order[size_t(j)])]);
    for (int64_t e = 0; e < experts; ++e) all += std::exp(logits[size_t(e)]);
    for (int64_t j = 0; j < top_k; ++j) {
      const double l = logits[size_t(order[size_t(j)])];
      const double weight = score == RouterScore::Softmax      ? std::exp(l) / top
                            : score == RouterScore::SoftmaxAll ? std::exp(l) / all
                                                               : 1 / (1 + std::exp(-l));
      if (taken[size_t(order[size_t(j)])]++ >= capacity) continue;
      for (int64_t c = 0; c < width; ++c) {
        out[size_t(t * width + c)] += weight * expert_out[size_t(order[size_t(j)] * width + c)];
      }
    }
  }
  return out;
}

struct Routing {
  int64_t experts, top_k;
  RouterScore score;
  double capacity_factor = 0;  // 0: dropless
};

class MoE : public ::testing::TestWithParam<Routing> {};

TEST_P(MoE, MatchesTheDenseReference) {
  const Routing r = GetParam();
  MoELayer layer = moe_layer(6, 5, r.experts, r.top_k, r.score, 11, r.capacity_factor);
  const int64_t tokens = 9, copies = tokens * r.top_k;
  const int64_t capacity = r.capacity_factor > 0 ? int64_t(std::ceil(r.capacity_factor * copies / r.experts)) : copies;
  const Tensor x = normal({tokens, 6}, 0, 1, DType::Float64, nullptr);
  const std::vector<double> ours = layer.seq(x).to_vector<double>();
  const std::vector<double> theirs = dense_reference(layer, x, r.top_k, r.score, capacity);
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_NEAR(ours[i], theirs[i], 1e-12) << i;
}

TEST_P(MoE, GradsMatchFiniteDifferences) {
  const Routing r = GetParam();
  MoELayer layer = moe_layer(4, 3, r.experts, r.top_k, r.score, 12, r.capacity_factor);
  Generator gen(13);
  const Tensor x = normal({7, 4}, 0, 1, DType::Float64, &gen);
  const std::vector<Tensor> params = layer.seq.parameters();
  std::vector<Tensor> inputs{x};
  inputs.insert(inputs.end(), params.begin(), params.end());
  // The inputs after x are the parameters, in the order of parameters(): each op's own, in turn.
  const GradCheckResult result = check_gradients(
      [&](const std::vector<Tensor>& in) {
        size_t next = 1;
        for (const auto& op : layer.seq.ops()) {
          for (size_t p = 0; p < op->parameters().size(); ++p) op->parameter(p) = in[next++];
        }
        return layer.seq(in[0]);
      },
      inputs);
  EXPECT_LT(result.max_error, 1e-6) << result.worst;
}

INSTANTIATE_TEST_SUITE_P(Routings, MoE,
                         ::testing::Values(Routing{4, 2, RouterScore::Softmax}, Routing{4, 1, RouterScore::Softmax},
                                           Routing{3, 3, RouterScore::Softmax}, Routing{4, 2, RouterScore::Sigmoid},
                                           Routing{8, 2, RouterScore::Softmax},
                                           Routing{4, 1, RouterScore::SoftmaxAll},
                                           Routing{4, 2, RouterScore::SoftmaxAll},
                                           // capacities of 3 and 2 copies: some experts drop copies
                                           Routing{4, 2, RouterScore::Softmax, 0.6},
                                           Routing{3, 1, RouterScore::Softmax, 0.5}));

// The experts' MLP between a permute and an unpermute whose routing the test chooses: the
// GroupedMlp and RoutedGroupedMlp fusions against the basic ops (outputs and every grad; finite
// differences in float64).
struct ChosenRouting {
  std::string name;
  int64_t experts, top_k;
  std::vector<int64_t> chosen;  // [rows, top_k]
  double capacity_factor = 0;   // 0: dropless
};

// The permute, the experts' MLP of `hidden` and the unpermute in `dtype`, routed as `r` says: each
// fusion against the basic ops, and each as a program registers it to keep the GLU's output. Scaled,
// the GLU is ScaledSwiGLU, each expert row's scale from the test, and the fusions ScaledGroupedMlp's.
void expect_grouped_mlp_matches(const ChosenRouting& r, int64_t hidden, DType dtype, bool scaled = false) {
  const int64_t rows = int64_t(r.chosen.size()) / r.top_k, width = 5;
  const std::vector<FusionDefinition> fusions =
      scaled ? std::vector<FusionDefinition>{scaled_grouped_mlp_fusion(), scaled_grouped_mlp_fusion(false)}
             : std::vector<FusionDefinition>{grouped_mlp_fusion(), routed_grouped_mlp_fusion(),
                                             grouped_mlp_fusion(false), routed_grouped_mlp_fusion(false)};
  std::vector<std::unique_ptr<ScopedFusion>> registered;
  for (const FusionDefinition& fusion : fusions) {
    if (fusion.name.find("KeepingActivation") != std::string::npos) {
      registered.push_back(std::make_unique<ScopedFusion>(register_forward_backward_fusion(fusion.name, fusion.fn)));
    }
  }
  for (const FusionDefinition& fusion : fusions) {
    Generator gen(21);
    MoEMlpConfig config{width, hidden, r.experts, r.top_k};
    config.capacity_factor = r.capacity_factor;
    std::vector<std::shared_ptr<BasicOp>> ops = moe_experts(config, "moe", gen).ops;
    if (scaled) ops[2] = std::make_shared<ScaledSwiGLU>();
    Sequential seq(ops);
    seq.to(dtype);
    const Tensor x = normal({rows, width}, 0, 1, dtype, &gen);
    const Tensor indices = from_vector<int64_t>(r.chosen, {rows, r.top_k});
    std::vector<Tensor> extras{indices, uniform({rows, r.top_k}, 0, 1, dtype, &gen)};
    if (scaled) {
      const int64_t kept = int64_t(MoEPermute(r.experts, r.top_k, r.capacity_factor).order(x, indices).copies.size());
      extras.insert(extras.begin() + 1, uniform({kept}, 0.5, 1.5, dtype, &gen));
    }
    const FusionCheckResult result = check_fusion(fusion.name, seq, x, extras);
    EXPECT_TRUE(result.ok) << fusion.name << ", " << dtype_name(dtype) << ": " << result.problem << "\n" << result.lists;
  }
}

class GroupedMlpFusion : public ::testing::TestWithParam<ChosenRouting> {};

TEST_P(GroupedMlpFusion, MatchesTheBasicOps) {
  for (const DType dtype : {DType::Float64, DType::Float32}) expect_grouped_mlp_matches(GetParam(), 3, dtype);
}

TEST_P(GroupedMlpFusion, ScaledMatchesTheBasicOps) {
  for (const DType dtype : {DType::Float64, DType::Float32}) expect_grouped_mlp_matches(GetParam(), 3, dtype, true);
}

// At hidden 1024 in float32 a chunk is 341 rows: an expert of 700 rows goes in three, its weight
// grads summed over them.
TEST(GroupedMlpFusion, AnExpertOfManyRowsGoesInChunks) {
  for (const bool scaled : {false, true}) {
    expect_grouped_mlp_matches({"chunks", 2, 1, std::vector<int64_t>(700, 1)}, 1024, DType::Float32, scaled);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Routings, GroupedMlpFusion,
    ::testing::Values(ChosenRouting{"all_to_one_expert", 4, 1, {2, 2, 2, 2, 2}},
                      ChosenRouting{"one_token_and_none", 3, 1, {1, 0, 1, 1, 1, 1}},
                      ChosenRouting{"top_k_is_every_expert", 3, 3, {0, 1, 2, 2, 0, 1, 1, 2, 0}},
                      ChosenRouting{"one_row", 4, 2, {3, 1}},
                      // a capacity of 2 copies: expert 0 drops its third and fourth
                      ChosenRouting{"capacity_overflow", 2, 1, {0, 0, 1, 0, 0}, 0.8}),
    [](const ::testing::TestParamInfo<ChosenRouting>& info) { return info.param.name; });

// Between forward and backward the basic ops keep the GLU's input u [copies, 2h] and its output a
// [copies, h], and their backwards make da [copies, h] and du [copies, 2h] for every expert at
// once; GroupedMlp keeps u alone and holds a, da and du for one expert at a time (per thread). The
// allocator's peak over a training step drops by more than a's size. RoutedGroupedMlp keeps
// neither the permuted copy of x nor the experts' outputs ([copies, width] each), only the copies'
// indices (int64 [copies]), and writes no grad of the outputs: it holds less between forward and
// backward, and its peak is lower by at least one of those. Registered to keep the GLU's output, it
// holds that too.
TEST(MoEOps, GroupedMlpLowersThePeak) {
  const FusionDefinition keeping = routed_grouped_mlp_fusion(false);
  const ScopedFusion registered(register_forward_backward_fusion(keeping.name, keeping.fn));
  const int64_t tokens = 1024, width = 16, hidden = 64, experts = 8, top_k = 2;
  Generator gen(3);
  Sequential seq(moe_mlp({width, hidden, experts, top_k}, "moe", gen).ops);
  const Tensor x = normal({tokens, width}, 0, 1, DType::Float32, &gen);
  struct Bytes {
    size_t held, peak;  // after forward, and over a step, beyond what the step began with
  };
  auto measure = [&](const std::vector<std::string>& fusions) {
    seq.set_fusion_switches(FusionSwitches::only(fusions));
    CachingAllocator& allocator = CachingAllocator::of(Device::cpu());
    for (int i = 0; i < 2; ++i) {  // the first step makes the grads
      seq.zero_grad();
      allocator.empty_cache();
      const size_t before = allocator.stats().bytes_in_use;
      allocator.reset_peak();
      const Tensor y = seq(x);
      const size_t held = allocator.stats().bytes_in_use - before;
      backward(sum(mul(y, y)));
      if (i == 1) return Bytes{held, allocator.stats().peak_bytes_in_use - before};
    }
    return Bytes{};
  };
  const Bytes unfused = measure({}), fused = measure({"GroupedMlp"}), routed = measure({"RoutedGroupedMlp"});
  const Bytes routed_keeping = measure({keeping.name});
  const size_t a_bytes = size_t(tokens * top_k * hidden) * sizeof(float);
  const size_t copies_bytes = size_t(tokens * top_k * width) * sizeof(float);  // x's copy, or the outputs
  const size_t indices_bytes = size_t(tokens * top_k) * sizeof(int64_t);
  EXPECT_LT(fused.peak + a_bytes, unfused.peak) << "fused " << fused.peak << " B, unfused " << unfused.peak << " B";
  EXPECT_EQ(routed.held + 2 * copies_bytes, fused.held + indices_bytes)
      << "routed " << routed.held << " B, fused " << fused.held << " B";
  EXPECT_LE(routed.peak + copies_bytes, fused.peak + indices_bytes)
      << "routed " << routed.peak << " B, fused " << fused.peak << " B";
  EXPECT_EQ(routed_keeping.held, routed.held + a_bytes)
      << "keeping a " << routed_keeping.held << " B, recomputing " << routed.held << " B";
}

// With a capacity, each expert keeps its first copies in row order, the counts say how many, and
// the dropped copies' slots are -1.
TEST(MoEOps, ACapacityDropsTheOverflowInRowOrder) {
  Sequential permute({std::make_shared<MoEPermute>(2, 1, /*capacity_factor=*/1.0)});  // capacity 2 of 4 copies
  const Tensor x = from_vector<double>({0, 1, 2, 3}, {4, 1});
  const SequentialOutput out = permute(x, {from_vector<int64_t>({1, 1, 1, 0}, {4, 1})});
  EXPECT_EQ(out.output.to_vector<double>(), (std::vector<double>{3, 0, 1}));
  EXPECT_EQ(out.extra_outputs.at(0).to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(out.extra_outputs.at(1).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, -1, 0}));
  // A factor too large for the capacity to fit in int64 drops nothing.
  Sequential roomy({std::make_shared<MoEPermute>(2, 1, /*capacity_factor=*/1e300)});
  EXPECT_EQ(roomy(x, {from_vector<int64_t>({1, 1, 1, 0}, {4, 1})}).extra_outputs.at(0).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 3}));
  // A factor so small that f rows k / E underflows to 0 still gives each expert one copy.
  Sequential tiny({std::make_shared<MoEPermute>(2, 1, /*capacity_factor=*/5e-324)});
  EXPECT_EQ(tiny(x, {from_vector<int64_t>({1, 1, 1, 0}, {4, 1})}).extra_outputs.at(0).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 1}));
}

// With top-1, Mixtral's weight is always 1: the main loss gives the router no grad (only its
// losses train it). SoftmaxAll's is the chosen expert's probability, so the loss reaches the router.
TEST(MoEOps, TopOneTrainsTheRouterThroughTheLossOnlyWithSoftmaxAll) {
  for (const RouterScore score : {RouterScore::Softmax, RouterScore::SoftmaxAll}) {
    MoELayer layer = moe_layer(4, 3, 4, 1, score, 14);
    const Tensor x = normal({6, 4}, 0, 1, DType::Float64, nullptr);
    backward(sum(layer.seq(x)));
    const std::vector<double> grad = layer.router->weight().grad().to_vector<double>();
    const double largest = std::abs(*std::max_element(grad.begin(), grad.end(), [](double a, double b) {
      return std::abs(a) < std::abs(b);
    }));
    if (score == RouterScore::Softmax) {
      EXPECT_EQ(largest, 0);
    } else {
      EXPECT_GT(largest, 1e-3);
    }
  }
}

// A Router whose weights nothing uses passes x and its grad on, and its weight's grad is zero.
TEST(MoEOps, ARouterWhoseWeightsGoUnusedPassesGradsThrough) {
  Generator gen(5);
  auto router = std::make_shared<Router>(4, 3, 2, RouterScore::Softmax, &gen);
  router->set_extra_output_channel(0, "unused_weights", /*to_caller=*/false);
  router->set_extra_output_channel(1, "unused_experts", false);
  Sequential seq({router});
  Tensor x = normal({5, 4}, 0, 1, DType::Float32, &gen);
  x.set_requires_grad(true);
  backward(sum(seq(x)));
  for (const float g : x.grad().to_vector<float>()) EXPECT_EQ(g, 1.0f);
  for (const float g : router->weight().grad().to_vector<float>()) EXPECT_EQ(g, 0.0f);
}

// The load-balancing loss (E sum_e f_e P_e) and the z-loss (mean lse^2), from the logits by hand.
TEST(MoEOps, RouterLossesAreSwitchsAndTheZLoss) {
  const int64_t rows = 6, width = 3, experts = 4, k = 2;
  Generator gen(8);
  auto router = std::make_shared<Router>(width, experts, k, RouterScore::Softmax, &gen, /*losses=*/true);
  Sequential seq({router});
  seq.to(DType::Float64);
  const Tensor x = normal({rows, width}, 0, 1, DType::Float64, &gen);
  const SequentialOutput out = seq(x, {});
  const std::vector<double> logits = matmul(x, transpose(router->weight().detach())).to_vector<double>();
  const std::vector<int64_t> chosen = out.extra_outputs.at(1).to_vector<int64_t>();
  std::vector<double> share(experts, 0.0), mean_prob(experts, 0.0);
  double z = 0;
  for (const int64_t e : chosen) share[size_t(e)] += 1.0 / (rows * k);
  for (int64_t r = 0; r < rows; ++r) {
    double total = 0;
    for (int64_t e = 0; e < experts; ++e) total += std::exp(logits[size_t(r * experts + e)]);
    for (int64_t e = 0; e < experts; ++e) mean_prob[size_t(e)] += std::exp(logits[size_t(r * experts + e)]) / total / rows;
    z += std::log(total) * std::log(total) / rows;
  }
  double balance = 0;
  for (int64_t e = 0; e < experts; ++e) balance += experts * share[size_t(e)] * mean_prob[size_t(e)];
  EXPECT_NEAR(out.extra_outputs.at(2).item(), balance, 1e-12);
  EXPECT_NEAR(out.extra_outputs.at(3).item(), z, 1e-12);
}

// The top-k lists the chosen experts largest logit first, a tie going to the lower expert.
TEST(MoEOps, RouterPicksTheLargestLogitsFirstAndTiesToTheLowerExpert) {
  for (const RouterScore score : {RouterScore::Softmax, RouterScore::Sigmoid}) {
    auto router = std::make_shared<Router>(1, 5, 4, score);
    router->weight() = from_vector<double>({1, 2, 2, 0, 2}, {5, 1});
    Sequential seq({router});
    const SequentialOutput out = seq(from_vector<double>({1}, {1, 1}), {});
    EXPECT_EQ(out.extra_outputs.at(1).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 4, 0}));
    const std::vector<double> w = out.extra_outputs.at(0).to_vector<double>();
    const double total = 3 + std::exp(-1.0);  // the softmax over the chosen logits 2, 2, 2, 1
    const std::vector<double> expected =
        score == RouterScore::Softmax ? std::vector<double>{1 / total, 1 / total, 1 / total, std::exp(-1.0) / total}
                                      : std::vector<double>{1 / (1 + std::exp(-2.0)), 1 / (1 + std::exp(-2.0)),
                                                            1 / (1 + std::exp(-2.0)), 1 / (1 + std::exp(-1.0))};
    for (size_t j = 0; j < w.size(); ++j) EXPECT_NEAR(w[j], expected[j], 1e-15);
  }
}

// A diverged row (a NaN logit) still routes to k distinct experts in range, NaN first, so nothing
// after the Router indexes outside its experts; its weights are NaN, for the loss to show it.
TEST(MoEOps, ARouterRoutesANaNRowToExpertsInRange) {
  auto router = std::make_shared<Router>(2, 4, 3, RouterScore::Softmax, nullptr, /*losses=*/true);
  router->weight() = from_vector<double>({1, 0, 0, 1, 2, 0, 0, 2}, {4, 2});
  Sequential seq({router});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const SequentialOutput out = seq(from_vector<double>({nan, 1, 1, 1}, {2, 2}), {});
  const std::vector<int64_t> chosen = out.extra_outputs.at(1).to_vector<int64_t>();
  // Row 0's logits are all NaN (NaN times 0 is NaN): experts 0, 1, 2. Row 1's are 1, 1, 2, 2.
  EXPECT_EQ(chosen, (std::vector<int64_t>{0, 1, 2, 2, 3, 0}));
  EXPECT_TRUE(std::isnan(out.extra_outputs.at(0).to_vector<double>()[0]));
}

TEST(MoEOps, BadRoutingIsAnErrorNamingTheOp) {
  expect_error([] { Router(4, 3, 4); }, {"Router", "top_k 4", "[1, 3]"});
  expect_error([] { MoEPermute(3, 0); }, {"MoEPermute", "top_k 0"});
  expect_error([] { MoEPermute(3, 4); }, {"MoEPermute", "top_k 4", "[1, 3]"});
  expect_error([] { MoEPermute(0, 1); }, {"MoEPermute", "experts 0 must be in [1, "});
  expect_error([] { MoEPermute(std::numeric_limits<int64_t>::max(), 1); },
               {"MoEPermute", "experts 9223372036854775807 must be in [1, "});
  Generator gen(4);
  auto router = std::make_shared<Router>(4, 3, 2, RouterScore::Softmax, &gen);
  router->weight() = normal({2, 4}, 0, 1, DType::Float32, &gen);  // 2 experts' rows, not 3
  expect_error([&] { Sequential({router})(normal({2, 4}, 0, 1, DType::Float32, &gen)); },
               {"Router(", "parameter weight has shape [2, 4]", "[3, 4] it was built with"});
  expect_error([] { MoEPermute(3, 2, -0.5); }, {"MoEPermute", "capacity factor -0.5"});
  Sequential permute({std::make_shared<MoEPermute>(3, 2)});
  const Tensor x = normal({2, 4}, 0, 1, DType::Float32, nullptr);
  expect_error([&] { permute(x, {from_vector<int64_t>({0, 1, 2, 3}, {2, 2})}); },
               {"MoEPermute(", "expert index 3 at 3", "[0, 3)"});
  expect_error([&] { permute(x, {from_vector<int64_t>({0, 1}, {2, 1})}); }, {"MoEPermute(", "int64 [2, 2]"});
  expect_error([&] { permute(zeros({2, 0}), {from_vector<int64_t>({0, 1, 2, 0}, {2, 2})}); },
               {"MoEPermute(", "input [2, 0] has rows of width 0"});
  Sequential unpermute({std::make_shared<MoEUnpermute>(2)});
  const Tensor y = normal({4, 3}, 0, 1, DType::Float32, nullptr), w = normal({2, 2}, 0, 1, DType::Float32, nullptr);
  expect_error([&] { unpermute(y, {w, from_vector<int64_t>({0, 1, 1, 2}, {2, 2})}); }, {"slot 1 is given twice"});
  expect_error([&] { unpermute(y, {w, from_vector<int64_t>({0, 1, 4, 2}, {2, 2})}); }, {"slot 4 at 2", "[-1, 4)"});
  expect_error([&] { unpermute(y, {w, from_vector<int64_t>({0, 1, -1, 2}, {2, 2})}); },
               {"MoEUnpermute(", "the slots name 3 of the 4 expert outputs"});
  expect_error([&] { unpermute(y, {normal({1, 2}, 0, 1, DType::Float32, nullptr), Tensor()}); },
               {"MoEUnpermute(", "routing weights [..., 2] of at least 4 copies", "[1, 2]"});
  expect_error([&] { unpermute(y, {w, Tensor()}); }, {"MoEUnpermute(", "slots", "missing"});
}

// A layer of experts that RoutedGroupedMlp takes names the basic op whose input is wrong, as the
// basic ops alone do.
TEST(MoEOps, TheRoutedLayerNamesTheOpWhoseInputIsWrong) {
  Generator gen(5);
  Sequential layer(moe_experts({4, 3, 3, 2}, "moe", gen).ops);
  layer.set_fusion_switches(FusionSwitches::only({"RoutedGroupedMlp"}));
  const Tensor x = normal({2, 4}, 0, 1, DType::Float32, &gen), w = uniform({2, 2}, 0, 1, DType::Float32, &gen);
  const Tensor experts = from_vector<int64_t>({0, 1, 2, 0}, {2, 2});
  ASSERT_NE(layer.explain().find("RoutedGroupedMlp"), std::string::npos) << layer.explain();
  expect_error([&] { layer(x, {from_vector<int64_t>({0, 1, 2, 3}, {2, 2}), w}); },
               {"MoEPermute(", "expert index 3 at 3", "[0, 3)"});
  expect_error([&] { layer(normal({2, 5}, 0, 1, DType::Float32, &gen), {experts, w}); }, {"GroupedLinear(", "5"});
  expect_error([&] { layer(x, {experts, uniform({2, 2}, 0, 1, DType::Float64, &gen)}); },
               {"MoEUnpermute(", "float64"});
  expect_error([&] { layer(x, {experts, uniform({3, 2}, 0, 1, DType::Float32, &gen)}); },
               {"MoEUnpermute(", "routing weights [3, 2] must be one per copy, as the slots [2, 2] are"});
}

// The fused layer checks the experts' weights as the GroupedLinears do: their shapes, dtypes and
// devices (a kernel would read a weight of another shape out of bounds, or a CUDA one from the CPU).
TEST(MoEOps, TheFusedLayerChecksTheExpertsWeights) {
  for (const char* fusion : {"RoutedGroupedMlp", "GroupedMlp"}) {
    SCOPED_TRACE(fusion);
    Generator gen(7);
    const MoEMlp mlp = moe_experts({4, 3, 3, 2}, "moe", gen);
    Sequential layer(mlp.ops);
    layer.set_fusion_switches(FusionSwitches::only({fusion}));
    const Tensor x = normal({2, 4}, 0, 1, DType::Float32, &gen), w = uniform({2, 2}, 0, 1, DType::Float32, &gen);
    const Tensor experts = from_vector<int64_t>({0, 1, 2, 0}, {2, 2});
    ASSERT_NE(layer.explain().find(fusion), std::string::npos) << layer.explain();
    const Tensor down = mlp.down->weight();
    mlp.down->weight() = normal({3, 4, 2}, 0, 1, DType::Float32, &gen);
    expect_error([&] { layer(x, {experts, w}); },
                 {"GroupedLinear(", "parameter weight has shape [3, 4, 2]", "[3, 4, 3] it was built with"});
    mlp.down->weight() = down.to(DType::Float64);
    expect_error([&] { layer(x, {experts, w}); }, {"GroupedLinear(", "float32", "parameter weight float64"});
    mlp.down->weight() = down;
    EXPECT_NO_THROW(layer(x, {experts, w}));
  }
}

// The experts with the scaled GLU, which ScaledGroupedMlp takes, name the GLU where its scale is
// wrong, as the GLU alone does.
TEST(MoEOps, TheScaledExpertsNameTheGluWhoseScaleIsWrong) {
  Generator gen(6);
  std::vector<std::shared_ptr<BasicOp>> ops = moe_experts({4, 3, 3, 2}, "moe", gen).ops;
  ops[2] = std::make_shared<ScaledSwiGLU>();
  Sequential layer(ops);
  layer.set_fusion_switches(FusionSwitches::only({"ScaledGroupedMlp"}));
  const Tensor x = normal({2, 4}, 0, 1, DType::Float32, &gen), w = uniform({2, 2}, 0, 1, DType::Float32, &gen);
  const Tensor experts = from_vector<int64_t>({0, 1, 2, 0}, {2, 2});
  ASSERT_NE(layer.explain().find("ScaledGroupedMlp"), std::string::npos) << layer.explain();
  expect_error([&] { layer(x, {experts, uniform({3}, 0, 1, DType::Float32, &gen), w}); },
               {"ScaledSwiGLU", "leading dims of input [4, 6]", "[3]"});
  expect_error([&] { layer(x, {experts, uniform({4}, 0, 1, DType::Float64, &gen), w}); },
               {"ScaledSwiGLU", "float32", "float64"});
  expect_error([&] { layer(x, {experts, Tensor(), w}); }, {"ScaledSwiGLU", "scale, its extra input, is missing"});
}

}  // namespace
}  // namespace fuselab

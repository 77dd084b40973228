// Optimizers, the schedule and clipping against hand-computed values; state round-trips.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/bias.h"
#include "ops/basic/linear.h"
#include "optim/adamw.h"
#include "optim/anomaly.h"
#include "optim/checkpoint.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

Tensor param(double value) {
  Tensor p = full({1}, value, DType::Float64);
  p.set_requires_grad(true);
  return p;
}

// Runs `steps` steps with a constant grad g and returns the parameter after each.
template <class Opt, class Options>
std::vector<double> run(Options options, double start, double g, int steps) {
  Tensor p = param(start);
  Opt opt({p}, options);
  std::vector<double> values;
  for (int i = 0; i < steps; ++i) {
    p.set_grad(full({1}, g, DType::Float64));
    opt.step();
    values.push_back(p.item());
  }
  return values;
}

std::vector<double> trajectory(SGDOptions options, double start, double g, int steps) {
  return run<SGD>(options, start, g, steps);
}

TEST(SGD, PlainStep) {
  const auto v = trajectory({0.1}, 1.0, 2.0, 2);
  EXPECT_DOUBLE_EQ(v[0], 0.8);
  EXPECT_DOUBLE_EQ(v[1], 0.6);
}

TEST(SGD, MomentumAccumulates) {
  // b1 = 2, p1 = 1 - 0.1*2 = 0.8; b2 = 0.9*2 + 2 = 3.8, p2 = 0.8 - 0.38 = 0.42
  const auto v = trajectory({0.1, 0.9}, 1.0, 2.0, 2);
  EXPECT_NEAR(v[0], 0.8, 1e-15);
  EXPECT_NEAR(v[1], 0.42, 1e-15);
}

TEST(SGD, NesterovLooksAhead) {
  // b1 = 2, d1 = 2 + 0.9*2 = 3.8, p1 = 1 - 0.38 = 0.62; b2 = 3.8, d2 = 2 + 3.42 = 5.42, p2 = 0.62 - 0.542
  const auto v = trajectory({0.1, 0.9, 0, true}, 1.0, 2.0, 2);
  EXPECT_NEAR(v[0], 0.62, 1e-15);
  EXPECT_NEAR(v[1], 0.078, 1e-15);
}

TEST(SGD, WeightDecayAddsToTheGrad) {
  // d = 2 + 0.5 * 1 = 2.5, p = 1 - 0.25
  EXPECT_NEAR(trajectory({0.1, 0, 0.5}, 1.0, 2.0, 1)[0], 0.75, 1e-15);
}

TEST(SGD, SkipsParametersWithoutGradAndRejectsBadOptions) {
  Tensor p = param(3);
  SGD sgd({p}, {0.1});
  sgd.step();
  EXPECT_EQ(p.item(), 3);
  EXPECT_THROW(SGD({p}, {-1.0}), Error);
  EXPECT_THROW(SGD({p}, {0.1, 0, 0, true}), Error);
}

TEST(AdamW, FirstStepsByHand) {
  // t=1: m = 0.1 g, v = 0.001 g^2; m^ = g, v^ = g^2; p = p (1 - lr wd) - lr g / (|g| + eps)
  const AdamWOptions o{0.1, 0.9, 0.999, 1e-8, 0.5};
  const double g = 2.0;
  const auto v = run<AdamW>(o, 1.0, g, 2);
  const double p1 = 1.0 * (1 - 0.1 * 0.5) - 0.1 * 2.0 / (2.0 + 1e-8);
  EXPECT_NEAR(v[0], p1, 1e-12);
  // t=2: m = 0.9*0.2 + 0.2 = 0.38, v = 0.999*0.004 + 0.004 = 0.007996
  const double m2 = 0.38 / (1 - 0.81), v2 = 0.007996 / (1 - 0.998001);
  EXPECT_NEAR(v[1], p1 * (1 - 0.05) - 0.1 * m2 / (std::sqrt(v2) + 1e-8), 1e-12);
}

TEST(Schedule, WarmupThenCosineToMin) {
  EXPECT_DOUBLE_EQ(cosine_with_warmup(0, 10, 110, 1.0, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(cosine_with_warmup(9, 10, 110, 1.0, 0.1), 1.0);
  EXPECT_DOUBLE_EQ(cosine_with_warmup(10, 10, 110, 1.0, 0.1), 1.0);
  EXPECT_NEAR(cosine_with_warmup(60, 10, 110, 1.0, 0.1), 0.55, 1e-12);
  EXPECT_DOUBLE_EQ(cosine_with_warmup(110, 10, 110, 1.0, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(cosine_with_warmup(500, 10, 110, 1.0, 0.1), 0.1);
  EXPECT_THROW(cosine_with_warmup(0, 20, 10, 1.0), Error);
}

TEST(Clip, ScalesToTheGlobalNorm) {
  Tensor a = param(0), b = param(0);
  a.set_grad(full({1}, 3.0, DType::Float64));
  b.set_grad(full({1}, 4.0, DType::Float64));
  EXPECT_DOUBLE_EQ(clip_grad_norm({a, b}, 10.0), 5.0);
  EXPECT_DOUBLE_EQ(a.grad().item(), 3.0);  // under the limit: unchanged
  EXPECT_DOUBLE_EQ(clip_grad_norm({a, b}, 1.0), 5.0);
  EXPECT_NEAR(a.grad().item(), 3.0 / (5.0 + 1e-6), 1e-12);
  EXPECT_NEAR(b.grad().item(), 4.0 / (5.0 + 1e-6), 1e-12);
}

TEST(OptimizerState, RoundTripContinuesIdentically) {
  auto make = [] {
    Tensor p = from_vector<double>({1, -2, 3}, {3});
    p.set_requires_grad(true);
    return p;
  };
  auto grad_at = [](int step) { return from_vector<double>({0.1 * step, -0.2, 0.3 / (step + 1)}, {3}); };
  Tensor p = make();
  AdamW reference({p}, {});
  for (int s = 0; s < 6; ++s) {
    p.set_grad(grad_at(s));
    reference.step();
  }
  Tensor q = make();
  AdamW first({q}, {});
  for (int s = 0; s < 3; ++s) {
    q.set_grad(grad_at(s));
    first.step();
  }
  const NamedTensors saved = first.state();
  EXPECT_TRUE(saved.count("exp_avg.0") && saved.count("exp_avg_sq.0") && saved.count("step"));
  AdamW resumed({q}, {});
  resumed.load_state(saved);
  EXPECT_EQ(resumed.steps(), 3);
  for (int s = 3; s < 6; ++s) {
    q.set_grad(grad_at(s));
    resumed.step();
  }
  EXPECT_EQ(q.to_vector<double>(), p.to_vector<double>());
}

TEST(OptimizerState, MismatchedStateIsRejected) {
  Tensor p = param(1);
  AdamW opt({p}, {});
  NamedTensors bad{{"step", from_vector<int64_t>({1}, {1})}, {"exp_avg.0", zeros({2}, DType::Float64)}};
  EXPECT_THROW(opt.load_state(bad), Error);
  EXPECT_THROW(opt.load_state({}), Error);
  EXPECT_THROW(opt.load_state({{"step", from_vector<int64_t>({1}, {1})}, {"velocity.0", zeros({1}, DType::Float64)}}),
               Error);
}

TEST(Checkpoint, SavesAndRestoresParametersOptimizerAndStep) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/ckpt";
  Tensor w = from_vector<double>({1, 2}, {2});
  w.set_requires_grad(true);
  AdamW opt({w}, {});
  w.set_grad(from_vector<double>({0.5, -0.5}, {2}));
  opt.step();
  save_checkpoint(path, {{"w", w}}, opt, 1);

  Tensor w2 = zeros({2}, DType::Float64);
  w2.set_requires_grad(true);
  AdamW opt2({w2}, {});
  EXPECT_EQ(load_checkpoint(path, {{"w", w2}}, opt2), 1);
  EXPECT_EQ(w2.to_vector<double>(), w.to_vector<double>());
  EXPECT_EQ(opt2.steps(), 1);
  Tensor wrong = zeros({3}, DType::Float64);
  wrong.set_requires_grad(true);
  AdamW opt3({wrong}, {});
  EXPECT_THROW(load_checkpoint(path, {{"w", wrong}}, opt3), Error);
  EXPECT_THROW(load_checkpoint(path, {{"v", w2}}, opt2), Error);
  testing::expect_error([&] { save_checkpoint(path, {{"w", w}}, opt, 42); }, {"step 42", "optimizer's 1 steps"});
  testing::expect_error([&] { save_checkpoint(path, {{"run.w", w}}, opt, 1); }, {"parameter 'run.w'", "collide"});
  testing::expect_error([&] { save_checkpoint(path, {{"optimizer.step", w}}, opt, 1); },
                        {"parameter 'optimizer.step'", "collide"});
}

Tensor vector_param(std::vector<double> values) {
  Tensor p = from_vector<double>(values, {int64_t(values.size())});
  p.set_requires_grad(true);
  return p;
}

TEST(ParamGroups, AGroupWithoutDecayLeavesAZeroGradParameterWhileTheDecayedGroupShrinks) {
  // Group 0 decays (wd 0.1), group 1 does not (wd 0): with zero grads m = v = 0, so the decayed
  // zero-grad parameter is p (1 - lr wd)^t and the undecayed one stays as it was, bit for bit,
  // while a decayed parameter with a grad follows the whole AdamW formula, in float64.
  const AdamWOptions o{0.1, 0.9, 0.999, 1e-8, 0.5};
  Tensor shrinks = vector_param({1, -2}), kept = vector_param({3, -4}), learns = vector_param({0.5});
  AdamW opt({{{shrinks, learns}, 0.1}, {{kept}, 0.0}}, o);
  double p = 0.5, m = 0, v = 0;
  for (int t = 1; t <= 3; ++t) {
    const double g = 0.3 * t;
    shrinks.set_grad(zeros({2}, DType::Float64));
    kept.set_grad(zeros({2}, DType::Float64));
    learns.set_grad(full({1}, g, DType::Float64));
    opt.step();
    m = o.beta1 * m + (1 - o.beta1) * g;
    v = o.beta2 * v + (1 - o.beta2) * g * g;
    const double m_hat = m / (1 - std::pow(o.beta1, t)), v_hat = v / (1 - std::pow(o.beta2, t));
    p = p * (1 - o.lr * 0.1) - o.lr * m_hat / (std::sqrt(v_hat) + o.eps);
    EXPECT_NEAR(learns.item(), p, 1e-15) << "step " << t;
    const double decay = std::pow(1 - o.lr * 0.1, t);
    const auto shrunk = shrinks.to_vector<double>();
    EXPECT_NEAR(shrunk[0], 1 * decay, 1e-15);
    EXPECT_NEAR(shrunk[1], -2 * decay, 1e-15);
    EXPECT_EQ(kept.to_vector<double>(), (std::vector<double>{3, -4}));
  }
  EXPECT_EQ(opt.groups()[0].weight_decay, 0.1);
  EXPECT_EQ(opt.groups()[1].weight_decay, 0.0);
  EXPECT_EQ(opt.groups()[1].lr, o.lr);  // unset: the options' lr
}

TEST(ParamGroups, EachGroupStepsWithItsOwnLrTimesTheSchedulesScale) {
  // SGD, grad 1: p = p - lr (1 + wd p) for each group's lr and weight decay.
  Tensor fast = param(1), slow = param(1);
  SGD sgd({{{fast}, std::nullopt, 0.1}, {{slow}, 0.5}}, SGDOptions{0.01});
  auto step = [&] {
    fast.set_grad(full({1}, 1.0, DType::Float64));
    slow.set_grad(full({1}, 1.0, DType::Float64));
    sgd.step();
  };
  step();
  EXPECT_NEAR(fast.item(), 1 - 0.1, 1e-15);
  EXPECT_NEAR(slow.item(), 1 - 0.01 * (1 + 0.5), 1e-15);
  sgd.set_lr_scale(0.5);
  EXPECT_DOUBLE_EQ(sgd.lr(0), 0.05);
  EXPECT_DOUBLE_EQ(sgd.lr(1), 0.005);
  const double slow_before = slow.item();
  step();
  EXPECT_NEAR(fast.item(), 0.9 - 0.05, 1e-15);
  EXPECT_NEAR(slow.item(), slow_before - 0.005 * (1 + 0.5 * slow_before), 1e-15);
  EXPECT_EQ(sgd.groups()[0].lr, 0.1);  // the base lr is kept; the scale multiplies it
  testing::expect_error([&] { sgd.set_lr_scale(-1); }, {"lr scale -1"});
}

// An AdamW of two groups (lr 0.1, wd 0.2 and the defaults lr 0.01, wd 0) over a, b and c, and the
// grads of its step s.
struct TwoGroups {
  Tensor a = vector_param({1, 2}), b = vector_param({-1}), c = vector_param({0.5, 0.25, 2});
  AdamW opt;
  explicit TwoGroups(AdamWOptions defaults = {0.01, 0.9, 0.999, 1e-8, 0})
      : opt({{{a, b}, 0.2, 0.1}, {{c}}}, defaults) {}
  void step(int s) {
    a.set_grad(from_vector<double>({0.1 * s, -0.3}, {2}));
    b.set_grad(from_vector<double>({0.2 / (s + 1)}, {1}));
    c.set_grad(from_vector<double>({-0.1, 0.05 * s, 0.4}, {3}));
    opt.step();
  }
  std::vector<double> values() const {
    std::vector<double> all;
    for (const Tensor& p : {a, b, c}) for (double x : p.to_vector<double>()) all.push_back(x);
    return all;
  }
};

TEST(ParamGroups, StateRoundTripRestoresEachGroupsHyperParametersAndContinuesIdentically) {
  TwoGroups reference;
  for (int s = 0; s < 6; ++s) reference.step(s);
  TwoGroups first;
  for (int s = 0; s < 3; ++s) first.step(s);
  const NamedTensors saved = first.opt.state();
  EXPECT_EQ(saved.at("group.0.params").to_vector<int64_t>(), std::vector<int64_t>{2});
  EXPECT_EQ(saved.at("group.1.weight_decay").to_vector<double>(), std::vector<double>{0});
  // Made with other defaults: the saved groups' lr and weight decay replace them.
  TwoGroups resumed(AdamWOptions{0.5, 0.9, 0.999, 1e-8, 0.3});
  resumed.a.copy_(first.a), resumed.b.copy_(first.b), resumed.c.copy_(first.c);
  resumed.opt.load_state(saved);
  EXPECT_EQ(resumed.opt.groups()[1].lr, 0.01);
  EXPECT_EQ(resumed.opt.groups()[1].weight_decay, 0.0);
  for (int s = 3; s < 6; ++s) resumed.step(s);
  EXPECT_EQ(resumed.values(), reference.values());
}

TEST(ParamGroups, CheckpointKeepsTheGroups) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/groups";
  TwoGroups saved;
  for (int s = 0; s < 2; ++s) saved.step(s);
  save_checkpoint(path, {{"a", saved.a}, {"b", saved.b}, {"c", saved.c}}, saved.opt, 2);
  TwoGroups loaded(AdamWOptions{0.5, 0.9, 0.999, 1e-8, 0.3});
  EXPECT_EQ(load_checkpoint(path, {{"a", loaded.a}, {"b", loaded.b}, {"c", loaded.c}}, loaded.opt), 2);
  EXPECT_EQ(loaded.values(), saved.values());
  for (size_t g = 0; g < 2; ++g) {
    EXPECT_EQ(loaded.opt.groups()[g].lr, saved.opt.groups()[g].lr);
    EXPECT_EQ(loaded.opt.groups()[g].weight_decay, saved.opt.groups()[g].weight_decay);
  }
  saved.step(2), loaded.step(2);
  EXPECT_EQ(loaded.values(), saved.values());

  // The same parameters split differently: refused, naming the group, with nothing changed.
  Tensor a = vector_param({7, 7}), b = vector_param({7}), c = vector_param({7, 7, 7});
  AdamW other({{{a}}, {{b, c}}}, {});
  testing::expect_error([&] { load_checkpoint(path, {{"a", a}, {"b", b}, {"c", c}}, other); },
                        {"group 0 has 2 parameters", "the optimizer's group 0 has 1"});
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{7, 7}));
  AdamW one_group({a, b, c}, {});
  testing::expect_error([&] { load_checkpoint(path, {{"a", a}, {"b", b}, {"c", c}}, one_group); },
                        {"has 2 parameter groups, the optimizer 1"});
}

TEST(ParamGroups, AStateSavedWithoutGroupsLoadsOnlyIntoOneGroup) {
  // As a checkpoint made before groups existed holds it: the step and the buffers only.
  TwoGroups grouped;
  grouped.step(0);
  NamedTensors old = grouped.opt.state();
  for (auto it = old.begin(); it != old.end();) it = it->first.rfind("group.", 0) == 0 ? old.erase(it) : std::next(it);
  testing::expect_error([&] { grouped.opt.load_state(old); },
                        {"saved without parameter groups", "optimizer of one group", "has 2"});
  Tensor a = vector_param({1, 2}), b = vector_param({-1}), c = vector_param({0.5, 0.25, 2});
  AdamW single({a, b, c}, {0.02, 0.9, 0.999, 1e-8, 0.1});
  single.load_state(old);
  EXPECT_EQ(single.steps(), 1);
  EXPECT_EQ(single.groups()[0].lr, 0.02);  // its own hyper-parameters stay
  EXPECT_EQ(single.groups()[0].weight_decay, 0.1);
}

TEST(ParamGroups, BadGroupsAreRefusedNamingTheGroup) {
  Tensor a = param(1), b = param(2);
  testing::expect_error([&] { AdamW({{{a, b}}, {{b}, 0.0}}, {}); },
                        {"AdamW", "shape [1]", "in group 0 and again in group 1"});
  testing::expect_error([&] { SGD({{{a, a}}}, SGDOptions{}); }, {"SGD", "in group 0 and again in group 0"});
  testing::expect_error([&] { AdamW({{{a}}, {{b}, -0.1}}, {}); }, {"AdamW: group 1", "weight_decay -0.1"});
  testing::expect_error([&] { SGD({{{a}, std::nullopt, -1.0}}, SGDOptions{}); }, {"SGD: group 0", "lr -1"});
  // What load_state would refuse is refused here too: a run never saves a state it cannot resume.
  const double inf = std::numeric_limits<double>::infinity();
  testing::expect_error([&] { SGD({a}, SGDOptions{1e4}); }, {"SGD: group 0", "lr 10000", "[0, 1000]"});
  testing::expect_error([&] { SGD({a}, SGDOptions{0.1, 0, inf}); }, {"SGD: group 0", "weight_decay inf"});
  testing::expect_error([&] { SGD({a}, SGDOptions{0.1, inf}); }, {"SGD: momentum inf"});
  testing::expect_error([&] { AdamW({a}, AdamWOptions{1e-3, 0.9, 0.999, 0.0}); }, {"AdamW: eps 0", "above 0"});

  TwoGroups two;
  two.step(0);
  const NamedTensors good = two.opt.state();
  auto without = [&](const std::string& name) {
    NamedTensors edited = good;
    edited.erase(name);
    return edited;
  };
  testing::expect_error([&] { two.opt.load_state(without("group.1.lr")); }, {"missing float64 entry 'group.1.lr'"});
  testing::expect_error([&] { two.opt.load_state(without("group.1.params")); },
                        {"has 1 parameter groups, the optimizer 2"});
  NamedTensors negative = good;
  negative["group.1.weight_decay"] = from_vector<double>({-2}, {1});
  testing::expect_error([&] { two.opt.load_state(negative); }, {"group 1", "weight_decay -2"});
  NamedTensors extra = good;
  extra["group.2.params"] = from_vector<int64_t>({0}, {1});
  testing::expect_error([&] { two.opt.load_state(extra); }, {"has 3 parameter groups, the optimizer 2"});
  EXPECT_EQ(two.opt.groups()[0].lr, 0.1);  // unchanged by the refused loads
}

TEST(OptimizerState, IncompleteStrayOrImpossibleEntriesAreRefusedNamingThem) {
  TwoGroups two;
  two.step(0);
  const NamedTensors good = two.opt.state();
  auto edited = [&](const std::string& name, const Tensor& value) {
    NamedTensors state = good;
    if (value.defined()) {
      state[name] = value;
    } else {
      state.erase(name);
    }
    return state;
  };
  testing::expect_error([&] { two.opt.load_state(edited("exp_avg_sq.1", Tensor())); },
                        {"'exp_avg_sq.1' is missing", "'exp_avg.1' is there", "parameter 1 is incomplete"});
  testing::expect_error([&] { two.opt.load_state(edited("exp_avg.3", good.at("exp_avg.1"))); },
                        {"entry 'exp_avg.3' is for no parameter", "has 3 (0 to 2)"});
  testing::expect_error([&] { two.opt.load_state(edited("master.7", good.at("exp_avg.1"))); },
                        {"entry 'master.7' is for no parameter"});
  testing::expect_error([&] { two.opt.load_state(edited("exp_avg_sq.0", from_vector<double>({0.1, -0.5}, {2}))); },
                        {"'exp_avg_sq.0' holds -0.5", "mean of squares"});
  for (double lr : {1e30, double(NAN), double(INFINITY)}) {
    testing::expect_error([&] { two.opt.load_state(edited("group.1.lr", from_vector<double>({lr}, {1}))); },
                          {"optimizer state: group 1", "must be in [0, 1000]"});
  }
  EXPECT_EQ(two.opt.groups()[1].lr, 0.01);  // unchanged by the refused loads
  two.opt.load_state(good);
}

// A checkpoint of one trained parameter, rewritten with `edit` applied to its tensors and metadata.
std::string edited_checkpoint(const std::string& name, const std::function<void(Safetensors&)>& edit) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
  Tensor w = from_vector<double>({1, 2}, {2});
  w.set_requires_grad(true);
  AdamW opt({w}, {});
  for (int i = 0; i < 12; ++i) {
    w.set_grad(from_vector<double>({0.5, -0.5}, {2}));
    opt.step();
  }
  save_checkpoint(path, {{"w", w}}, opt, 12);
  Safetensors file = load_safetensors(path);
  edit(file);
  save_safetensors(path, file.tensors, file.metadata);
  return path;
}

TEST(Checkpoint, BadStepsAndNonFiniteValuesAreRefusedBeforeAnythingChanges) {
  struct Case {
    std::string name;
    std::function<void(Safetensors&)> edit;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {"step_abc", [](Safetensors& f) { f.metadata["step"] = "abc"; }, {"step_abc", "step 'abc'"}},
      {"step_huge", [](Safetensors& f) { f.metadata["step"] = "99999999999999"; },
       {"step 99999999999999", "step count 12"}},
      {"step_flipped_digit", [](Safetensors& f) { f.metadata["step"] = "13"; }, {"step 13", "step count 12"}},
      {"step_negative", [](Safetensors& f) { f.metadata["step"] = "-1"; }, {"step '-1'"}},
      {"step_trailing", [](Safetensors& f) { f.metadata["step"] = "12x"; }, {"step '12x'"}},
      {"step_missing", [](Safetensors& f) { f.metadata.erase("step"); }, {"no step"}},
      {"nan_weight", [](Safetensors& f) { f.tensors["w"] = from_vector<double>({NAN, 1}, {2}); },
       {"tensor 'w'", "1 NaN or infinite"}},
      {"inf_moment",
       [](Safetensors& f) { f.tensors["optimizer.exp_avg.0"] = from_vector<double>({INFINITY, -INFINITY}, {2}); },
       {"optimizer.exp_avg.0", "2 NaN or infinite"}},
      {"moment_missing", [](Safetensors& f) { f.tensors.erase("optimizer.exp_avg_sq.0"); },
       {"moment_missing: optimizer state", "'exp_avg_sq.0' is missing"}},
      {"moment_of_no_parameter",
       [](Safetensors& f) { f.tensors["optimizer.exp_avg.1"] = f.tensors.at("optimizer.exp_avg.0"); },
       {"moment_of_no_parameter: optimizer state", "entry 'exp_avg.1' is for no parameter"}},
      {"negative_second_moment",
       [](Safetensors& f) { f.tensors["optimizer.exp_avg_sq.0"] = from_vector<double>({0.1, -0.5}, {2}); },
       {"negative_second_moment: optimizer state", "'exp_avg_sq.0' holds -0.5"}},
      {"lr_1e30", [](Safetensors& f) { f.tensors["optimizer.group.0.lr"] = from_vector<double>({1e30}, {1}); },
       {"lr_1e30: optimizer state", "lr 1e+30", "must be in [0, 1000]"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = edited_checkpoint(c.name, c.edit);
    Tensor w = from_vector<double>({7, 7}, {2});
    w.set_requires_grad(true);
    AdamW opt({w}, {});
    testing::expect_error([&] { load_checkpoint(path, {{"w", w}}, opt); }, c.says);
    EXPECT_EQ(w.to_vector<double>(), (std::vector<double>{7, 7}));
    EXPECT_EQ(opt.steps(), 0);
  }
}

TEST(Anomaly, ANonFiniteLossOrGradStopsTrainingNamingTheStepAndParameter) {
  EXPECT_NO_THROW(check_finite_loss("train", 2.5, 3));
  testing::expect_error([] { check_finite_loss("train", NAN, 7); }, {"train", "loss is nan", "step 7"});
  testing::expect_error([] { check_finite_loss("train", INFINITY, 8); }, {"loss is inf", "step 8"});
  Tensor good = param(1), bad = from_vector<float>({1, 2, 3}, {3});
  bad.set_requires_grad(true);
  good.set_grad(full({1}, 0.5, DType::Float64));
  const NamedTensors params{{"layer.bias", bad}, {"layer.weight", good}};
  EXPECT_NO_THROW(check_finite_grads("train", params, 4));  // bias has no grad yet
  bad.set_grad(from_vector<float>({0, INFINITY, NAN}, {3}));
  testing::expect_error([&] { check_finite_grads("train", params, 5); },
                        {"grad of layer.bias [3]", "2 NaN or infinite", "step 5"});
}

// A float32 MLP, the same for every seed, and a regression batch it can learn.
Sequential small_mlp() {
  Generator gen(7);
  return Sequential({std::make_shared<Linear>(3, 8, &gen), std::make_shared<Bias>(8, 0.5, &gen),
                     std::make_shared<GELU>(), std::make_shared<Linear>(8, 1, &gen)});
}

struct Batch {
  Tensor x, y;
};

Batch batch(DType dtype) {
  const Tensor x = testing::random_tensor({16, 3}, DType::Float64, 3);
  const auto xs = x.to_vector<double>();
  std::vector<double> ys;
  for (int r = 0; r < 16; ++r) ys.push_back(std::sin(xs[3 * r]) - 0.5 * xs[3 * r + 1] * xs[3 * r + 2]);
  return {x.to(dtype), from_vector<double>(ys, {16, 1}).to(dtype)};
}

// The loss before each of `steps` optimizer steps.
std::vector<double> train(Sequential& model, Optimizer& opt, const Batch& data, int steps) {
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    const Tensor loss = mse(model(data.x), data.y);
    losses.push_back(loss.item());
    backward(loss);
    opt.step();
  }
  return losses;
}

std::unique_ptr<Optimizer> make_optimizer(bool adamw, const std::vector<Tensor>& params) {
  if (adamw) return std::make_unique<AdamW>(params, AdamWOptions{0.02});
  return std::make_unique<SGD>(params, SGDOptions{0.1, 0.9});
}

TEST(GradientAccumulation, MicroBatchesWithScaledLossesMakeTheFullBatchStep) {
  // N micro-batches of B / N rows, each mean loss scaled by 1 / N, sum to the full batch's mean
  // loss, so their grads, accumulated on the leaves over N backward calls, are the full batch's,
  // and so is the step (float64, AdamW with a decayed and an undecayed group).
  constexpr int kMicro = 4;
  const Batch data = batch(DType::Float64);  // 16 rows
  auto make = [](Sequential& model) {
    model.to(DType::Float64);
    const std::vector<Tensor> p = model.parameters();  // linear0.weight, bias0, linear1.weight
    return AdamW({{{p[0], p[2]}, 0.1}, {{p[1]}, 0.0}}, AdamWOptions{0.01});
  };
  Sequential full = small_mlp(), micro = small_mlp();
  AdamW full_opt = make(full), micro_opt = make(micro);
  for (int step = 0; step < 3; ++step) {
    full_opt.zero_grad();
    backward(mse(full(data.x), data.y));
    micro_opt.zero_grad();
    const int64_t rows = data.x.size(0) / kMicro;
    for (int m = 0; m < kMicro; ++m) {
      const Tensor x = data.x.slice(m * rows, (m + 1) * rows), y = data.y.slice(m * rows, (m + 1) * rows);
      backward(scale(mse(micro(x), y), 1.0 / kMicro));
    }
    for (size_t k = 0; k < full.parameters().size(); ++k) {
      const auto want = full.parameters()[k].grad().to_vector<double>();
      const auto got = micro.parameters()[k].grad().to_vector<double>();
      for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12) << "grad " << k << ", " << i;
    }
    full_opt.step();
    micro_opt.step();
  }
  for (size_t k = 0; k < full.parameters().size(); ++k) {
    const auto want = full.parameters()[k].to_vector<double>();
    const auto got = micro.parameters()[k].to_vector<double>();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-10) << "parameter " << k << ", " << i;
  }
}

TEST(GradientAccumulation, LeafGradsAddUpOverBackwardCallsUntilZeroGrad) {
  Sequential model = small_mlp();
  model.to(DType::Float64);
  const Batch data = batch(DType::Float64);
  const Tensor w = model.parameters()[0];
  backward(mse(model(data.x), data.y));
  const auto once = w.grad().to_vector<double>();
  backward(mse(model(data.x), data.y));
  const auto twice = w.grad().to_vector<double>();
  for (size_t i = 0; i < once.size(); ++i) EXPECT_NEAR(twice[i], 2 * once[i], 1e-15 * std::abs(once[i]) + 1e-300);
  AdamW opt(model.parameters(), {});
  opt.zero_grad();
  EXPECT_FALSE(w.grad().defined());
  backward(mse(model(data.x), data.y));
  EXPECT_EQ(w.grad().to_vector<double>(), once);
}

TEST(ModelConvertedInPlace, OptimizerMadeBeforeToTrainsTheConvertedParameters) {
  for (bool adamw : {false, true}) {
    SCOPED_TRACE(adamw ? "AdamW" : "SGD");
    Sequential model = small_mlp();
    const std::vector<Tensor> handles = model.parameters();
    const Tensor weight = model.named_parameters().at("linear0.weight");
    const std::unique_ptr<Optimizer> opt = make_optimizer(adamw, handles);
    model.to(DType::Float64);
    for (size_t k = 0; k < handles.size(); ++k) {
      EXPECT_TRUE(handles[k].same(model.parameters()[k]));
      EXPECT_EQ(opt->params()[k].dtype(), DType::Float64);
      EXPECT_TRUE(handles[k].requires_grad());
    }
    const auto before = weight.to_vector<double>();
    const auto losses = train(model, *opt, batch(DType::Float64), 60);
    EXPECT_NE(weight.to_vector<double>(), before);
    EXPECT_LT(losses.back(), 0.2 * losses.front()) << losses.front() << " -> " << losses.back();
    EXPECT_EQ(opt->state().at("step").to_vector<int64_t>()[0], 60);
  }
}

TEST(ModelConvertedInPlace, OptimizerMadeAfterToTrainsTheSame) {
  for (bool adamw : {false, true}) {
    SCOPED_TRACE(adamw ? "AdamW" : "SGD");
    Sequential before = small_mlp(), after = small_mlp();
    const std::unique_ptr<Optimizer> made_before = make_optimizer(adamw, before.parameters());
    before.to(DType::Float64);
    after.to(DType::Float64);
    const std::unique_ptr<Optimizer> made_after = make_optimizer(adamw, after.parameters());
    const auto losses_after = train(after, *made_after, batch(DType::Float64), 30);
    EXPECT_LT(losses_after.back(), 0.5 * losses_after.front());
    EXPECT_EQ(train(before, *made_before, batch(DType::Float64), 30), losses_after);
    for (size_t k = 0; k < after.parameters().size(); ++k) {
      EXPECT_EQ(before.parameters()[k].to_vector<double>(), after.parameters()[k].to_vector<double>());
    }
  }
}

TEST(ModelConvertedInPlace, StateOfAnOptimizerThatSteppedFollowsTheParameters) {
  // to() after some steps: the buffers are cast to float64 at the next step, exactly as if the
  // state had been saved, cast by hand and loaded into a new optimizer for the converted model.
  for (bool adamw : {false, true}) {
    SCOPED_TRACE(adamw ? "AdamW" : "SGD");
    Sequential followed = small_mlp(), by_hand = small_mlp();
    const std::unique_ptr<Optimizer> opt = make_optimizer(adamw, followed.parameters());
    const std::unique_ptr<Optimizer> first = make_optimizer(adamw, by_hand.parameters());
    const auto losses = train(followed, *opt, batch(DType::Float32), 5);
    EXPECT_EQ(train(by_hand, *first, batch(DType::Float32), 5), losses);

    followed.to(DType::Float64);
    auto is_buffer = [](const std::string& name) { return name != "step" && name.rfind("group.", 0) != 0; };
    for (const auto& [name, value] : opt->state()) {
      if (is_buffer(name)) {
        EXPECT_EQ(value.dtype(), DType::Float64) << name;  // as the next step will hold it
      }
    }
    NamedTensors cast;
    for (const auto& [name, value] : first->state()) cast[name] = is_buffer(name) ? value.to(DType::Float64) : value;
    by_hand.to(DType::Float64);
    const std::unique_ptr<Optimizer> loaded = make_optimizer(adamw, by_hand.parameters());
    loaded->load_state(cast);

    const auto more = train(followed, *opt, batch(DType::Float64), 40);
    EXPECT_EQ(train(by_hand, *loaded, batch(DType::Float64), 40), more);
    EXPECT_LT(more.back(), 0.5 * losses.front());
    for (size_t k = 0; k < followed.parameters().size(); ++k) {
      EXPECT_EQ(followed.parameters()[k].to_vector<double>(), by_hand.parameters()[k].to_vector<double>());
    }
  }
}

TEST(ModelConvertedInPlace, APartlyConvertedModelIsRefusedNamingTheParameter) {
  Sequential model = small_mlp();
  AdamW opt(model.parameters(), {});
  model.ops()[3]->to(DType::Float64);  // the last Linear only
  for (Tensor& p : model.parameters()) p.set_grad(zeros_like(p));
  testing::expect_error([&] { opt.step(); }, {"parameter 2 of shape [1, 8]", "float64 on cpu", "parameter 0 float32"});
}

}  // namespace
}  // namespace fuselab

// Determinism (two runs of the same training give bitwise-identical losses and parameters,
// fused or unfused, with 2 threads) and checkpoints that move between fused and unfused models.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "kernels/cpu/threading.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/embedding.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/reshape.h"
#include "ops/basic/rmsnorm.h"
#include "optim/adamw.h"
#include "optim/checkpoint.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

constexpr int64_t kVocab = 27, kContext = 4, kEmbed = 16, kHidden = 128, kBatch = 512;

// A small charlm: large enough that every row kernel takes its parallel path.
Sequential make_model(bool fused) {
  Generator gen(11);
  auto branch = std::make_shared<MakeExtraOutput>();
  branch->set_extra_output_channel(0, "residual", false);
  auto add = std::make_shared<AddExtraInput>();
  add->set_extra_input_channel(0, "residual");
  Sequential model;
  model.append(std::make_shared<Embedding>(kVocab, kEmbed, &gen)).append(std::make_shared<Reshape>(Shape{-1, kContext * kEmbed}));
  model.append(linear_with_bias(kContext * kEmbed, kHidden, &gen)).append(std::make_shared<GELU>());
  model.append(branch).append(std::make_shared<RMSNorm>(kHidden));
  model.append(linear_with_bias(kHidden, kHidden, &gen)).append(std::make_shared<GELU>()).append(add);
  model.append(linear_with_bias(kHidden, kVocab, &gen));
  model.set_fusion_switches(fused);
  return model;
}

struct Trace {
  std::vector<float> losses;
  std::vector<std::vector<float>> params;
};

// Trains `steps` steps on seeded random batches, starting at batch number `first_step`.
void train(Sequential& model, Optimizer& optimizer, int first_step, int steps, Trace& trace) {
  for (int step = first_step; step < first_step + steps; ++step) {
    Generator gen(1000 + uint64_t(step));
    const Tensor ids = randint({kBatch, kContext}, kVocab, &gen);
    const auto id_values = ids.to_vector<int64_t>();
    std::vector<int64_t> next(kBatch);  // a learnable rule: the next id repeats the first
    for (int64_t r = 0; r < kBatch; ++r) next[size_t(r)] = id_values[size_t(r * kContext)];
    const Tensor targets = from_vector<int64_t>(next, {kBatch});
    optimizer.zero_grad();
    const Tensor loss = cross_entropy(model(ids), targets);
    backward(loss);
    optimizer.step();
    trace.losses.push_back(float(loss.item()));
  }
  trace.params.clear();
  for (const Tensor& p : model.parameters()) trace.params.push_back(p.to_vector<float>());
}

Trace run(bool fused) {
  Sequential model = make_model(fused);
  AdamW optimizer(model.parameters(), {1e-2});
  Trace trace;
  train(model, optimizer, 0, 6, trace);
  return trace;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(Determinism, TwoRunsAreBitwiseIdenticalFusedAndUnfused) {
  kernels::cpu::set_num_threads(2);
  for (bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "unfused");
    const Trace a = run(fused), b = run(fused);
    EXPECT_TRUE(bitwise_equal(a.losses, b.losses));
    ASSERT_EQ(a.params.size(), b.params.size());
    for (size_t k = 0; k < a.params.size(); ++k) EXPECT_TRUE(bitwise_equal(a.params[k], b.params[k])) << "param " << k;
    EXPECT_LT(a.losses.back(), a.losses.front());  // it trains
  }
}

TEST(Checkpoints, FusedAndUnfusedModelsShareCheckpoints) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/mixed.ckpt";
  Sequential fused = make_model(true);
  AdamW fused_opt(fused.parameters(), {1e-2});
  Trace warmup;
  train(fused, fused_opt, 0, 4, warmup);
  save_checkpoint(path, fused.named_parameters(), fused_opt, 4);

  Trace continued;  // the fused model goes on
  train(fused, fused_opt, 4, 4, continued);

  Sequential unfused = make_model(false);  // fresh parameters, replaced by the checkpoint
  AdamW unfused_opt(unfused.parameters(), {1e-2});
  ASSERT_EQ(load_checkpoint(path, unfused.named_parameters(), unfused_opt), 4);
  Trace resumed;
  train(unfused, unfused_opt, 4, 4, resumed);

  ASSERT_EQ(resumed.losses.size(), continued.losses.size());
  for (size_t i = 0; i < resumed.losses.size(); ++i) EXPECT_NEAR(resumed.losses[i], continued.losses[i], 1e-4) << i;
  for (size_t k = 0; k < resumed.params.size(); ++k) {
    for (size_t i = 0; i < resumed.params[k].size(); ++i) {
      ASSERT_NEAR(resumed.params[k][i], continued.params[k][i], 1e-4) << "param " << k << " element " << i;
    }
  }
}

}  // namespace
}  // namespace fuselab

// Fused against unfused, per built-in fusion and for the MLP block, forward + backward, plus the
// cost of fusing a 10,000-op list and the per-call overhead of a tiny Sequential.
//
//   bazel run -c opt //bench:fusion_bench -- --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//
// Each fused/unfused pair builds the same Sequential and differs only in its fusion switches.
#include <benchmark/benchmark.h>

#include <functional>

#include "autograd/functional.h"
#include "autograd/grad_mode.h"
#include "fuser/sequential.h"
#include "kernels/cpu/threading.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/bias.h"
#include "ops/basic/channel_bias.h"
#include "ops/basic/conv2d.h"
#include "ops/basic/identity.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

using Ops = std::vector<std::shared_ptr<BasicOp>>;

struct Model {
  std::function<Ops(int64_t h)> build;
  int64_t input_width = 1;  // input is [tokens, input_width * h]
  int64_t extra_width = 0;  // one extra input [tokens, extra_width * h] when > 0 (x itself when equal)
  std::function<Shape(int64_t tokens, int64_t h)> input_shape = nullptr;  // other inputs than [tokens, ...]
};

// Times forward + backward of one Sequential call, from a loss shaped like training's (the mean
// squared error against a fixed random target, whose grad is a full tensor); reports the
// allocator's peak.
void run_forward_backward(benchmark::State& state, const Model& model, bool fused) {
  const int64_t tokens = state.range(0), h = state.range(1);
  Sequential seq(model.build(h));
  seq.set_fusion_switches(fused);
  Tensor x = randn(model.input_shape ? model.input_shape(tokens, h) : Shape{tokens, model.input_width * h});
  x.set_requires_grad(true);
  std::vector<Tensor> extras;
  if (model.extra_width == model.input_width) extras.push_back(x);
  else if (model.extra_width > 0) extras.push_back(randn({tokens, model.extra_width * h}).set_requires_grad(true));
  Tensor target;
  {
    NoGradGuard no_grad;
    target = randn(seq(x, extras).output.shape());
  }
  auto step = [&] {
    backward(mse(seq(x, extras).output, target));
    x.zero_grad();
    for (Tensor& e : extras) e.zero_grad();
    seq.zero_grad();
  };
  step();  // warm-up: fusion, the allocator's cache, OpenBLAS's buffers
  CachingAllocator& cpu = CachingAllocator::of(Device::cpu());
  const size_t baseline = cpu.stats().bytes_in_use;
  cpu.reset_peak();
  for (auto _ : state) step();
  state.counters["peak_MB"] = double(cpu.stats().peak_bytes_in_use - baseline) / 1e6;
}

const Model kLinearBiasGelu{[](int64_t h) {
  return Ops{std::make_shared<Linear>(h, 4 * h), std::make_shared<Bias>(4 * h, 0.1), std::make_shared<GELU>()};
}};
const Model kLinearBiasAdd{[](int64_t h) {
  return Ops{std::make_shared<Linear>(4 * h, h), std::make_shared<Bias>(h, 0.1), std::make_shared<AddExtraInput>()};
}, 4, 1};
const Model kBranchLinear{[](int64_t h) {
  return Ops{std::make_shared<MakeExtraOutput>(), std::make_shared<Linear>(h, h)};
}};
const Model kAddNorm{[](int64_t h) {
  return Ops{std::make_shared<AddExtraInput>(), std::make_shared<MakeExtraOutput>(), std::make_shared<RMSNorm>(h)};
}, 1, 1};
// RMSNorm(x + Linear2(GELU(Linear1(x) + b1)) + b2), x also the extra input.
const Model kMlpBlock{[](int64_t h) {
  return Ops{std::make_shared<Linear>(h, 4 * h), std::make_shared<Bias>(4 * h, 0.1), std::make_shared<GELU>(),
             std::make_shared<Linear>(4 * h, h), std::make_shared<Bias>(h, 0.1), std::make_shared<AddExtraInput>(),
             std::make_shared<RMSNorm>(h)};
}, 1, 1};

// Conv2d(h -> h, 3x3, padding 1), ChannelBias, GELU on a batch of `tokens` images of h x 32 x 32.
const Model kConvBiasGelu{[](int64_t h) {
  return Ops{std::make_shared<Conv2d>(h, h, 3, 1, 1), std::make_shared<ChannelBias>(h, 0.1), std::make_shared<GELU>()};
}, 1, 0, [](int64_t batch, int64_t h) { return Shape{batch, h, 32, 32}; }};

void BM_LinearBiasGelu_Fused(benchmark::State& s) { run_forward_backward(s, kLinearBiasGelu, true); }
void BM_LinearBiasGelu_Unfused(benchmark::State& s) { run_forward_backward(s, kLinearBiasGelu, false); }
void BM_LinearBiasAdd_Fused(benchmark::State& s) { run_forward_backward(s, kLinearBiasAdd, true); }
void BM_LinearBiasAdd_Unfused(benchmark::State& s) { run_forward_backward(s, kLinearBiasAdd, false); }
void BM_BranchLinear_Fused(benchmark::State& s) { run_forward_backward(s, kBranchLinear, true); }
void BM_BranchLinear_Unfused(benchmark::State& s) { run_forward_backward(s, kBranchLinear, false); }
void BM_AddNorm_Fused(benchmark::State& s) { run_forward_backward(s, kAddNorm, true); }
void BM_AddNorm_Unfused(benchmark::State& s) { run_forward_backward(s, kAddNorm, false); }
void BM_MlpBlock_Fused(benchmark::State& s) { run_forward_backward(s, kMlpBlock, true); }
void BM_MlpBlock_Unfused(benchmark::State& s) { run_forward_backward(s, kMlpBlock, false); }
void BM_ConvBiasGelu_Fused(benchmark::State& s) { run_forward_backward(s, kConvBiasGelu, true); }
void BM_ConvBiasGelu_Unfused(benchmark::State& s) { run_forward_backward(s, kConvBiasGelu, false); }

#define SHAPES Args({4096, 256})->Unit(benchmark::kMillisecond)->UseRealTime()
BENCHMARK(BM_LinearBiasGelu_Fused)->SHAPES;
BENCHMARK(BM_LinearBiasGelu_Unfused)->SHAPES;
BENCHMARK(BM_LinearBiasAdd_Fused)->SHAPES;
BENCHMARK(BM_LinearBiasAdd_Unfused)->SHAPES;
BENCHMARK(BM_BranchLinear_Fused)->SHAPES;
BENCHMARK(BM_BranchLinear_Unfused)->SHAPES;
BENCHMARK(BM_AddNorm_Fused)->SHAPES;
BENCHMARK(BM_AddNorm_Unfused)->SHAPES;
BENCHMARK(BM_MlpBlock_Fused)->SHAPES->Args({256, 256});
BENCHMARK(BM_MlpBlock_Unfused)->SHAPES->Args({256, 256});
// 32 images of 64 channels, 32 x 32.
BENCHMARK(BM_ConvBiasGelu_Fused)->Args({32, 64})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ConvBiasGelu_Unfused)->Args({32, 64})->Unit(benchmark::kMillisecond)->UseRealTime();

// Fusing a list of n Linear, Bias, GELU triples and Identity ops (every fusion function runs).
void BM_FuseLongList(benchmark::State& state) {
  Ops ops;
  for (int64_t i = 0; ops.size() < size_t(state.range(0)); ++i) {
    ops.push_back(std::make_shared<Linear>(2, 2));
    ops.push_back(std::make_shared<Bias>(2));
    ops.push_back(std::make_shared<GELU>());
    ops.push_back(std::make_shared<Identity>());
  }
  Sequential seq(ops);
  for (auto _ : state) {
    register_forward_fusion("bump", [](OpList o, const FusionFacts&) { return o; }).unregister();  // no cache hit
    benchmark::DoNotOptimize(seq.fused_lists());
  }
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_FuseLongList)->Arg(1000)->Arg(10000)->Complexity(benchmark::oN)->Unit(benchmark::kMillisecond);

// Per-call overhead: a 10-op Sequential on a 1 x 16 input, forward + backward.
void BM_TinySequential10Ops(benchmark::State& state) {
  Ops ops;
  for (int i = 0; i < 3; ++i) {
    ops.push_back(std::make_shared<Linear>(16, 16));
    ops.push_back(std::make_shared<Bias>(16));
    ops.push_back(std::make_shared<GELU>());
  }
  ops.push_back(std::make_shared<RMSNorm>(16));
  Sequential seq(ops);
  seq.set_fusion_switches(state.range(0) != 0);
  Tensor x = randn({1, 16});
  x.set_requires_grad(true);
  const Tensor target = randn({1, 16});
  for (auto _ : state) {
    backward(mse(seq(x), target));
    x.zero_grad();
    seq.zero_grad();
  }
}
BENCHMARK(BM_TinySequential10Ops)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace fuselab

BENCHMARK_MAIN();

// The three float32 convolution passes (kernels/conv2d.h) on each CPU path, per geometry: oneDNN's
// convolution (FUSELAB_CPU_GEMM=onednn, reorders to and from its blocked layouts included) and
// im2col + OpenBLAS (openblas). The fused forward's bias and GELU ride along on oneDNN as
// post-ops, on im2col as each image's epilogue. Rates in GFLOP/s (2 multiply-add FLOPs).
//
//   FUSELAB_NUM_THREADS=1 bazel-bin/bench/conv_bench --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <vector>

#include "kernels/conv2d.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/host_context.h"

namespace fuselab::kernels::cpu {
namespace {

// batch, in channels, height, width, out channels, kernel h, kernel w, stride, padding
const Conv2dGeometry kGeometries[] = {
    {32, 64, 32, 32, 64, 3, 3, 1, 1},   // fusion_bench's ConvBias
    {32, 3, 32, 32, 32, 3, 3, 1, 1},    // a first layer: 3 input channels
    {32, 64, 16, 16, 128, 1, 1, 1, 0},  // 1x1
    {32, 64, 32, 32, 128, 3, 3, 2, 1},  // stride 2
    {8, 17, 15, 15, 19, 3, 3, 1, 1},    // odd channels and image
};

enum PassIndex { kForward, kBackwardData, kBackwardWeights };

void BM_Conv2d(benchmark::State& state) {
  const Conv2dGeometry& g = kGeometries[state.range(0)];
  const bool onednn = state.range(1);
  const auto pass = PassIndex(state.range(2));
  set_cpu_gemm(onednn ? CpuGemm::Onednn : CpuGemm::OpenBlas);
  std::vector<float> x(size_t(g.batch * g.in_channels * g.in_plane()), 0.5f),
      w(size_t(g.out_channels * g.patch()), 0.1f), b(size_t(g.out_channels), 0.2f),
      y(size_t(g.batch * g.out_channels * g.out_plane()), 0.3f);
  HostContext ctx;
  for (auto _ : state) {
    switch (pass) {
      case kForward:
        Conv2dBiasActivationForward<float>{g, x.data(), w.data(), b.data(), Activation::GELU, nullptr, y.data()}.cpu(
            ctx);
        break;
      case kBackwardData:
        Conv2dBackwardData<float>{g, w.data(), y.data(), x.data()}.cpu(ctx);
        break;
      case kBackwardWeights:
        Conv2dBackwardFilter<float>{g, x.data(), y.data(), w.data()}.cpu(ctx);
        break;
    }
  }
  set_cpu_gemm(std::nullopt);
  state.SetLabel(std::string(onednn ? "onednn " : "im2col+openblas ") + (pass == kForward        ? "forward+bias+gelu"
                                                                         : pass == kBackwardData ? "backward data"
                                                                                                 : "backward weights"));
  state.counters["GFLOPs"] =
      benchmark::Counter(2.0 * g.batch * g.out_channels * g.out_plane() * g.patch(),
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Conv2d)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 0}, {kForward, kBackwardData, kBackwardWeights}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace fuselab::kernels::cpu

BENCHMARK_MAIN();

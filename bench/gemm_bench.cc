// GEMM rate (GFLOP/s) of kernels::cpu::gemm, which FuseLab's Linear ops call, for square float32
// matrices.
//
//   bazel run -c opt //bench:gemm_bench -- --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include "kernels/cpu/gemm.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

void BM_Sgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Tensor a = randn({n, n}), b = randn({n, n});
  Tensor c = zeros({n, n});
  for (auto _ : state) {
    kernels::cpu::gemm<float>(false, true, n, n, n, 1.0f, a.data<float>(), n, b.data<float>(), n, 0.0f,
                              c.data<float>(), n);
  }
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Sgemm)->Arg(256)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace fuselab

BENCHMARK_MAIN();

// GEMM rate (GFLOP/s) of kernels::cpu::gemm, which FuseLab's Linear ops call, beside OpenBLAS's
// cblas_sgemm called directly, for square float32 matrices.
//
//   bazel run -c opt //bench:gemm_bench -- --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <cblas.h>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/openblas.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

template <class Gemm>
void run_sgemm(benchmark::State& state, Gemm&& gemm) {
  const int64_t n = state.range(0);
  const Tensor a = randn({n, n}), b = randn({n, n});
  Tensor c = zeros({n, n});
  for (auto _ : state) gemm(int(n), a.data<float>(), b.data<float>(), c.data<float>());
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

void BM_Sgemm(benchmark::State& state) {
  run_sgemm(state, [](int n, const float* a, const float* b, float* c) {
    kernels::cpu::gemm<float>(false, true, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  });
}

void BM_CblasSgemmDirect(benchmark::State& state) {
  run_sgemm(state, [](int n, const float* a, const float* b, float* c) {
    kernels::cpu::openblas().sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  });
}

BENCHMARK(BM_Sgemm)->Arg(256)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CblasSgemmDirect)->Arg(256)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace fuselab

BENCHMARK_MAIN();

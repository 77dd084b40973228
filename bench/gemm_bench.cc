// GEMM rate (GFLOP/s) of kernels::cpu::gemm, which FuseLab's Linear ops call, beside OpenBLAS's
// cblas_sgemm called directly, for square float32 matrices; oneDNN against OpenBLAS, each called
// directly, on FlashAttention's tile products (where gemm_library's size rule comes from); a
// weight grad accumulated into an existing grad, by a GEMM and an add pass against one GEMM with
// beta = 1 (oneDNN's sum post-op); the MLP block's six GEMMs; and the MoE block's, one by one,
// with 8 experts and with 64, and two of them again with an operand laid out the other way.
//
//   bazel run -c opt //bench:gemm_bench -- --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <cblas.h>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/onednn.h"
#include "kernels/cpu/openblas.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

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

// One product of FlashAttention's CPU kernel on a head's rows where they lie (leading dimension
// 3C = 3 x 4 heads x d): s = q k^T, [64, d] x [d, 64], at head size d = range(0); range(1) 0 runs
// it on OpenBLAS, 1 on oneDNN.
void BM_AttentionTileProduct(benchmark::State& state) {
  const int64_t d = state.range(0), ld = 3 * 4 * d, tile = 64;
  const bool onednn = state.range(1) == 1;
  const Tensor q = randn({tile, ld}), k = randn({tile, ld});
  Tensor s = empty({tile, tile});
  const float *qp = q.data<float>(), *kp = k.data<float>();
  float* sp = s.data<float>();
  for (auto _ : state) {
    if (onednn) {
      const bool ran = kernels::cpu::onednn_matmul<float>({false, true, tile, tile, d, 1.f, 0.f, qp, ld, kp, ld,
                                                           nullptr, nullptr, kernels::Activation::None, sp, tile});
      if (!ran) return state.SkipWithError("oneDNN has no fast matmul for this shape");
    } else {
      kernels::cpu::openblas().sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(tile), int(tile), int(d), 1.0f, qp,
                                     int(ld), kp, int(ld), 0.0f, sp, int(tile));
    }
  }
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * tile * tile * d, benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

// The six GEMMs of one mlp_block forward + backward (//tools:bench), as its Linear ops call them,
// with nothing else: the floor the fused block is measured against. N tokens, H hidden, F = 4H.
//   forward:  h = x W1^T [N, F],  y = h W2^T [N, H]
//   backward: dh = dy W2,  dW2 = dy^T h,  dx = dh W1,  dW1 = dh^T x
// range(2) 1 runs them as GemmShape::Varying (oneDNN's primitive for every shape, as the experts'
// GEMMs run), 0 on each shape's own primitive.
void BM_MlpBlockGemms(benchmark::State& state) {
  const int64_t n = state.range(0), h = state.range(1), f = 4 * h;
  const auto shape = state.range(2) ? kernels::cpu::GemmShape::Varying : kernels::cpu::GemmShape::Recurring;
  const Tensor x = randn({n, h}), w1 = randn({f, h}), w2 = randn({h, f}), dy = randn({n, h});
  Tensor hidden = empty({n, f}), y = empty({n, h}), dh = empty({n, f}), dx = empty({n, h});
  Tensor dw1 = empty({f, h}), dw2 = empty({h, f});
  auto gemm = [&](bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    kernels::cpu::gemm<float>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, shape);
  };
  for (auto _ : state) {
    gemm(false, true, n, f, h, 1, x.data<float>(), h, w1.data<float>(), h, 0, hidden.data<float>(), f);
    gemm(false, true, n, h, f, 1, hidden.data<float>(), f, w2.data<float>(), f, 0, y.data<float>(), h);
    gemm(false, false, n, f, h, 1, dy.data<float>(), h, w2.data<float>(), f, 0, dh.data<float>(), f);
    gemm(true, false, h, f, n, 1, dy.data<float>(), h, hidden.data<float>(), f, 0, dw2.data<float>(), f);
    gemm(false, false, n, h, f, 1, dh.data<float>(), f, w1.data<float>(), h, 0, dx.data<float>(), h);
    gemm(true, false, f, h, n, 1, dh.data<float>(), f, x.data<float>(), h, 0, dw1.data<float>(), h);
  }
  state.counters["GFLOPs"] = benchmark::Counter(6 * 2.0 * n * h * f, benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

// One of the MoE block's six grouped GEMMs (//tools:bench --model moe_block: 4096 tokens, top-2,
// width 256, expert hidden 512) over E experts of equal rows, as the GroupedLinears call them
// (math::grouped_matmul_into): per expert, range(1) picks
//   0: u = x W1^T [rows, 1024]   1: y = a W2^T [rows, 256]   (forward)
//   2: da = dy W2   3: dW2 = dy^T a   4: dx = du W1   5: dW1 = du^T x   (backward)
// With 64 experts each has 128 rows and the weights are 100 MB, against 1024 rows and 12.5 MB.
void BM_ExpertGemm(benchmark::State& state) {
  const int64_t experts = state.range(0), gemm = state.range(1);
  const int64_t rows = 8192, width = 256, hidden = 512;
  const std::vector<int64_t> sizes(size_t(experts), rows / experts);
  const Tensor x = randn({rows, width}), w1 = randn({experts, 2 * hidden, width}), a = randn({rows, hidden}),
               w2 = randn({experts, width, hidden}), dy = randn({rows, width}), du = randn({rows, 2 * hidden});
  struct Product {
    Tensor a, w;
    bool weight_grad, transpose_w;
    Shape out;
  };
  const Product products[] = {{x, w1, false, true, {rows, 2 * hidden}},  {a, w2, false, true, {rows, width}},
                              {dy, w2, false, false, {rows, hidden}},    {dy, a, true, false, {experts, width, hidden}},
                              {du, w1, false, false, {rows, width}},     {du, x, true, false, {experts, 2 * hidden, width}}};
  const Product& p = products[gemm];
  const Tensor out = empty(p.out);
  for (auto _ : state) math::grouped_matmul_into(out, p.a, p.w, p.weight_grad, p.transpose_w, sizes);
  const double flops = 2.0 * double(rows) * double(gemm == 0 || gemm >= 4 ? 2 * hidden * width : hidden * width);
  state.counters["GFLOPs"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

// Two of the experts' products with each operand's layout both ways, the experts' GEMMs in
// parallel one per thread (as the grouped kernels run them), every expert's operands its own:
// range(1) 0 is u [rows, 1024] = x W1^T, 1 dW1 [1024, 256] = du^T x, and range(2) 0 the layout
// the grouped kernels have (W1 [1024, 256] read transposed; du [rows, 1024] read transposed),
// 1 the other (u^T = W1 x^T from x^T; du^T given): whether a layout would close the gap between
// 64 experts of 128 rows and 8 of 1024.
void BM_ExpertGemmLayout(benchmark::State& state) {
  const int64_t experts = state.range(0), rows = 8192 / experts, wide = 1024, narrow = 256;
  const bool grad = state.range(1) == 1, other = state.range(2) == 1;
  // Per expert: a [rows, narrow] (x), b [wide, narrow] (W1), or for dW1 a [rows, wide] (du), b [rows, narrow] (x).
  const Tensor a = randn({experts, rows, grad ? wide : narrow}), b = randn({experts, grad ? rows : wide, narrow});
  const Tensor out = empty({experts, grad ? wide * narrow : rows * wide});
  const float *pa = a.data<float>(), *pb = b.data<float>();
  float* pc = out.data<float>();
  const int64_t a_size = a.numel() / experts, b_size = b.numel() / experts, c_size = out.numel() / experts;
  using kernels::cpu::GemmShape;
  for (auto _ : state) {
#pragma omp parallel for schedule(dynamic)
    for (int64_t g = 0; g < experts; ++g) {
      const float *ag = pa + g * a_size, *bg = pb + g * b_size;
      float* cg = pc + g * c_size;
      if (!grad && !other) {  // u = x W1^T
        kernels::cpu::gemm<float>(false, true, rows, wide, narrow, 1, ag, narrow, bg, narrow, 0, cg, wide,
                                  GemmShape::Varying);
      } else if (!grad) {  // u^T = W1 x^T, with a read as x^T [narrow, rows]
        kernels::cpu::gemm<float>(false, false, wide, rows, narrow, 1, bg, narrow, ag, rows, 0, cg, rows,
                                  GemmShape::Varying);
      } else if (!other) {  // dW1 = du^T x
        kernels::cpu::gemm<float>(true, false, wide, narrow, rows, 1, ag, wide, bg, narrow, 0, cg, narrow,
                                  GemmShape::Varying);
      } else {  // dW1 = (du^T) x, with a read as du^T [wide, rows]
        kernels::cpu::gemm<float>(false, false, wide, narrow, rows, 1, ag, rows, bg, narrow, 0, cg, narrow,
                                  GemmShape::Varying);
      }
    }
  }
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * 8192 * wide * narrow,
                                                benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

// grad += dy^T x for a Linear [out, in] over `rows` rows, as the second micro-batch of a step adds
// its weight grad: range(3) 0 makes dW and adds it in a second pass (a new tensor, as before),
// 1 adds in the GEMM (math::matmul_add_into).
void BM_WeightGradAccumulation(benchmark::State& state) {
  const int64_t rows = state.range(0), in = state.range(1), out = state.range(2);
  const bool in_gemm = state.range(3) == 1;
  const Tensor x = randn({rows, in}), dy = randn({rows, out});
  Tensor grad = randn({out, in});
  for (auto _ : state) {
    if (in_gemm) {
      math::matmul_add_into(grad, dy, true, x, false);
    } else {
      grad = math::binary(math::BinaryOp::Add, grad, math::matmul(dy, true, x, false));
    }
  }
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * rows * in * out, benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

BENCHMARK(BM_WeightGradAccumulation)
    ->ArgNames({"rows", "in", "out", "in_gemm"})
    ->ArgsProduct({{128}, {1024}, {1024}, {0, 1}})
    ->ArgsProduct({{128}, {784}, {1024}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_AttentionTileProduct)
    ->ArgNames({"d", "onednn"})
    ->ArgsProduct({{16, 32, 48, 64, 128}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_MlpBlockGemms)
    ->ArgNames({"tokens", "hidden", "varying"})
    ->ArgsProduct({{256, 4096}, {256}, {0, 1}})
    ->Args({4096, 1024, 0})
    ->Args({4096, 1024, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ExpertGemm)
    ->ArgNames({"experts", "gemm"})
    ->ArgsProduct({{8, 64}, {0, 1, 2, 3, 4, 5}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ExpertGemmLayout)
    ->ArgNames({"experts", "gemm", "other_layout"})
    ->ArgsProduct({{8, 64}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Sgemm)
    ->Arg(32)
    ->Arg(64)
    ->Arg(128)
    ->Arg(256)
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_CblasSgemmDirect)
    ->Arg(32)
    ->Arg(64)
    ->Arg(128)
    ->Arg(256)
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace fuselab

BENCHMARK_MAIN();

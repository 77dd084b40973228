// The table of op cases (op_cases.h; the builder is op_case.h). Shapes and why they are there:
// - a small case of each op for finite differences;
// - 1 element, sizes just off a power of two (255, 257) and not a multiple of a vector width, so
//   every scalar tail and every block's edge is taken;
// - more than 256 rows (300) and more than 256 x 256 rows (70000), which take the two levels of
//   the CUDA column sums (bias grads, broadcast grads, norm weight grads);
// - broadcasting of both operands as NumPy does, and an empty tensor.
#include "tests/op_cases.h"

#include <algorithm>
#include <utility>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/attention.h"
#include "ops/basic/bias.h"
#include "ops/basic/channel_bias.h"
#include "ops/basic/constant_scale.h"
#include "ops/basic/conv2d.h"
#include "ops/basic/cross_entropy.h"
#include "ops/basic/dropout.h"
#include "ops/basic/embedding.h"
#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/grouped_linear.h"
#include "ops/basic/identity.h"
#include "ops/basic/l2_normalization.h"
#include "ops/basic/layernorm.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/moe_permute.h"
#include "ops/basic/position_embedding.h"
#include "ops/basic/reshape.h"
#include "ops/basic/rmsnorm.h"
#include "ops/basic/rotary_embedding.h"
#include "ops/basic/router.h"
#include "ops/basic/softmax.h"
#include "tensor/factories.h"

namespace fuselab::testing {

namespace {

// Causal scores are -inf above the diagonal, which no loss can weigh, so the causal case runs
// AttentionScores into Softmax; outputs: the probabilities, then qkv (the extra output).
CaseFunction causal_probabilities(AttentionHeads heads) {
  return [heads](const Inputs& x) {
    Sequential seq({std::make_shared<AttentionScores>(heads, true), std::make_shared<Softmax>()});
    const SequentialOutput out = seq(x[0], {});
    Outputs outputs{out.output};
    outputs.insert(outputs.end(), out.extra_outputs.begin(), out.extra_outputs.end());
    return outputs;
  };
}

// GroupedLinear over x [..., in] and W [G, out, in] (the case's inputs) with the groups' sizes
// fixed by the case, as they must sum to the rows: groups without rows, every row in one group.
// With a third input, it is the bias [G, out].
CaseFunction grouped_linear(std::vector<int64_t> sizes) {
  return [sizes](const Inputs& x) {
    const int64_t groups = int64_t(sizes.size());
    auto grouped = std::make_shared<GroupedLinear>(groups, x[0].size(-1), x[1].size(1), nullptr, x.size() == 3);
    grouped->weight() = x[1];
    if (x.size() == 3) grouped->bias() = x[2];
    Sequential seq({grouped});
    return Outputs{seq(x[0], {from_vector<int64_t>(sizes, {groups}, x[0].device())}).output};
  };
}

// Router over x and W (the inputs); outputs: x passed on, the routing weights and, with losses,
// the two auxiliary losses (the indices, integers, are not compared).
CaseFunction router(int64_t experts, int64_t top_k, RouterScore score, bool losses = false) {
  return [=](const Inputs& x) {
    auto op = std::make_shared<Router>(x[0].size(-1), experts, top_k, score, nullptr, losses);
    op->weight() = x[1];
    Sequential seq({op});
    const SequentialOutput out = seq(x[0], {});
    Outputs outputs{out.output, out.extra_outputs.at(0)};
    if (losses) outputs.insert(outputs.end(), {out.extra_outputs.at(2), out.extra_outputs.at(3)});
    return outputs;
  };
}

// MoEPermute over x and the expert indices; output: the rows in expert order.
CaseFunction moe_permute(int64_t experts, int64_t top_k, double capacity_factor = 0) {
  return [=](const Inputs& x) {
    Sequential seq({std::make_shared<MoEPermute>(experts, top_k, capacity_factor)});
    return Outputs{seq(x[0], {x[1]}).output};
  };
}

// MoEUnpermute over the experts' outputs and the routing weights, with slots fixed by the case (a
// permutation, as MoEPermute gives).
CaseFunction moe_unpermute(std::vector<int64_t> slots, int64_t top_k) {
  return [=](const Inputs& x) {
    Sequential seq({std::make_shared<MoEUnpermute>(top_k)});
    const Tensor slot_ids = from_vector<int64_t>(slots, x[1].shape(), x[0].device());
    return Outputs{seq(x[0], {x[1], slot_ids}).output};
  };
}

using Add = std::function<void(OpCase)>;
using Shapes = std::vector<Shape>;
using Unary = Tensor (*)(const Tensor&);
using Binary = Tensor (*)(const Tensor&, const Tensor&);
template <class Fn>
using Named = std::vector<std::pair<const char*, Fn>>;

// Sizes of one dim for elementwise ops: one element, around a block of 256, and many blocks.
const int64_t kLengths[] = {1, 255, 257, 100003};
// [rows, cols] of row-wise ops (norms, bias): see the top of the file.
const Shapes kRowShapes = {{1, 1}, {7, 1000}, {300, 4099}, {70000, 3}};

// float32 sums over many rows (a bias grad, the grad of a broadcast operand) drift from float64
// by more than 1e-5 of the sum past about 10000 rows.
// A float32 sum over the rows (a bias or norm weight grad) drifts from float64 with the row count:
// over 300 rows by up to 1.4e-5, over 70000 by up to 2.2e-5 in some summation orders (the ASan
// build, whose loops are not vectorized, sums in another order than the optimized one).
double float32_tolerance(const Shape& shape) { return shape[0] > 10000 ? 1e-4 : shape[0] > 100 ? 3e-5 : 1e-5; }

void matmul_cases(const Add& add) {
  add(op("matmul").input({3, 4}).input({4, 5}).bfloat16().runs(binary(matmul)));
  add(op("matmul").input({2, 3, 4}).input({2, 4, 2}).bfloat16().runs(binary(matmul)));
  for (const auto& [m, k, n] : {std::tuple{1, 1, 1}, {33, 65, 17}, {257, 300, 129}, {37, 64, 48}}) {
    add(op("matmul").input({m, k}).input({k, n}).bfloat16().runs(binary(matmul)));
    add(op("matmul").input({3, m, k}).input({3, k, n}).bfloat16().runs(binary(matmul)));
  }
  for (const Shape& s : {Shape{2, 3, 4}, Shape{1, 1}, Shape{33, 65}, Shape{3, 100, 7}, Shape{2, 1000, 300}}) {
    add(op("transpose").input(s).runs(unary(transpose)));
  }
}

// Each pair of operand shapes runs add, sub, mul and div; b is kept away from 0 for div.
void binary_cases(const Add& add) {
  std::vector<std::pair<Shape, Shape>> pairs = {
      // b of a's shape, a row, a scalar of rank 0 and of rank 1
      {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{3, 4}, {}}, {{3, 4}, {1}},
      // NumPy broadcasting of both operands
      {{3, 1}, {1, 4}}, {{}, {3, 4}}, {{1, 4}, {3, 4}}, {{3, 4}, {1, 4}}, {{3, 4}, {3, 1}}, {{4}, {3, 4}},
      {{2, 1, 4}, {3, 1}}, {{1}, {}}, {{2, 3, 4}, {3, 4}}, {{1, 3, 1}, {2, 1, 5}},
      // the same on the device kernels' sizes, and an empty a
      {{300, 1}, {1, 257}}, {{}, {3, 257}}, {{1, 257}, {300, 257}}, {{300, 257}, {300, 1}}, {{2, 1, 33}, {70, 1}},
      {{0, 4}, {4}}, {{0, 4}, {0, 4}}};
  for (const Shape& a : {Shape{1, 1}, Shape{3, 257}, Shape{300, 1000}, Shape{70000, 3}}) {
    for (const Shape& b : {a, Shape{a[1]}, Shape{1}}) {
      if (std::find(pairs.begin(), pairs.end(), std::pair{a, b}) == pairs.end()) pairs.push_back({a, b});
    }
  }
  for (const auto& [name, fn] : Named<Binary>{{"add", fuselab::add}, {"sub", sub}, {"mul", mul}, {"div", div}}) {
    for (const auto& [a, b] : pairs) {
      const double float32 = a.empty() ? 1e-5 : float32_tolerance(a);
      add(op(name).input(a).input(b, 0.5, 1.5).bfloat16().float32_within(float32).runs(binary(fn)));
    }
  }
}

void elementwise_cases(const Add& add) {
  for (const auto& [name, fn] : Named<Unary>{{"relu", relu}, {"gelu", gelu}, {"silu", silu}}) {
    add(op(name).input({4, 5}, -3, 3).bfloat16().runs(unary(fn)));
    for (int64_t n : kLengths) add(op(name).input({n}, -3, 3).bfloat16().runs(unary(fn)));
  }
  add(op("scale").input({5}).bfloat16().runs([](const Inputs& x) { return Outputs{scale(x[0], -2.5)}; }));
  for (int64_t n : kLengths) {
    add(op("scale").input({n}, -3, 3).bfloat16().runs([](const Inputs& x) { return Outputs{scale(x[0], -0.37)}; }));
  }
  // float32 -> float64 and back: linear, so a step of 1e-2 is exact but for float32's rounding.
  for (const Shape& s : {Shape{3, 4}, Shape{300, 257}}) {
    add(op("cast").input(s).bfloat16().finite_differences(1e-2, 1e-5).runs([](const Inputs& x) {
      return Outputs{cast(cast(x[0], DType::Float32), x[0].dtype())};
    }));
  }
  // x used twice: the grads of both views add up.
  add(op("reshape").input({2, 6}).named("to_4x3_squared").bfloat16().runs([](const Inputs& x) {
    return Outputs{mul(reshape(x[0], {4, 3}), reshape(x[0], {4, 3}))};
  }));
  add(op("reshape").input({2, 6}).named("to_3_by_any").bfloat16().runs([](const Inputs& x) {
    return Outputs{reshape(x[0], {3, -1})};
  }));
}

void reduction_cases(const Add& add) {
  for (const auto& [name, fn] : Named<Unary>{{"sum", sum}, {"mean", mean}}) {
    add(op(name).input({2, 3, 4}).bfloat16().runs(unary(fn)));
    for (int64_t n : kLengths) add(op(name).input({n}, -3, 3).bfloat16().runs(unary(fn)));
  }
  for (const auto& [name, fn] : Named<Unary>{{"sum_last_dim", sum_last_dim}, {"mean_last_dim", mean_last_dim}}) {
    for (const Shape& s : {Shape{2, 3, 4}, Shape{1, 1}, Shape{33, 65}, Shape{3, 100, 7}, Shape{2, 1000, 300}}) {
      add(op(name).input(s).runs(unary(fn)));
    }
  }
  for (const auto& [name, fn] : Named<Unary>{{"softmax", softmax}, {"log_softmax", log_softmax}}) {
    add(op(name).input({3, 5}, -4, 4).bfloat16().runs(unary(fn)));
    for (const Shape& s : {Shape{1, 1}, Shape{37, 29}, Shape{300, 1000}}) {
      add(op(name).input(s, -3, 3).bfloat16().runs(unary(fn)));
    }
  }
}

void loss_and_lookup_cases(const Add& add) {
  const auto cross_entropy_of = [](const Inputs& x) { return Outputs{cross_entropy(x[0], x[1])}; };
  add(op("cross_entropy").input({4, 3}, -2, 2).labels({4}, 3).bfloat16().compute_dtype_outputs().runs(cross_entropy_of));
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {37, 29}, {300, 1000}}) {
    add(op("cross_entropy").input({rows, cols}, -3, 3).labels({rows}, cols).bfloat16().compute_dtype_outputs().runs(cross_entropy_of));
  }
  // The op over logits [..., V]: rows of one class, leading dims that flatten, and many rows of a
  // wide vocabulary (every fifth label ignored, as in the function's cases).
  add(op("CrossEntropy").input({4, 3}, -2, 2).labels({4}, 3).bfloat16().compute_dtype_outputs().runs(basic<CrossEntropy>()));
  add(op("CrossEntropy").input({2, 3, 5}, -3, 3).labels({2, 3}, 5).bfloat16().compute_dtype_outputs().runs(basic<CrossEntropy>()));
  add(op("CrossEntropy").input({1, 1}).labels({1}, 1).named("one_class").bfloat16().compute_dtype_outputs().runs(basic<CrossEntropy>()));
  add(op("CrossEntropy").input({3, 100, 257}, -3, 3).labels({3, 100}, 257).bfloat16().compute_dtype_outputs().runs(basic<CrossEntropy>()));
  for (const Shape& s : {Shape{2, 3}, Shape{1, 1}, Shape{33, 65}, Shape{3, 100, 7}, Shape{2, 1000, 300}}) {
    add(op("mse").input(s).input(s).bfloat16().runs(binary(mse)));
  }
  // More ids than rows, so some repeat and their grads add up.
  add(op("embedding").input({5, 3}).ids({2, 3}, 5).bfloat16().runs(binary(embedding)));
  add(op("embedding").input({50, 9}).ids({5, 7}, 50).bfloat16().runs(binary(embedding)));
}

// Basic ops: the input, then the extra inputs, then the parameters.
void basic_op_cases(const Add& add) {
  add(op("Linear").input({2, 3, 4}).input({3, 4}).bfloat16().runs(basic<Linear>(4, 3)));
  for (const auto& [rows, in, out] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {33, 24, 37}, {33, 24, 64}, {300, 64, 48}}) {
    add(op("Linear").input({rows, in}).input({out, in}).bfloat16().runs(basic<Linear>(in, out)));
  }
  add(op("GroupedLinear").input({5, 4}).input({3, 3, 4}).bfloat16().runs(grouped_linear({2, 0, 3})));
  add(op("GroupedLinear").input({2, 3, 4}).input({2, 3, 4}).bfloat16().named("all_rows_in_one").runs(grouped_linear({0, 6})));
  add(op("GroupedLinear").input({1, 4}).input({1, 2, 4}).bfloat16().runs(grouped_linear({1})));
  // Groups of equal sizes: on CUDA one cuBLAS group of several products (kernels/cuda/gemm.h).
  add(op("GroupedLinear").input({10, 4}).input({4, 3, 4}).bfloat16().named("equal_sizes").runs(
      grouped_linear({2, 3, 2, 3})));
  add(op("GroupedLinear").input({300, 33}).input({4, 17, 33}).bfloat16().runs(grouped_linear({100, 0, 150, 50})));
  add(op("GroupedLinear").input({5, 4}).input({3, 3, 4}).input({3, 3}).named("bias").bfloat16().runs(grouped_linear({2, 0, 3})));
  add(op("GroupedLinear").input({300, 33}).input({4, 17, 33}).input({4, 17}).named("bias").bfloat16().runs(
      grouped_linear({100, 0, 150, 50})));
  add(op("Router").input({5, 4}).input({4, 4}).bfloat16().runs(router(4, 2, RouterScore::Softmax)));
  add(op("Router").input({2, 3, 4}).input({3, 4}).named("all_experts").bfloat16().runs(router(3, 3, RouterScore::Softmax)));
  add(op("Router").input({5, 4}).input({4, 4}).named("sigmoid").bfloat16().runs(router(4, 1, RouterScore::Sigmoid)));
  add(op("Router").input({5, 4}).input({4, 4}).named("softmax_all").bfloat16().runs(router(4, 2, RouterScore::SoftmaxAll)));
  add(op("Router").input({6, 4}).input({3, 4}).named("softmax_all_top1_losses").bfloat16().runs(router(3, 1, RouterScore::SoftmaxAll, true)));
  add(op("Router").input({300, 16}).input({8, 16}).bfloat16().runs(router(8, 2, RouterScore::Softmax)));
  add(op("Router").input({6, 4}).input({4, 4}).named("losses").bfloat16().runs(router(4, 2, RouterScore::Softmax, true)));
  add(op("Router").input({6, 4}).input({3, 4}).named("sigmoid_losses").bfloat16().runs(router(3, 1, RouterScore::Sigmoid, true)));
  add(op("MoEPermute").input({5, 4}).ids({5, 2}, 3).bfloat16().runs(moe_permute(3, 2)));
  add(op("MoEPermute").input({300, 16}).ids({300, 2}, 8).bfloat16().runs(moe_permute(8, 2)));
  add(op("MoEUnpermute").input({6, 4}).input({3, 2}).bfloat16().runs(moe_unpermute({4, 0, 5, 1, 2, 3}, 2)));
  add(op("MoEUnpermute").input({3, 4}).input({3, 1}).named("top_1").bfloat16().runs(moe_unpermute({2, 0, 1}, 1)));
  // A capacity of ceil(0.5 * 300 * 2 / 8) = 38 copies an expert: most experts drop some.
  add(op("MoEPermute").input({300, 16}).ids({300, 2}, 8).named("capacity").bfloat16().runs(moe_permute(8, 2, 0.5)));
  add(op("MoEUnpermute").input({3, 4}).input({2, 2}).named("dropped").bfloat16().runs(moe_unpermute({2, -1, 0, 1}, 2)));
  add(op("Bias").input({4, 3}).input({3}).bfloat16().runs(basic<Bias>(3)));
  for (const Shape& s : {Shape{1, 1}, Shape{3, 257}, Shape{300, 1000}, Shape{70000, 3}}) {
    add(op("Bias").input(s).input({s[1]}).bfloat16().float32_within(float32_tolerance(s)).runs(basic<Bias>(s[1])));
  }
  for (const Shape& s : {Shape{3, 7}, Shape{37, 130}, Shape{100003}}) {
    add(op("ReLU").input(s, -3, 3).bfloat16().runs(basic<ReLU>()));
    add(op("GELU").input(s, -3, 3).bfloat16().runs(basic<GELU>()));
    add(op("SiLU").input(s, -3, 3).bfloat16().runs(basic<SiLU>()));
    add(op("Sigmoid").input(s, -3, 3).bfloat16().runs(basic<Sigmoid>()));
    add(op("QGELU").input(s, -3, 3).bfloat16().runs(basic<QGELU>()));
    add(op("SReLU").input(s, -3, 3).bfloat16().runs(basic<SReLU>()));
  }
  for (const Shape& s : {Shape{3, 6}, Shape{1, 2}, Shape{37, 130}, Shape{3000, 64}}) {
    add(op("SwiGLU").input(s).bfloat16().runs(basic<SwiGLU>()));
    add(op("GLU").input(s).bfloat16().runs(basic<GLU>()));
    add(op("ReGLU").input(s).bfloat16().runs(basic<ReGLU>()));
    add(op("GEGLU").input(s).bfloat16().runs(basic<GEGLU>()));
    add(op("QGEGLU").input(s).bfloat16().runs(basic<QGEGLU>()));
    add(op("SReGLU").input(s).bfloat16().runs(basic<SReGLU>()));
    add(op("ScaledSwiGLU").input(s).input({s[0]}, 0, 1).bfloat16().runs(basic<ScaledSwiGLU>()));
    add(op("ScaledGLU").input(s).input({s[0]}, 0, 1).bfloat16().runs(basic<ScaledGLU>()));
    add(op("ScaledReGLU").input(s).input({s[0]}, 0, 1).bfloat16().runs(basic<ScaledReGLU>()));
    add(op("ScaledGEGLU").input(s).input({s[0]}, 0, 1).bfloat16().runs(basic<ScaledGEGLU>()));
    add(op("ScaledQGEGLU").input(s).input({s[0]}, 0, 1).bfloat16().runs(basic<ScaledQGEGLU>()));
    add(op("ScaledSReGLU").input(s).input({s[0]}, 0, 1).bfloat16().runs(basic<ScaledSReGLU>()));
    add(op("Dropout").input(s).runs(basic<Dropout>(0.3, uint64_t(11))));  // a fresh op: the same mask each call
  }
  for (const Shape& s : Shapes{{3, 5}, kRowShapes[0], kRowShapes[1], kRowShapes[2], kRowShapes[3]}) {
    const double float32 = float32_tolerance(s);
    add(op("RMSNorm").input(s).input({s[1]}).bfloat16().float32_within(float32).runs(basic<RMSNorm>(s[1])));
    add(op("L2Normalization").input(s).bfloat16().float32_within(float32).runs(basic<L2Normalization>()));
    // Rows of 3 elements whose variance is small make rstd large and dx ill-conditioned.
    add(op("LayerNorm")
            .input(s)
            .input({s[1]})
            .input({s[1]})
            .bfloat16()
            .float32_within(s[1] == 3 ? 1e-3 : float32)
            .runs(basic<LayerNorm>(s[1])));
  }
  // The weight stored as gamma - 1: the norms scale by 1 + w.
  add(op("RMSNorm").named("zero_centered_gamma").input({37, 130}).input({130}).bfloat16().runs(basic<RMSNorm>(130, 1e-6, true)));
  add(op("LayerNorm")
          .named("zero_centered_gamma")
          .input({37, 130})
          .input({130})
          .input({130})
          .bfloat16()
          .runs(basic<LayerNorm>(130, 1e-5, true)));
  for (const Shape& s : {Shape{2, 3}, Shape{300, 257}}) {
    add(op("AddExtraInput").input(s).input(s).bfloat16().runs(basic<AddExtraInput>()));
    add(op("MakeExtraOutput").input(s).bfloat16().runs(basic<MakeExtraOutput>()));
  }
  for (const Shape& s : {Shape{2, 6}, Shape{257}}) {
    add(op("ConstantScale").input(s).bfloat16().runs(basic<ConstantScale>(-1.5)));
    add(op("Identity").input(s).bfloat16().runs(basic<Identity>()));
  }
  add(op("Reshape").input({2, 6}).named("to_4x3").bfloat16().runs(basic<Reshape>(Shape{4, 3})));
  add(op("Reshape").input({2, 6}).named("to_3_by_any").bfloat16().runs(basic<Reshape>(Shape{3, -1})));
  add(op("Embedding").ids({6}, 4).input({4, 3}).bfloat16().runs(basic<Embedding>(4, 3)));
  add(op("Embedding").ids({300, 8}, 27).input({27, 300}).bfloat16().runs(basic<Embedding>(27, 300)));
  // x [batch, T, width] and the table [context, width]: T below the context (the rows past T get
  // no grad), T equal to it, and more than 256 rows for the column sums.
  add(op("PositionEmbedding").input({2, 3, 4}).input({5, 4}).named("short").bfloat16().runs(basic<PositionEmbedding>(5, 4)));
  add(op("PositionEmbedding").input({2, 5, 4}).input({5, 4}).bfloat16().runs(basic<PositionEmbedding>(5, 4)));
  add(op("PositionEmbedding").input({300, 3, 7}).input({3, 7}).bfloat16().runs(basic<PositionEmbedding>(3, 7)));
  for (const Shape& s : {Shape{3, 7}, Shape{2, 3, 5, 5}, Shape{37, 257}}) add(op("Softmax").input(s, -3, 3).bfloat16().runs(basic<Softmax>()));
  // qkv [batch, tokens, (heads + 2 kv_heads) head_dim]: two heads, T = 1, one head, T not a
  // multiple of a vector width, a longer sequence; then grouped-query (4 heads over 2 kv heads) and
  // multi-query (3 heads over 1) attention.
  struct Attention {
    int64_t batch, tokens, heads, kv_heads, head_dim;
  };
  for (const Attention a : {Attention{2, 5, 2, 2, 3}, Attention{1, 1, 1, 1, 4}, Attention{1, 7, 1, 1, 2},
                            Attention{2, 67, 3, 3, 8}, Attention{2, 5, 4, 2, 3}, Attention{1, 9, 3, 1, 4}}) {
    const AttentionHeads heads{a.heads, a.kv_heads};
    const Shape qkv{a.batch, a.tokens, heads.columns() * a.head_dim}, probs{a.batch, a.heads, a.tokens, a.tokens};
    add(op("AttentionScores").input(qkv).bfloat16().runs(basic<AttentionScores>(heads, false)));
    add(op("AttentionScores").input(qkv).named("causal_then_softmax").bfloat16().runs(causal_probabilities(heads)));
    add(op("AttentionValues").input(probs, 0, 1).input(qkv).bfloat16().runs(basic<AttentionValues>(heads)));
    if (a.head_dim % 2 == 0) add(op("RotaryEmbedding").input(qkv).bfloat16().runs(basic<RotaryEmbedding>(heads)));
  }
  add(op("RotaryEmbedding").input({1, 3, 3 * 4}).named("theta_100").bfloat16().runs(basic<RotaryEmbedding>(1, 100.0)));
}

// Conv2d and ChannelBias on NCHW inputs: 1x1 kernels, stride 2 with odd images, padding wider
// than the stride, a kernel as large as the padded image; then sizes for cuDNN.
void convolution_cases(const Add& add) {
  struct Geometry {
    int64_t batch, in_channels, out_channels, height, width, kernel, stride, padding;
  };
  const Geometry geometries[] = {
      {2, 3, 4, 5, 6, 3, 1, 1}, {1, 2, 3, 7, 5, 3, 2, 1}, {3, 4, 2, 4, 4, 1, 1, 0},
      {2, 1, 2, 3, 3, 3, 1, 0}, {1, 2, 2, 5, 5, 2, 2, 2}, {2, 2, 1, 1, 2, 3, 1, 1},
      // for cuDNN
      {2, 3, 5, 9, 7, 3, 1, 1}, {1, 16, 33, 17, 19, 3, 2, 1}, {3, 4, 8, 6, 6, 1, 1, 0}};
  for (const Geometry& g : geometries) {
    add(op("Conv2d")
            .input({g.batch, g.in_channels, g.height, g.width})
            .input({g.out_channels, g.in_channels, g.kernel, g.kernel})
            .named("kernel" + std::to_string(g.kernel) + "_stride" + std::to_string(g.stride) + "_pad" +
                   std::to_string(g.padding))
            .runs(basic<Conv2d>(g.in_channels, g.out_channels, g.kernel, g.stride, g.padding)));
  }
  for (const Shape& s : Shapes{{2, 3, 4, 4}, {2, 3, 5}, {2, 5, 9, 7}, {1, 33, 9, 10}, {3, 8, 6, 6}}) {
    add(op("ChannelBias").input(s).input({s[1]}).runs(basic<ChannelBias>(s[1])));
  }
}

// A dim of size 0: empty outputs and grads, and no kernel that reads or writes past them (the
// mean of zero rows, cross_entropy's included, is NaN by design and left out).
void empty_cases(const Add& add) {
  add(op("relu").input({0}).bfloat16().runs(unary(relu)));
  add(op("gelu").input({0, 3}).bfloat16().runs(unary(gelu)));
  add(op("sum").input({0, 3}).bfloat16().runs(unary(sum)));
  add(op("sum_last_dim").input({0, 3}).runs(unary(sum_last_dim)));
  add(op("transpose").input({0, 3}).runs(unary(transpose)));
  add(op("softmax").input({0, 5}).bfloat16().runs(unary(softmax)));
  add(op("matmul").input({0, 4}).input({4, 5}).bfloat16().runs(binary(matmul)));
  add(op("matmul").input({3, 0}).input({0, 5}).bfloat16().runs(binary(matmul)));
  add(op("mse").input({0, 3}).input({0, 3}).bfloat16().runs(binary(mse)));
  add(op("Linear").input({0, 4}).input({3, 4}).bfloat16().runs(basic<Linear>(4, 3)));
  add(op("GroupedLinear").input({0, 4}).input({2, 3, 4}).bfloat16().runs(grouped_linear({0, 0})));
  add(op("Bias").input({0, 3}).input({3}).bfloat16().runs(basic<Bias>(3)));
  add(op("RMSNorm").input({0, 5}).input({5}).bfloat16().runs(basic<RMSNorm>(5)));
  add(op("L2Normalization").input({0, 5}).bfloat16().runs(basic<L2Normalization>()));
  add(op("LayerNorm").input({0, 5}).input({5}).input({5}).bfloat16().runs(basic<LayerNorm>(5)));
  add(op("SwiGLU").input({0, 6}).bfloat16().runs(basic<SwiGLU>()));
  add(op("ScaledSwiGLU").input({0, 6}).input({0}).bfloat16().runs(basic<ScaledSwiGLU>()));
  add(op("ScaledGEGLU").input({2, 3, 6}).input({2, 3}, -1, 1).bfloat16().runs(basic<ScaledGEGLU>()));
  add(op("Dropout").input({0, 6}).runs(basic<Dropout>(0.3, uint64_t(11))));
  add(op("Embedding").ids({0}, 4).input({4, 3}).bfloat16().runs(basic<Embedding>(4, 3)));
  add(op("PositionEmbedding").input({0, 3, 4}).input({5, 4}).bfloat16().runs(basic<PositionEmbedding>(5, 4)));
  add(op("embedding").input({5, 3}).ids({0}, 5).bfloat16().runs(binary(embedding)));
  add(op("ChannelBias").input({0, 3, 4}).input({3}).runs(basic<ChannelBias>(3)));
}

std::vector<OpCase> make_table() {
  std::vector<OpCase> cases;
  const Add add = [&](OpCase c) { cases.push_back(std::move(c)); };
  matmul_cases(add);
  binary_cases(add);
  elementwise_cases(add);
  reduction_cases(add);
  loss_and_lookup_cases(add);
  basic_op_cases(add);
  convolution_cases(add);
  empty_cases(add);
  return cases;
}

}  // namespace

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = make_table();
  return cases;
}

}  // namespace fuselab::testing

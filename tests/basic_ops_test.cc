// Every basic op's forward against the functional API (or a formula), and what the op-case table
// (op_cases.cc, whose harness checks every grad on every device) does not: initialization, dropout's
// mask, embedding's scatter-add, and bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/bias.h"
#include "ops/basic/constant_scale.h"
#include "ops/basic/dropout.h"
#include "ops/basic/embedding.h"
#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/grouped_linear.h"
#include "ops/basic/identity.h"
#include "ops/basic/l2_normalization.h"
#include "ops/basic/layernorm.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/reshape.h"
#include "ops/basic/rmsnorm.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::random_tensor;

Tensor x64(const Shape& shape, uint64_t seed = 1) { return random_tensor(shape, DType::Float64, seed); }

void expect_same(const Tensor& a, const Tensor& b, double tol = 1e-12) {
  const auto av = a.to(DType::Float64).to_vector<double>(), bv = b.to(DType::Float64).to_vector<double>();
  ASSERT_EQ(av.size(), bv.size());
  for (size_t i = 0; i < av.size(); ++i) EXPECT_NEAR(av[i], bv[i], tol) << i;
}

TEST(BasicOps, LinearIsXTimesWeightTransposed) {
  auto linear = std::make_shared<Linear>(4, 3);
  Sequential seq({linear});
  const Tensor x = random_tensor({2, 5, 4}, DType::Float32, 1);
  expect_same(seq(x), reshape(matmul(reshape(x, {10, 4}), transpose(linear->weight().detach())), {2, 5, 3}), 1e-6);
  const double bound = 1 / std::sqrt(4.0);
  for (float w : linear->weight().to_vector<float>()) EXPECT_LE(std::abs(w), bound);
}

// Each row through the Linear of its group: the groups' weights as separate Linears, each on its
// own rows, stacked; with a bias, each group's bias added to its rows.
TEST(BasicOps, GroupedLinearIsEachGroupsLinearOnItsRows) {
  const std::vector<int64_t> sizes = {3, 0, 1, 4};
  for (bool bias : {false, true}) {
    Generator gen(2);
    auto grouped = std::make_shared<GroupedLinear>(4, 5, 2, &gen, bias);
    Sequential seq({grouped});
    const Tensor x = random_tensor({8, 5}, DType::Float32, 3);
    const Tensor y = seq(x, {from_vector<int64_t>(sizes, {4})}).output;
    const Tensor w = grouped->weight().detach();
    for (int64_t g = 0, start = 0; g < 4; start += sizes[size_t(g)], ++g) {
      const int64_t end = start + sizes[size_t(g)];
      const Tensor w_g = reshape(w.slice(g, g + 1), {2, 5});
      Tensor want = matmul(x.slice(start, end), transpose(w_g));
      if (bias) want = add(want, grouped->bias().detach().slice(g, g + 1));
      expect_same(y.slice(start, end), want, 1e-6);
    }
  }
}

TEST(BasicOps, GroupedLinearRefusesSizesThatDoNotFitItsRows) {
  Sequential seq({std::make_shared<GroupedLinear>(3, 4, 2)});
  const Tensor x = random_tensor({5, 4}, DType::Float32, 4);
  testing::expect_error([&] { seq(x, {from_vector<int64_t>({2, 2, 2}, {3})}); },
                        {"GroupedLinear(", "sum to 6", "5 rows", "[5, 4]"});
  testing::expect_error([&] { seq(x, {from_vector<int64_t>({5, -1, 1}, {3})}); }, {"group 1 has size -1", "[0, 5]"});
  const int64_t huge = std::numeric_limits<int64_t>::max();  // two of them wrap around to -2: the sum alone passes
  testing::expect_error([&] { seq(x, {from_vector<int64_t>({huge, huge, 7}, {3})}); },
                        {"GroupedLinear(", "group 0 has size 9223372036854775807", "[0, 5]", "[5, 4]"});
  testing::expect_error([&] { seq(x, {from_vector<int64_t>({5, 0}, {2})}); }, {"must be int64 [3]", "[2]"});
  testing::expect_error([&] { seq(x, {from_vector<float>({5, 0, 0}, {3})}); }, {"must be int64 [3]", "float32"});
  testing::expect_error([] { GroupedLinear(0, 4, 2); }, {"GroupedLinear", "0 groups"});
  testing::expect_error([&] { seq(x, {Tensor()}); }, {"GroupedLinear(", "sizes, its extra input, are missing"});
}

// A program may assign a parameter tensor; one of another shape than the op was built with, or
// none, is named before a kernel reads it out of bounds (BasicOp::check_parameters).
TEST(BasicOps, AParameterOfAnotherShapeIsNamed) {
  auto linear = std::make_shared<Linear>(4, 3);
  Sequential dense({linear});
  linear->weight() = random_tensor({3, 5}, DType::Float32, 7);
  testing::expect_error([&] { dense(random_tensor({2, 4}, DType::Float32, 8)); },
                        {"Linear(", "parameter weight has shape [3, 5]", "[3, 4] it was built with"});
  auto grouped = std::make_shared<GroupedLinear>(2, 4, 3, nullptr, /*bias=*/true);
  Sequential experts({grouped});
  const Tensor x = random_tensor({5, 4}, DType::Float32, 9), sizes = from_vector<int64_t>({2, 3}, {2});
  grouped->bias() = random_tensor({2, 1}, DType::Float32, 10);
  testing::expect_error([&] { experts(x, {sizes}); },
                        {"GroupedLinear(", "parameter bias has shape [2, 1]", "[2, 3] it was built with"});
  grouped->bias() = Tensor();
  testing::expect_error([&] { experts(x, {sizes}); }, {"GroupedLinear(", "parameter bias is undefined"});
  auto embedding = std::make_shared<Embedding>(10, 4);
  Sequential lookup({embedding});
  embedding->table() = random_tensor({20, 4}, DType::Float32, 13);
  testing::expect_error([&] { lookup(from_vector<int64_t>({9, 3}, {2})); },
                        {"Embedding(", "parameter table has shape [20, 4]", "[10, 4] it was built with"});
  // A fused op reads its ops' parameters in its own kernel: they are checked all the same.
  auto bias = std::make_shared<Bias>(3);
  Sequential fused({std::make_shared<Linear>(4, 3), bias, std::make_shared<ReLU>()});
  ASSERT_NE(fused.describe().find("ForwardLinearBiasActivation"), std::string::npos) << fused.describe();
  bias->bias() = random_tensor({2}, DType::Float32, 11);
  testing::expect_error([&] { fused(random_tensor({2, 4}, DType::Float32, 12)); },
                        {"Bias(", "parameter bias has shape [2]", "[3] it was built with"});
}

// The backward reads the parameters the forward read: one replaced or converted in between is named
// before any backward runs (it would be read in place of the forward's, and its grad go astray).
TEST(BasicOps, AParameterReplacedBeforeTheBackwardIsNamed) {
  auto norm = std::make_shared<RMSNorm>(6);
  Sequential seq({norm});
  Tensor x = random_tensor({2, 6}, DType::Float32, 14);
  x.set_requires_grad(true);
  Tensor y = sum(seq(x));
  norm->weight() = random_tensor({2}, DType::Float32, 15);
  testing::expect_error([&] { backward(y); },
                        {"RMSNorm(", "parameter weight was replaced or converted between the forward ([6] float32"});
  norm->weight() = random_tensor({6}, DType::Float32, 16);  // another tensor of the same shape
  y = sum(seq(x));
  norm->to(DType::Float64);
  testing::expect_error([&] { backward(y); }, {"RMSNorm(", "parameter weight", "[6] float32 on cpu) and its backward"});
}

TEST(BasicOps, ScaledSwiGLUIsSwiGLUTimesEachRowsScale) {
  Sequential scaled({std::make_shared<ScaledSwiGLU>()}), plain({std::make_shared<SwiGLU>()});
  const Tensor x = random_tensor({2, 3, 8}, DType::Float64, 5), s = random_tensor({2, 3}, DType::Float64, 6);
  expect_same(scaled(x, {s}).output, mul(plain(x), reshape(s, {2, 3, 1})));
  testing::expect_error([&] { scaled(x, {random_tensor({6}, DType::Float64, 7)}); },
                        {"ScaledSwiGLU(", "leading dims of input [2, 3, 8]", "[6]"});
  testing::expect_error([&] { scaled(x, {random_tensor({2, 3}, DType::Float32, 7)}); }, {"float64", "float32"});
  testing::expect_error([&] { scaled(x, {random_tensor({3, 2}, DType::Float64, 7)}); }, {"[3, 2]"});
}

TEST(BasicOps, BiasAddsOverTheLastDim) {
  auto bias = std::make_shared<Bias>(3, 0.5);
  Sequential seq({bias});
  const Tensor x = random_tensor({4, 3}, DType::Float32, 2);
  expect_same(seq(x), add(x, bias->bias().detach()));
}

TEST(BasicOps, ActivationsMatchTheFunctionalOps) {
  const Tensor x = random_tensor({3, 7}, DType::Float64, 3);
  Sequential relu_seq({std::make_shared<ReLU>()}), gelu_seq({std::make_shared<GELU>()}),
      silu_seq({std::make_shared<SiLU>()});
  expect_same(relu_seq(x), relu(x));
  expect_same(gelu_seq(x), gelu(x));
  expect_same(silu_seq(x), silu(x));
}

TEST(BasicOps, SwiGLUGatesTheSecondHalfWithSiluOfTheFirst) {
  Sequential seq({std::make_shared<SwiGLU>()});
  const Tensor x = from_vector<double>({1, -2, 3, 4}, {1, 4});
  const double s1 = 1 / (1 + std::exp(-1.0)), s2 = -2 / (1 + std::exp(2.0));
  expect_same(seq(x), from_vector<double>({s1 * 3, s2 * 4}, {1, 2}));
  EXPECT_THROW(seq(x64({2, 3})), Error);
}

// Each gated linear unit against its gate's formula written here: y = gate(a) * b.
TEST(BasicOps, GatedLinearUnitsGateTheSecondHalf) {
  const auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  const std::vector<std::pair<std::shared_ptr<BasicOp>, std::function<double(double)>>> family = {
      {std::make_shared<GLU>(), sigmoid},
      {std::make_shared<ReGLU>(), [](double v) { return std::max(v, 0.0); }},
      {std::make_shared<GEGLU>(),
       [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }},
      {std::make_shared<QGEGLU>(), [&](double v) { return v * sigmoid(1.702 * v); }},
      {std::make_shared<SReGLU>(), [](double v) { return v > 0 ? v * v : 0.0; }},
      {std::make_shared<SwiGLU>(), [&](double v) { return v * sigmoid(v); }}};
  const std::vector<double> a = {1.5, -2, 0.25}, b = {3, 4, -5};
  std::vector<double> row = a;
  row.insert(row.end(), b.begin(), b.end());
  for (const auto& [op, gate] : family) {
    Sequential seq({op});
    std::vector<double> want;
    for (size_t j = 0; j < a.size(); ++j) want.push_back(gate(a[j]) * b[j]);
    SCOPED_TRACE(op->type());
    expect_same(seq(from_vector<double>(row, {1, 6})), from_vector<double>(want, {1, 3}));
  }
  EXPECT_THROW(GatedLinearUnit(Activation::None), Error);
}

TEST(BasicOps, L2NormalizationDividesByTheRowsNorm) {
  Sequential seq({std::make_shared<L2Normalization>(1e-3)});
  const Tensor x = from_vector<double>({3, 4, 0, -1, 2, 2}, {2, 3});
  const double n0 = std::sqrt(25 + 1e-3), n1 = std::sqrt(9 + 1e-3);
  expect_same(seq(x), from_vector<double>({3 / n0, 4 / n0, 0, -1 / n1, 2 / n1, 2 / n1}, {2, 3}));
  EXPECT_THROW(L2Normalization(-1), Error);
}

// A zero-centered weight w scales as 1 + w: the same outputs and grads as a plain norm with weight
// 1 + w, and a fresh one is the identity scale.
TEST(BasicOps, ZeroCenteredGammaScalesByOnePlusTheWeight) {
  const Tensor x = random_tensor({4, 6}, DType::Float64, 1), dy = random_tensor({4, 6}, DType::Float64, 2);
  const Tensor w = random_tensor({6}, DType::Float64, 3);
  auto centered = std::make_shared<RMSNorm>(6, 1e-6, true);
  auto plain = std::make_shared<RMSNorm>(6, 1e-6);
  centered->to(DType::Float64);
  plain->to(DType::Float64);
  Sequential fresh({centered}), reference({plain});
  expect_same(fresh(x), reference(x));
  centered->weight().copy_(w);
  plain->weight().copy_(add(w, ones({6}, DType::Float64)));
  Sequential centered_seq({centered}), plain_seq({plain});
  Tensor xc = x.detach(), xp = x.detach();
  xc.set_requires_grad();
  xp.set_requires_grad();
  const Tensor yc = centered_seq(xc), yp = plain_seq(xp);
  expect_same(yc, yp);
  backward(sum(mul(yc, dy)));
  backward(sum(mul(yp, dy)));
  expect_same(xc.grad(), xp.grad());
  expect_same(centered->weight().grad(), plain->weight().grad());
}

TEST(BasicOps, RMSNormNormalizesByRootMeanSquare) {
  auto norm = std::make_shared<RMSNorm>(4, 1e-6);
  Sequential seq({norm});
  seq.to(DType::Float64);
  const Tensor x = x64({3, 4});
  const auto xv = x.to_vector<double>();
  std::vector<double> ref;
  for (int r = 0; r < 3; ++r) {
    double ms = 0;
    for (int c = 0; c < 4; ++c) ms += xv[r * 4 + c] * xv[r * 4 + c] / 4;
    for (int c = 0; c < 4; ++c) ref.push_back(xv[r * 4 + c] / std::sqrt(ms + 1e-6));
  }
  expect_same(seq(x), from_vector<double>(ref, {3, 4}));
}

TEST(BasicOps, LayerNormCentersAndScales) {
  Sequential seq({std::make_shared<LayerNorm>(4)});
  seq.to(DType::Float64);
  const auto y = seq(x64({2, 4})).to_vector<double>();
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < 4; ++c) mean += y[r * 4 + c] / 4;
    for (int c = 0; c < 4; ++c) var += (y[r * 4 + c] - mean) * (y[r * 4 + c] - mean) / 4;
    EXPECT_NEAR(mean, 0, 1e-12);
    EXPECT_NEAR(var, 1, 1e-3);  // var / (var + eps), eps = 1e-5
  }
}

TEST(BasicOps, ExtraInputAndOutputOps) {
  Sequential add_seq({std::make_shared<AddExtraInput>()});
  const Tensor x = x64({2, 3}), r = x64({2, 3}, 7);
  expect_same(add_seq(x, {r}).output, add(x, r));
  EXPECT_THROW(add_seq(x, {x64({3, 2})}), Error);
  EXPECT_THROW(add_seq(x), Error);  // the extra input is missing
  Sequential branch({std::make_shared<MakeExtraOutput>()});
  const SequentialOutput out = branch(x, {});
  ASSERT_EQ(out.extra_outputs.size(), 1u);
  expect_same(out.extra_outputs[0], x);
}

TEST(BasicOps, ScaleIdentityReshape) {
  const Tensor x = x64({2, 6});
  Sequential scale_seq({std::make_shared<ConstantScale>(-1.5)});
  expect_same(scale_seq(x), scale(x, -1.5));
  Sequential id({std::make_shared<Identity>()});
  expect_same(id(x), x);
  Sequential re({std::make_shared<Reshape>(Shape{3, -1})});
  EXPECT_EQ(re(x).shape(), (Shape{3, 4}));
}

TEST(BasicOps, DropoutIsSeededAndIdentityInEval) {
  auto make = [] { return Sequential({std::make_shared<Dropout>(0.5, 7)}); };
  Sequential a = make(), b = make();
  const Tensor x = ones({1000}, DType::Float64);
  const auto ya = a(x).to_vector<double>();
  EXPECT_EQ(ya, b(x).to_vector<double>());
  int zeros_count = 0;
  for (double v : ya) {
    EXPECT_TRUE(v == 0 || v == 2);
    zeros_count += v == 0;
  }
  EXPECT_NEAR(zeros_count, 500, 60);
  a.eval();
  EXPECT_EQ(a(x).to_vector<double>(), x.to_vector<double>());
  // The mask is saved in forward and reused in backward: the gradient is the mask.
  Tensor leaf = ones({6}, DType::Float64);
  leaf.set_requires_grad(true);
  Sequential c({std::make_shared<Dropout>(0.5, 3)});
  const Tensor y = c(leaf);
  backward(sum(y));
  EXPECT_EQ(leaf.grad().to_vector<double>(), y.to_vector<double>());
}

TEST(BasicOps, EmbeddingLooksUpRowsAndScatterAddsGrads) {
  auto emb = std::make_shared<Embedding>(5, 3);
  Sequential seq({emb});
  const Tensor ids = from_vector<int64_t>({4, 1, 4}, {3});
  const Tensor y = seq(ids);
  expect_same(y, embedding(emb->table().detach(), ids));
  backward(sum(y));
  const auto g = emb->table().grad().to_vector<float>();
  EXPECT_EQ(g[4 * 3], 2);
  EXPECT_EQ(g[1 * 3], 1);
  EXPECT_EQ(g[0], 0);
  EXPECT_THROW(seq(from_vector<int64_t>({5}, {1})), Error);
  EXPECT_THROW(seq(zeros({3})), Error);
}

TEST(BasicOps, BadInputsNameTheOpShapesAndDtypes) {
  Sequential seq({std::make_shared<Linear>(4, 3)});
  try {
    seq(zeros({2, 5}));
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("Linear(linear0)"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 5]"), std::string::npos) << m;
  }
  try {
    seq(zeros({2, 4}, DType::Float64));
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("float64"), std::string::npos) << m;
    EXPECT_NE(m.find("float32"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace fuselab

// Every functional op's forward against a naive reference, and cross_entropy with every row
// ignored. Grads of every op on every device are checked by the op-case table (op_cases.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "autograd/functional.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

Tensor random64(const Shape& shape, uint64_t seed, double low = -1, double high = 1) {
  Generator gen(seed);
  return uniform(shape, low, high, DType::Float64, &gen);
}

void expect_values(const Tensor& actual, const std::vector<double>& expected, double tol = 1e-12) {
  const auto values = actual.to(DType::Float64).to_vector<double>();
  ASSERT_EQ(values.size(), expected.size());
  for (size_t i = 0; i < values.size(); ++i) EXPECT_NEAR(values[i], expected[i], tol) << "element " << i;
}

TEST(Matmul, MatchesNaiveProduct2dAndBatched) {
  for (const auto& [a_shape, b_shape] : std::vector<std::pair<Shape, Shape>>{{{3, 4}, {4, 5}}, {{2, 3, 4}, {2, 4, 2}}}) {
    const Tensor a = random64(a_shape, 1), b = random64(b_shape, 2);
    const Tensor c = matmul(a, b);
    const int64_t batch = a.dim() == 3 ? a.size(0) : 1, m = a.size(-2), k = a.size(-1), n = b.size(-1);
    const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
    std::vector<double> expected;
    for (int64_t s = 0; s < batch; ++s)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double total = 0;
          for (int64_t p = 0; p < k; ++p) total += av[s * m * k + i * k + p] * bv[s * k * n + p * n + j];
          expected.push_back(total);
        }
    expect_values(c, expected);
  }
}

TEST(Transpose, SwapsLastTwoDims) {
  const Tensor x = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor t = transpose(x);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  expect_values(t, {1, 4, 2, 5, 3, 6});
}

struct BinaryCase {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&);
  double (*reference)(double, double);
};

const BinaryCase kBinaryCases[] = {
    {"add", add, [](double a, double b) { return a + b; }},
    {"sub", sub, [](double a, double b) { return a - b; }},
    {"mul", mul, [](double a, double b) { return a * b; }},
    {"div", div, [](double a, double b) { return a / b; }},
};

TEST(Binary, MatchesReferenceForEveryBroadcastOfB) {
  const Tensor a = random64({3, 4}, 6);
  for (const BinaryCase& c : kBinaryCases) {
    for (const Shape& b_shape : {Shape{3, 4}, Shape{4}, Shape{}, Shape{1}}) {
      SCOPED_TRACE(std::string(c.name) + " with b of rank " + std::to_string(b_shape.size()));
      const Tensor b = random64(b_shape, 7, 0.5, 1.5);  // away from 0 for div
      const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
      std::vector<double> expected;
      for (int64_t i = 0; i < a.numel(); ++i) {
        const double bi = b.numel() == 1 ? bv[0] : b.dim() == 1 ? bv[i % 4] : bv[i];
        expected.push_back(c.reference(av[i], bi));
      }
      expect_values(c.op(a, b), expected);
    }
  }
}

// The element of an operand of shape `from` that NumPy broadcasting pairs with element i of a
// result of shape `to`.
int64_t broadcast_source(const Shape& from, const Shape& to, int64_t i) {
  int64_t index = 0, stride = 1;
  for (size_t d = to.size(); d-- > 0;) {
    const int64_t coordinate = i % to[d];
    i /= to[d];
    const size_t back = to.size() - 1 - d;  // dims are aligned at the last one
    if (back >= from.size()) continue;
    const int64_t size = from[from.size() - 1 - back];
    index += (size == 1 ? 0 : coordinate) * stride;
    stride *= size;
  }
  return index;
}

TEST(Binary, NumpyBroadcastingOfBothOperands) {
  struct Shapes {
    Shape a, b, result;
  };
  const Shapes pairs[] = {
      {{3, 1}, {1, 4}, {3, 4}},       {{}, {3, 4}, {3, 4}},          {{1, 4}, {3, 4}, {3, 4}},
      {{3, 4}, {1, 4}, {3, 4}},       {{3, 4}, {3, 1}, {3, 4}},      {{4}, {3, 4}, {3, 4}},
      {{2, 1, 4}, {3, 1}, {2, 3, 4}}, {{1}, {}, {1}},                {{2, 3, 4}, {3, 4}, {2, 3, 4}},
      {{1, 3, 1}, {2, 1, 5}, {2, 3, 5}},
  };
  for (const BinaryCase& c : kBinaryCases) {
    for (const Shapes& s : pairs) {
      std::ostringstream trace;
      trace << c.name << " " << s.a << " with " << s.b;
      SCOPED_TRACE(trace.str());
      const Tensor a = random64(s.a, 8, 0.5, 1.5), b = random64(s.b, 9, 0.5, 1.5);  // away from 0 for div
      const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
      std::vector<double> expected;
      for (int64_t i = 0; i < numel(s.result); ++i) {
        expected.push_back(c.reference(av[broadcast_source(s.a, s.result, i)], bv[broadcast_source(s.b, s.result, i)]));
      }
      const Tensor y = c.op(a, b);
      EXPECT_EQ(y.shape(), s.result);
      expect_values(y, expected);
    }
  }
}

TEST(Scale, MultipliesByConstant) {
  const Tensor x = random64({5}, 8);
  auto expected = x.to_vector<double>();
  for (double& v : expected) v *= -2.5;
  expect_values(scale(x, -2.5), expected);
}

TEST(Reductions, SumMeanAllAndLastDim) {
  const Tensor x = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_values(sum(x), {21});
  expect_values(mean(x), {3.5});
  expect_values(sum_last_dim(x), {6, 15});
  expect_values(mean_last_dim(x), {2, 5});
}

TEST(Reshape, KeepsValues) {
  const Tensor x = random64({2, 6}, 10);
  const Tensor y = reshape(x, {3, -1});
  EXPECT_EQ(y.shape(), (Shape{3, 4}));
  expect_values(y, x.to_vector<double>());
}

TEST(Activations, MatchFormulas) {
  const Tensor x = random64({4, 5}, 11, -3, 3);
  const auto xv = x.to_vector<double>();
  std::vector<double> r, g, s;
  for (double v : xv) {
    r.push_back(v > 0 ? v : 0);
    g.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
    s.push_back(v / (1 + std::exp(-v)));
  }
  expect_values(relu(x), r);
  expect_values(gelu(x), g);
  expect_values(silu(x), s);
}

TEST(Softmax, RowsSumToOneAndMatchExp) {
  const Tensor x = random64({3, 5}, 12, -4, 4);
  const auto xv = x.to_vector<double>();
  std::vector<double> sm, lsm;
  for (int r = 0; r < 3; ++r) {
    double total = 0;
    for (int j = 0; j < 5; ++j) total += std::exp(xv[r * 5 + j]);
    for (int j = 0; j < 5; ++j) {
      sm.push_back(std::exp(xv[r * 5 + j]) / total);
      lsm.push_back(xv[r * 5 + j] - std::log(total));
    }
  }
  expect_values(softmax(x), sm);
  expect_values(log_softmax(x), lsm);
}

// float32 rows run on a polynomial exponential: within a few ulps of the double result down to
// e^-87 and 0 below it, so a masked (-inf) score gets a probability of exactly 0, and a NaN score
// makes its row NaN.
TEST(Softmax, Float32IsCloseAndMaskedScoresAreExactlyZero) {
  const float inf = INFINITY;
  const std::vector<float> row = {1.5f, -inf, -3.25f, 0.0f, -inf, 7.0f, -90.0f, 2.0f, -0.5f};
  const Tensor x = from_vector<float>(row, {1, 9});
  const std::vector<float> p = softmax(x).to_vector<float>(), log_p = log_softmax(x).to_vector<float>();
  double total = 0;
  for (float v : row) total += std::exp(double(v));
  for (size_t j = 0; j < row.size(); ++j) {
    if (row[j] == -inf) {
      EXPECT_EQ(p[j], 0.0f) << j;
      continue;
    }
    const double expected = std::exp(double(row[j])) / total;
    if (expected < 1e-38) {
      EXPECT_EQ(p[j], 0.0f) << j;
    } else {
      EXPECT_NEAR(p[j], expected, 1e-6 * expected) << j;
    }
    EXPECT_NEAR(log_p[j], double(row[j]) - std::log(total), 1e-5) << j;
  }
  const Tensor with_nan = from_vector<float>({1.0f, NAN, 2.0f}, {1, 3});
  for (float v : softmax(with_nan).to_vector<float>()) EXPECT_TRUE(std::isnan(v));
}

TEST(CrossEntropy, MeanNegativeLogLikelihoodWithIgnoreIndex) {
  const Tensor logits = random64({4, 3}, 13, -2, 2);
  const Tensor labels = from_vector<int64_t>({2, -100, 0, 1}, {4});
  const auto lsm = log_softmax(logits).to_vector<double>();
  expect_values(cross_entropy(logits, labels), {-(lsm[0 * 3 + 2] + lsm[2 * 3 + 0] + lsm[3 * 3 + 1]) / 3});
}

TEST(CrossEntropy, EveryRowIgnoredGivesNanLossAndZeroGrads) {
  Tensor logits = random64({3, 4}, 16, -2, 2);
  logits.set_requires_grad(true);
  const Tensor loss = cross_entropy(logits, from_vector<int64_t>({-100, -100, -100}, {3}));
  EXPECT_TRUE(std::isnan(loss.item())) << "the mean over zero rows is 0 / 0, as in PyTorch";
  backward(loss);
  ASSERT_TRUE(logits.grad().defined());
  for (double g : logits.grad().to_vector<double>()) EXPECT_EQ(g, 0.0);
}

TEST(Mse, MeanSquaredDifference) {
  const Tensor p = from_vector<double>({1, 2, 3}, {3}), t = from_vector<double>({1, 0, 5}, {3});
  expect_values(mse(p, t), {(0 + 4 + 4) / 3.0});
}

TEST(Embedding, GathersRows) {
  const Tensor table = random64({5, 3}, 16);
  const Tensor ids = from_vector<int64_t>({4, 0, 4, 2}, {2, 2});
  const Tensor out = embedding(table, ids);
  EXPECT_EQ(out.shape(), (Shape{2, 2, 3}));
  const auto tv = table.to_vector<double>();
  std::vector<double> expected;
  for (int64_t id : {4, 0, 4, 2})
    for (int j = 0; j < 3; ++j) expected.push_back(tv[id * 3 + j]);
  expect_values(out, expected);
}

}  // namespace
}  // namespace fuselab

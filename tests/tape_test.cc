// Tape semantics: what is recorded, where grads go, and what backward() refuses.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "autograd/functional.h"
#include "autograd/tape.h"
#include "fuser/sequential.h"
#include "ops/basic/linear.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"

namespace fuselab {
namespace {

using testing::expect_error;

Tensor leaf(std::vector<double> values) {
  Tensor t = from_vector<double>(values, {int64_t(values.size())});
  t.set_requires_grad(true);
  return t;
}

TEST(Tape, RecordsOnlyWhenAnInputRequiresGrad) {
  const Tensor a = from_vector<double>({1, 2}, {2});
  EXPECT_TRUE(add(a, a).is_leaf());
  const Tensor b = leaf({1, 2});
  const Tensor c = add(a, b);
  EXPECT_TRUE(c.requires_grad());
  EXPECT_FALSE(c.is_leaf());
  EXPECT_EQ(graph_ops(sum(c)), (std::vector<std::string>{"sum", "add"}));
}

TEST(Tape, AccumulatesWhenATensorIsUsedTwice) {
  const Tensor x = leaf({3, -2});
  backward(sum(mul(x, x)));  // d/dx sum x^2 = 2x
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{6, -4}));
}

TEST(Tape, GradsAccumulateAcrossBackwardCallsUntilZeroed) {
  const Tensor x = leaf({1, 2});
  backward(sum(scale(x, 3)));
  backward(sum(scale(x, 3)));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{6, 6}));
  Tensor(x).zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

// A leaf's own grad passed back as a gradient is added like any other tensor (only a grad a
// backward added into in place is taken as accumulated).
TEST(Tape, ALeafsGradPassedAsTheGradientIsAdded) {
  const Tensor x = leaf({1, 2});
  backward(sum(x));
  backward(x, x.grad());
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 2}));
  backward(add(x, x), x.grad());  // each use adds the gradient [2, 2]
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{6, 6}));
}

// grad_to_accumulate_into marks the leaf for the pass it is called in: a mark made outside a
// backward() (nothing added into the grad) does not make a later one drop the leaf's own grad.
TEST(Tape, AnInPlaceMarkFromOutsideABackwardDropsNoGrad) {
  const Tensor x = leaf({1, 2});
  backward(sum(x));
  EXPECT_TRUE(grad_to_accumulate_into(x).defined());  // x's grad is held by nothing else
  backward(x, x.grad());
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 2}));
  EXPECT_TRUE(grad_to_accumulate_into(x).defined());
  backward(scale(x, 1.0), x.grad());
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{4, 4}));
}

// A grad the user holds a handle to is never handed out to be added into.
TEST(Tape, AGradTheUserHoldsIsNotAccumulatedIntoInPlace) {
  const Tensor x = leaf({1, 2});
  backward(sum(x));
  const Tensor held = x.grad();
  EXPECT_FALSE(grad_to_accumulate_into(x).defined());
  EXPECT_FALSE(grad_to_accumulate_into(scale(x, 2.0)).defined());  // not a leaf
}

// A Linear's weight grad, added in place when the weight already has one, goes to the weight the
// forward used. A weight replaced by the time backward runs is refused, naming the op, before any
// grad is given: the backward would read it in place of the forward's.
TEST(Tape, AnInPlaceWeightGradGoesToTheWeightTheForwardUsed) {
  auto linear = std::make_shared<Linear>(3, 2);
  linear->to(DType::Float64);
  Sequential seq({linear});
  const Tensor x = from_vector<double>({1, 2, 3, -1, 0, 2}, {2, 3});
  const Tensor w0 = linear->parameter(0);
  backward(sum(seq(x)));
  const std::vector<double> once = w0.grad().to_vector<double>();
  const Tensor out = seq(x);
  const Tensor w1 = from_vector<double>({1, 1, 1, 1, 1, 1}, {2, 3});
  Tensor(w1).set_requires_grad(true);
  backward(sum(w1));  // w1's grad: ones, held by nothing else
  linear->parameter(0) = w1;
  expect_error([&] { backward(sum(out)); }, {"Linear(", "parameter weight was replaced or converted"});
  EXPECT_EQ(w0.grad().to_vector<double>(), once);
  EXPECT_EQ(w1.grad().to_vector<double>(), std::vector<double>(6, 1.0));
  linear->parameter(0) = w0;
  backward(sum(out));
  const std::vector<double> twice = w0.grad().to_vector<double>();
  for (size_t i = 0; i < once.size(); ++i) EXPECT_DOUBLE_EQ(twice[i], 2 * once[i]);
  EXPECT_EQ(w1.grad().to_vector<double>(), std::vector<double>(6, 1.0));
}

TEST(Tape, OnlyLeavesReceiveGrad) {
  const Tensor x = leaf({1, 2});
  const Tensor h = scale(x, 2);
  backward(sum(h));
  EXPECT_TRUE(x.grad().defined());
  EXPECT_FALSE(h.grad().defined());
}

TEST(Tape, NoGradGuardStopsRecordingAndRestores) {
  const Tensor x = leaf({1, 2});
  {
    NoGradGuard guard;
    const Tensor y = scale(x, 2);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(y.is_leaf());
  }
  EXPECT_TRUE(is_grad_enabled());
  EXPECT_TRUE(scale(x, 2).requires_grad());
}

TEST(Tape, SecondBackwardOverFreedGraphThrowsNamingTheOp) {
  const Tensor x = leaf({1, 2});
  const Tensor loss = sum(mul(x, x));
  backward(loss);
  expect_error([&] { backward(loss); }, {"backward: sum", "earlier backward()", "freed", "retain_graph"});
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 4}));  // the refused one added nothing
}

TEST(Tape, RetainGraphAllowsASecondBackwardThatAccumulatesAgain) {
  const Tensor x = leaf({1, 2});
  const Tensor loss = sum(mul(x, x));
  backward(loss, Tensor(), BackwardOptions{/*retain_graph=*/true});
  backward(loss);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{4, 8}));
  expect_error([&] { backward(loss); }, {"sum", "freed"});
}

TEST(Tape, NonScalarRootNeedsAGradient) {
  const Tensor x = leaf({1, 2});
  const Tensor y = scale(x, 2);
  EXPECT_THROW(backward(y), Error);
  backward(y, from_vector<double>({1, 10}, {2}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 20}));
}

TEST(Tape, RootThatDoesNotRequireGradThrows) { EXPECT_THROW(backward(sum(from_vector<double>({1}, {1}))), Error); }

TEST(Tape, AGraphBelongsToItsTensorsNotToAThread) {
  const Tensor x = leaf({1, 2});
  Tensor y;
  std::thread([&] { y = sum(scale(x, 2)); }).join();
  backward(y);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 2}));
}

TEST(Tape, LeafIsReportedReadyOnceAfterItsLastContribution) {
  const Tensor x = leaf({3, -2}), w = leaf({1, 1});
  const Tensor h = mul(x, x);                            // node 0 takes x (twice)
  const Tensor loss = sum(add(mul(h, w), scale(x, 5)));  // node 1 takes w, node 2 takes x again
  std::vector<std::pair<const TensorImpl*, std::vector<double>>> ready;
  backward(loss, Tensor(), [&](const Tensor& t) { ready.emplace_back(&t.impl(), t.grad().to_vector<double>()); });
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].first, &w.impl());  // backward runs node 1 (w's only one) before node 0 (x's last)
  EXPECT_EQ(ready[1].first, &x.impl());
  EXPECT_EQ(ready[1].second, (std::vector<double>{11, 1}));  // 2x + 5, complete when reported
}

TEST(Tape, LeafThatTheRootCannotReachIsNotReported) {
  const Tensor x = leaf({1, 2}), unused = leaf({4});
  const Tensor side = scale(unused, 2);  // recorded, but the loss does not depend on it
  std::vector<const TensorImpl*> ready;
  backward(sum(scale(x, 3)), Tensor(), [&](const Tensor& t) { ready.push_back(&t.impl()); });
  EXPECT_EQ(ready, (std::vector<const TensorImpl*>{&x.impl()}));
  EXPECT_FALSE(unused.grad().defined());
  backward(sum(side));  // its graph is still there
  EXPECT_EQ(unused.grad().to_vector<double>(), (std::vector<double>{2}));
}

TEST(Tape, IntegerTensorsCannotRequireGrad) {
  Tensor ids = arange(3);
  EXPECT_THROW(ids.set_requires_grad(true), Error);
}

}  // namespace
}  // namespace fuselab

// Graph lifetime: a recorded graph lives as long as the tensors that can reach it, backward(root)
// runs and frees only what root reaches, retain_graph keeps it for another backward, and deep
// graphs neither backpropagate nor die by recursion. Memory is read from the CPU allocator.
#include <gtest/gtest.h>
#include <pthread.h>

#include <functional>
#include <string>
#include <vector>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/bias.h"
#include "ops/basic/linear.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::expect_error;
using testing::random_tensor;

size_t bytes_in_use() { return CachingAllocator::of(Device::cpu()).stats().bytes_in_use; }

Tensor parameter(const Shape& shape, uint64_t seed) {
  Tensor t = random_tensor(shape, DType::Float64, seed);
  t.set_requires_grad(true);
  return t;
}

std::vector<double> take_grad(Tensor t) {
  std::vector<double> grad = t.grad().to_vector<double>();
  t.zero_grad();
  return grad;
}

// A validation loss read under grad mode, without NoGradGuard and without backward: once the loss
// and its intermediates are gone, so are the nodes and what they saved.
TEST(GraphLifetime, ValidationLoopWithoutNoGradGuardDoesNotGrowMemory) {
  Sequential model({std::make_shared<Linear>(32, 128), std::make_shared<Bias>(128), std::make_shared<GELU>(),
                    std::make_shared<Linear>(128, 32)});
  const Tensor x = random_tensor({256, 32}, DType::Float32, 1), target = random_tensor({256, 32}, DType::Float32, 2);
  Tensor w = random_tensor({32, 32}, DType::Float32, 3);
  w.set_requires_grad(true);
  auto validation_loss = [&] {
    const Tensor y = model(x);
    EXPECT_TRUE(y.requires_grad());  // recorded
    return mse(y, target).item() + mean(gelu(matmul(x, w))).item();
  };
  validation_loss();  // first call: the fused lists are built
  const size_t baseline = bytes_in_use();
  for (int step = 0; step < 10; ++step) {
    validation_loss();
    EXPECT_EQ(bytes_in_use(), baseline) << "step " << step;
  }
}

// Two losses recorded interleaved, sharing their leaves but no node. backward(loss_a) runs a's
// nodes only and frees what they saved; b's graph is whole and gives its own grads later.
TEST(GraphLifetime, BackwardRunsAndFreesOnlyTheGraphItsRootReaches) {
  const Tensor x = parameter({48, 48}, 3), w = parameter({48, 48}, 4);
  auto loss_a = [&] { return mean(mul(gelu(matmul(x, w)), x)); };
  auto loss_b = [&] { return sum(mul(silu(matmul(w, x)), w)); };
  backward(loss_a());
  const std::vector<double> expected_a_x = take_grad(x), expected_a_w = take_grad(w);
  backward(loss_b());
  const std::vector<double> expected_b_x = take_grad(x), expected_b_w = take_grad(w);

  const size_t baseline = bytes_in_use();
  size_t held_by_b = 0;
  {
    const Tensor alone = loss_b();
    held_by_b = bytes_in_use() - baseline;
  }
  Tensor b;
  {
    const Tensor mm_a = matmul(x, w), mm_b = matmul(w, x);
    const Tensor h_a = gelu(mm_a), h_b = silu(mm_b);
    const Tensor a = mean(mul(h_a, x));
    b = sum(mul(h_b, w));
    backward(a);
  }
  EXPECT_EQ(take_grad(x), expected_a_x);
  EXPECT_EQ(take_grad(w), expected_a_w);
  EXPECT_EQ(bytes_in_use() - baseline, held_by_b);  // b's saved state is all there

  backward(b);
  EXPECT_EQ(take_grad(x), expected_b_x);
  EXPECT_EQ(take_grad(w), expected_b_w);
  b = Tensor();
  EXPECT_EQ(bytes_in_use(), baseline);
}

// A leaf is final once the nodes of this backward that consume it have run; nodes of another
// graph that consume it too are not waited for, and a leaf only they consume is not reported.
TEST(GraphLifetime, LeafGradReadyCountsOnlyTheNodesTheRootReaches) {
  const Tensor x = parameter({4}, 5), only_b = parameter({4}, 6);
  const Tensor b_first = mul(x, only_b);
  const Tensor a = sum(mul(x, x));
  const Tensor b = sum(add(b_first, x));
  std::vector<std::pair<const TensorImpl*, std::vector<double>>> ready;
  backward(a, Tensor(), [&](const Tensor& leaf) { ready.emplace_back(&leaf.impl(), leaf.grad().to_vector<double>()); });
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].first, &x.impl());
  const std::vector<double> xs = x.to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(ready[0].second[i], 2 * xs[i]);
  EXPECT_FALSE(only_b.grad().defined());
}

// Two losses over one early subgraph h: the first backward frees h's nodes unless it retains them.
TEST(GraphLifetime, ASharedSubgraphNeedsRetainGraphForTheSecondLoss) {
  const Tensor x = parameter({16, 16}, 7), w = parameter({16, 16}, 8);
  auto loss_a = [](const Tensor& h) { return sum(mul(h, h)); };
  auto loss_b = [](const Tensor& h) { return mean(scale(h, 3)); };
  {
    const Tensor h = gelu(matmul(x, w));
    backward(add(loss_a(h), loss_b(h)));
  }
  const std::vector<double> expected_x = take_grad(x), expected_w = take_grad(w);
  const size_t baseline = bytes_in_use();

  {
    const Tensor h = gelu(matmul(x, w));
    const Tensor a = loss_a(h), b = loss_b(h);
    backward(a);
    const std::vector<double> after_a = x.grad().to_vector<double>();
    expect_error([&] { backward(b); }, {"backward: gelu", "outputs of shape [16, 16]", "freed", "retain_graph"});
    EXPECT_EQ(x.grad().to_vector<double>(), after_a);  // the refused backward ran nothing
  }
  take_grad(x), take_grad(w);
  {
    const Tensor h = gelu(matmul(x, w));
    const Tensor a = loss_a(h), b = loss_b(h);
    backward(a, Tensor(), BackwardOptions{/*retain_graph=*/true});
    backward(b);
  }
  const std::vector<double> got_x = take_grad(x), got_w = take_grad(w);
  for (size_t i = 0; i < got_x.size(); ++i) {
    EXPECT_NEAR(got_x[i], expected_x[i], 1e-12);
    EXPECT_NEAR(got_w[i], expected_w[i], 1e-12);
  }
  EXPECT_EQ(bytes_in_use(), baseline);
}

// retain_graph keeps what the nodes saved; the backward without it frees it.
TEST(GraphLifetime, RetainGraphKeepsSavedStateUntilABackwardWithoutIt) {
  const Tensor x = parameter({64, 64}, 9);
  const size_t baseline = bytes_in_use();
  const Tensor loss = sum(mul(gelu(x), x));  // mul saves gelu(x), gelu saves x
  const size_t recorded = bytes_in_use();
  ASSERT_GT(recorded, baseline);
  backward(loss, Tensor(), BackwardOptions{/*retain_graph=*/true});
  const std::vector<double> once = take_grad(x);
  EXPECT_EQ(bytes_in_use(), recorded);
  backward(loss);
  std::vector<double> twice = take_grad(x);
  EXPECT_EQ(twice, once);  // zeroed in between: the same grads again
  const size_t one_scalar = [] {
    const size_t before = bytes_in_use();
    const Tensor scalar = zeros({}, DType::Float64);
    return bytes_in_use() - before;
  }();
  EXPECT_EQ(bytes_in_use() - baseline, one_scalar);  // the loss is all that is left
}

// Runs `body` on a thread with a 512 KiB stack: a recursion 10,000 nodes deep would overflow it.
void run_on_small_stack(const std::function<void()>& body) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 512 << 10);
  pthread_t thread;
  auto run = [](void* f) -> void* {
    (*static_cast<const std::function<void()>*>(f))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, run, const_cast<std::function<void()>*>(&body)), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

// A chain of 10,000 muls: each node holds its input's producer twice, through its input and
// through the saved input. Backward and destruction both walk it without recursion.
TEST(GraphLifetime, TenThousandNodeChainBackpropagatesAndIsFreedWithoutRecursion) {
  constexpr int kDepth = 10000;
  const Tensor x = parameter({4}, 10), one = ones({4}, DType::Float64);
  auto chain = [&] {
    Tensor h = x;
    for (int i = 0; i < kDepth; ++i) h = mul(h, one);
    return sum(h);
  };
  const size_t baseline = bytes_in_use();
  run_on_small_stack([&] {
    const Tensor loss = chain();
    EXPECT_EQ(graph_ops(loss).size(), size_t(kDepth) + 1);
    backward(loss);
  });
  EXPECT_EQ(take_grad(x), std::vector<double>(4, 1.0));
  run_on_small_stack([&] { chain(); });  // never backpropagated: freed when the loss dies
  EXPECT_EQ(bytes_in_use(), baseline);
}

}  // namespace
}  // namespace fuselab

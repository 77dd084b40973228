// Data-parallel training across MPI ranks, checked against one process on the whole batch.
// Run by data_parallel_test.sh as `mpirun -np 2 data_parallel_worker`; every rank runs every
// test, and the collectives inside them pair up across ranks.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "autograd/functional.h"
#include "data/batch_loader.h"
#include "distributed/data_parallel.h"
#include "distributed/mpi_communicator.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/linear.h"
#include "optim/adamw.h"
#include "optim/sgd.h"
#include "tensor/factories.h"
#include "tensor/random.h"

namespace fuselab {
namespace {

MpiCommunicator* world = nullptr;

constexpr int64_t kIn = 12, kHidden = 32, kClasses = 5, kBatch = 16;

// Linear+Bias+GELU, Linear+Bias: fused into one forward and one backward op per layer.
Sequential make_model(uint64_t seed) {
  Generator gen(seed);
  Sequential model;
  model.append(linear_with_bias(kIn, kHidden, &gen)).append(std::make_shared<GELU>());
  model.append(linear_with_bias(kHidden, kClasses, &gen));
  return model;
}

struct Data {
  Tensor features, labels;
};

Data make_data(int64_t n, uint64_t seed) {
  Generator gen(seed);
  std::vector<float> x(size_t(n * kIn));
  std::vector<int64_t> y(static_cast<size_t>(n));
  for (float& v : x) v = float(gen.normal());
  for (int64_t& v : y) v = int64_t(gen.next_u64() % kClasses);
  return {from_vector<float>(x, {n, kIn}), from_vector<int64_t>(y, {n})};
}

Tensor loss_on(Sequential& model, const Data& data, const std::vector<int64_t>& rows) {
  return cross_entropy(model(take_rows(data.features, rows)), take_rows(data.labels, rows));
}

std::vector<int64_t> all_rows(int64_t n) {
  std::vector<int64_t> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) rows[size_t(i)] = i;
  return rows;
}

// Every element of `t` equals rank 0's, bit for bit.
bool same_bits_as_rank0(const Tensor& t) {
  Tensor theirs = t.clone();
  world->broadcast(theirs, 0);
  const int mine_equal = std::memcmp(theirs.raw_data(), t.raw_data(), t.nbytes()) == 0;
  return world->mean(mine_equal) == 1.0;  // every rank agrees
}

double max_relative_difference(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<float>(), y = b.to_vector<float>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, double(std::abs(x[i] - y[i])));
    scale = std::max(scale, double(std::abs(y[i])));
  }
  return diff / std::max(scale, 1e-30);
}

TEST(DataParallel, RunsOnTwoRanks) { EXPECT_EQ(world->size(), 2); }

// Each rank starts from its own random init: rank 0's parameters are broadcast. After one step
// on the rank's half of the batch, every rank holds the same bits, and the grads and parameters
// match one process stepping on the whole batch.
TEST(DataParallel, OneStepMatchesOneProcessOnTheWholeBatch) {
  const Data data = make_data(kBatch, 7);
  Sequential reference = make_model(100);
  Sequential model = make_model(100 + uint64_t(world->rank()));
  DataParallel parallel(model.parameters(), *world, /*bucket_bytes=*/512);  // one per parameter
  EXPECT_EQ(parallel.num_buckets(), 4u);

  SGD reference_sgd(reference.parameters(), {0.1});
  backward(loss_on(reference, data, all_rows(kBatch)));
  SGD sgd(model.parameters(), {0.1});
  parallel.backward(loss_on(model, data, shard(all_rows(kBatch), world->rank(), world->size())));

  const auto params = model.parameters(), expected = reference.parameters();
  for (size_t p = 0; p < params.size(); ++p) {
    EXPECT_TRUE(same_bits_as_rank0(params[p].grad())) << "grad of parameter " << p;
    EXPECT_LT(max_relative_difference(params[p].grad(), expected[p].grad()), 1e-5) << "grad of parameter " << p;
  }
  reference_sgd.step();
  sgd.step();
  for (size_t p = 0; p < params.size(); ++p) {
    EXPECT_TRUE(same_bits_as_rank0(params[p])) << "parameter " << p;
    EXPECT_LT(max_relative_difference(params[p], expected[p]), 1e-6) << "parameter " << p;
  }
}

// 20 AdamW steps over a seeded loader: the mean of the ranks' losses follows one process's loss.
TEST(DataParallel, TwentyStepLossTrajectoryMatchesOneProcess) {
  const Data data = make_data(256, 11);
  Sequential reference = make_model(5), model = make_model(5);
  AdamW reference_adam(reference.parameters(), {3e-3}), adam(model.parameters(), {3e-3});
  DataParallel parallel(model.parameters(), *world);
  BatchLoader reference_loader(256, 32, 3), loader(256, 32, 3);
  double worst = 0;
  for (int step = 0; step < 20; ++step) {
    reference_adam.zero_grad();
    const Tensor reference_loss = loss_on(reference, data, reference_loader.next());
    backward(reference_loss);
    reference_adam.step();

    adam.zero_grad();
    const Tensor loss = loss_on(model, data, shard(loader.next(), world->rank(), world->size()));
    parallel.backward(loss);
    adam.step();
    const double mean_loss = world->mean(loss.item());
    worst = std::max(worst, std::abs(mean_loss - reference_loss.item()) / reference_loss.item());
  }
  EXPECT_LT(worst, 1e-4);
  for (const Tensor& p : model.parameters()) EXPECT_TRUE(same_bits_as_rank0(p));
}

}  // namespace
}  // namespace fuselab

// Ranks other than 0 report only their failures, each line marked with the rank.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (result.failed()) std::printf("rank %d: %s:%d: %s\n", rank_, result.file_name(), result.line_number(), result.summary());
  }

 private:
  int rank_;
};

int main(int argc, char** argv) {
  fuselab::MpiCommunicator world(&argc, &argv);
  fuselab::world = &world;
  ::testing::InitGoogleTest(&argc, argv);
  if (world.rank() != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(world.rank()));
  }
  return fuselab::run_or_abort(world, [] { return RUN_ALL_TESTS(); });
}

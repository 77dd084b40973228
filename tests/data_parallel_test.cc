// DataParallel in one process, with a communicator that stands in for a second, identical rank
// and records what it is asked to reduce: reductions start while backward still runs, in bucket
// order, and what backward does not reach is still reduced. The two-rank behaviour is tested under mpirun in tests/distributed/.
#include <gtest/gtest.h>

#include "autograd/functional.h"
#include "distributed/data_parallel.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/linear.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"
#include "tests/expect_error.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

// Rank 0 of two, where the other rank always has the same grads (a sum doubles the buffer). It
// notes each reduction's size and whether the first parameter's grad existed when it started.
class TwinRankCommunicator final : public Communicator {
 public:
  explicit TwinRankCommunicator(const Tensor* first_param = nullptr) : first_param_(first_param) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::unique_ptr<PendingCollective> start_all_reduce_sum(Tensor buffer) override {
    sizes.push_back(buffer.numel());
    first_grad_existed.push_back(first_param_ && first_param_->grad().defined());
    buffer.copy_(math::scaled(buffer, 2));
    return single_.start_all_reduce_sum(buffer);
  }
  void broadcast(Tensor, int) override {}
  void abort(const std::string& why) override { single_.abort(why); }

  std::vector<int64_t> sizes;
  std::vector<bool> first_grad_existed;

 private:
  const Tensor* first_param_;
  SingleProcess single_;  // its finished PendingCollective, and abort
};

Sequential two_layers() {
  Generator gen(3);
  Sequential model;
  model.append(linear_with_bias(6, 8, &gen)).append(std::make_shared<GELU>());
  model.append(linear_with_bias(8, 4, &gen));
  return model;
}

TEST(DataParallel, ReductionsStartWhileBackwardStillRuns) {
  Sequential model = two_layers();
  const std::vector<Tensor> params = model.parameters();  // w1 [8,6], b1 [8], w2 [4,8], b2 [4]
  TwinRankCommunicator comm(&params[0]);
  DataParallel parallel(params, comm, /*bucket_bytes=*/64);  // 16 floats: b2 | w2 | b1 | w1
  comm.sizes.clear();  // the construction's own size check
  comm.first_grad_existed.clear();
  parallel.backward(sum(model(testing::random_tensor({5, 6}, DType::Float32, 1))));
  EXPECT_EQ(comm.sizes, (std::vector<int64_t>{4, 32, 8, 48}));
  EXPECT_EQ(comm.first_grad_existed, (std::vector<bool>{false, false, false, true}));
}

// DataParallel::backward over `comm` leaves the same grads, bit for bit, as plain backward.
void expect_grads_match_plain_backward(Communicator& comm, size_t expected_buckets) {
  Sequential model = two_layers(), reference = two_layers();
  DataParallel parallel(model.parameters(), comm, /*bucket_bytes=*/64);
  EXPECT_EQ(parallel.num_buckets(), expected_buckets);
  const Tensor x = testing::random_tensor({5, 6}, DType::Float32, 2);
  parallel.backward(sum(model(x)));
  backward(sum(reference(x)));
  for (size_t p = 0; p < 4; ++p) {
    EXPECT_EQ(model.parameters()[p].grad().to_vector<float>(), reference.parameters()[p].grad().to_vector<float>());
  }
}

TEST(DataParallel, AveragedGradsOfIdenticalRanksMatchPlainBackward) {
  TwinRankCommunicator comm;
  expect_grads_match_plain_backward(comm, 4);
}

TEST(DataParallel, AParameterBackwardDoesNotReachGetsAZeroGrad) {
  Sequential model = two_layers();
  Tensor unused = ones({3});
  unused.set_requires_grad(true);
  std::vector<Tensor> params = model.parameters();
  params.push_back(unused);
  TwinRankCommunicator comm;
  DataParallel parallel(params, comm);
  parallel.backward(sum(model(testing::random_tensor({5, 6}, DType::Float32, 4))));
  EXPECT_EQ(unused.grad().to_vector<float>(), (std::vector<float>{0, 0, 0}));
}

TEST(DataParallel, OneRankIsPlainBackward) {
  SingleProcess comm;
  expect_grads_match_plain_backward(comm, 0);
}

TEST(DataParallel, ParametersOfDifferentDtypesAreRejected) {
  SingleProcess comm;
  testing::expect_error([&] { DataParallel({ones({2}), ones({3}, DType::Float64)}, comm); }, {"float64"});
}

}  // namespace
}  // namespace fuselab

// NcclCommunicator on GPUs, one per rank. Run as `mpirun -np R nccl_test` (tools/gpu_check.sh
// runs it with one rank per GPU); every rank runs every test. Without a CUDA device the tests
// report SKIPPED and MPI is never started.
#include <gtest/gtest.h>

#include <memory>

#include "autograd/functional.h"
#include "distributed/data_parallel.h"
#include "distributed/nccl_communicator.h"
#include "kernels/cuda/device_api.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"

namespace fuselab {
namespace {

MpiCommunicator* bootstrap = nullptr;
NcclCommunicator* nccl = nullptr;

class Nccl : public ::testing::Test {
 protected:
  void SetUp() override {
    if (nccl == nullptr) GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount found none";
  }
};

TEST_F(Nccl, AllReduceSumsOverRanksOnNonBlockSizes) {
  const int ranks = nccl->size();
  for (int64_t n : {1, 1000, 100003}) {
    Tensor buffer = full({n}, double(nccl->rank() + 1), DType::Float32).to(nccl->device());
    nccl->all_reduce_sum(buffer);
    const float expected = float(ranks * (ranks + 1) / 2);
    for (float v : buffer.to_vector<float>()) ASSERT_EQ(v, expected) << "n = " << n;
  }
}

TEST_F(Nccl, BroadcastCopiesRootEverywhere) {
  Tensor buffer = full({257}, double(nccl->rank() * 10 + 3), DType::Float64).to(nccl->device());
  nccl->broadcast(buffer, 0);
  for (double v : buffer.to_vector<double>()) ASSERT_EQ(v, 3.0);
}

TEST_F(Nccl, CpuValuesGoThroughMpi) {
  EXPECT_EQ(nccl->mean(double(nccl->rank())), double(nccl->size() - 1) / 2);
}

TEST_F(Nccl, WrongDeviceOrDtypeIsAClearError) {
  const Tensor ids = zeros({4}, DType::Int64).to(nccl->device());
  testing::expect_error([&] { nccl->all_reduce_sum(ids); }, {"all_reduce_sum", "int64", "[4]"});
}

TEST_F(Nccl, DataParallelAveragesGpuGrads) {
  // loss = sum(a * c) + sum(b * c) with c = rank + 1 on each rank: the grads are c, and their
  // average over R ranks is (R + 1) / 2. Two parameters in 64-byte buckets: two buckets.
  const double c = nccl->rank() + 1, average = (nccl->size() + 1) / 2.0;
  Tensor a = zeros({3, 5}, DType::Float32, nccl->device()).set_requires_grad();
  Tensor b = zeros({16}, DType::Float32, nccl->device()).set_requires_grad();
  DataParallel parallel({a, b}, *nccl, 64);
  EXPECT_EQ(parallel.num_buckets(), nccl->size() == 1 ? 0u : 2u);
  auto times_c = [&](const Tensor& p) { return sum(mul(p, full(p.shape(), c, DType::Float32, nccl->device()))); };
  parallel.backward(add(times_c(a), times_c(b)));
  for (const Tensor& p : {a, b}) {
    ASSERT_EQ(p.grad().device(), nccl->device());
    for (float g : p.grad().to_vector<float>()) ASSERT_EQ(g, float(average));
  }
}

}  // namespace
}  // namespace fuselab

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<fuselab::MpiCommunicator> mpi;
  std::unique_ptr<fuselab::NcclCommunicator> communicator;
  if (fuselab::kernels::cuda::device_count() > 0) {
    mpi = std::make_unique<fuselab::MpiCommunicator>(&argc, &argv);
    communicator = std::make_unique<fuselab::NcclCommunicator>(*mpi);
    fuselab::bootstrap = mpi.get();
    fuselab::nccl = communicator.get();
  }
  const int failed = RUN_ALL_TESTS();
  communicator.reset();
  return failed;
}

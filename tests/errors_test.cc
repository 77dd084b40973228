// Bad input: every shape, dtype and device mismatch throws fuselab::Error naming the op and shapes.
#include <gtest/gtest.h>

#include <functional>

#include "autograd/functional.h"
#include "kernels/cuda/device_api.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"

namespace fuselab {
namespace {

using testing::expect_error;

TEST(Errors, ShapeMismatchesNameOpAndShapes) {
  expect_error([] { matmul(zeros({2, 3}), zeros({4, 5})); }, {"matmul", "[2, 3]", "[4, 5]"});
  expect_error([] { matmul(zeros({2, 3, 4}), zeros({3, 4, 5})); }, {"matmul", "[2, 3, 4]", "[3, 4, 5]"});
  expect_error([] { matmul(zeros({3}), zeros({3})); }, {"matmul", "[3]"});
  expect_error([] { add(zeros({2, 3}), zeros({2})); }, {"add", "[2]", "[2, 3]"});
  expect_error([] { sub(zeros({3, 4}), zeros({2, 1})); }, {"sub", "[3, 4]", "[2, 1]", "NumPy rule"});
  expect_error([] { div(zeros({5}), zeros({3, 4})); }, {"div", "[5]", "[3, 4]", "NumPy rule"});
  expect_error([] { mul(zeros({2, 3}), zeros({3, 2})); }, {"mul", "[3, 2]", "[2, 3]"});
  expect_error([] { mse(zeros({2}), zeros({3})); }, {"mse", "[2]", "[3]"});
  expect_error([] { cross_entropy(zeros({2, 3}), arange(3)); }, {"cross_entropy", "[2, 3]", "[3]"});
  expect_error([] { cross_entropy(zeros({2, 3}), from_vector<int64_t>({0, 3}, {2})); },
               {"cross_entropy", "label 3", "3 classes"});
  expect_error([] { embedding(zeros({4, 2}), from_vector<int64_t>({4}, {1})); }, {"embedding", "id 4", "[4, 2]"});
  expect_error([] { transpose(zeros({3})); }, {"transpose", "[3]"});
  expect_error([] { reshape(zeros({2, 3}), {4}); }, {"reshape:", "[2, 3]", "[4]"});
  expect_error([] { reshape(zeros({2, 3}), {-1, -1}); }, {"reshape:", "more than one -1"});
  expect_error([] { reshape(zeros({2, 3}), {4, -1}); }, {"reshape:", "[2, 3]", "[4, -1]"});
}

TEST(Errors, DtypeMismatchesNameBothOperands) {
  expect_error([] { add(zeros({2}), zeros({2}, DType::Float64)); }, {"add", "float32", "float64"});
  expect_error([] { matmul(zeros({2, 2}), zeros({2, 2}, DType::Float64)); }, {"matmul", "float32", "float64"});
  expect_error([] { relu(arange(3)); }, {"relu", "int64"});
  expect_error([] { cross_entropy(zeros({2, 3}), zeros({2})); }, {"cross_entropy", "int64"});
  expect_error([] { embedding(zeros({4, 2}), zeros({2})); }, {"embedding", "int64"});
}

TEST(Errors, UndefinedTensorsAreRejected) {
  expect_error([] { add(Tensor(), zeros({2})); }, {"add", "undefined"});
  expect_error([] { Tensor().shape(); }, {"undefined"});
}

TEST(Errors, CudaDeviceRequestsFailCleanlyWithoutAGpu) {
  if (kernels::cuda::device_count() > 0) GTEST_SKIP() << "this machine has a GPU; cuda_test covers it";
  expect_error([] { zeros({2}).to(Device::cuda(0)); }, {"to(cuda:0)", "0 CUDA device(s)"});
}

}  // namespace
}  // namespace fuselab

// Bad input: every shape, dtype and device mismatch throws fuselab::Error naming the op and shapes.
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "autograd/functional.h"
#include "kernels/cuda/device_api.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"
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

// The grouped products (GroupedLinear's, the bench's) check their operands against the groups.
TEST(Errors, GroupedProductsNameTheirShapes) {
  const auto grouped = [](const Tensor& out, const Tensor& a, const Tensor& w, bool weight_grad,
                          const std::vector<int64_t>& sizes) {
    math::grouped_matmul_into(out, a, w, weight_grad, /*transpose_w=*/!weight_grad, sizes);
  };
  // a [3, 4] in groups of 2 and 1: w [2, 5, 4] gives out [3, 5]; as weight grads, w [3, 5] gives out [2, 4, 5].
  grouped(zeros({3, 5}), zeros({3, 4}), zeros({2, 5, 4}), false, {2, 1});
  grouped(zeros({2, 4, 5}), zeros({3, 4}), zeros({3, 5}), true, {2, 1});
  expect_error([&] { grouped(zeros({3, 5}), zeros({3, 4}), zeros({2, 5, 4}), false, {2, 2}); },
               {"grouped_matmul_into", "4 rows", "[3, 4]"});
  expect_error([&] { grouped(zeros({3, 5}), zeros({3, 4}), zeros({2, 4, 5}), false, {2, 1}); },
               {"grouped_matmul_into", "[2, 5, 4]", "[2, 4, 5]"});
  expect_error([&] { grouped(zeros({2, 4, 4}), zeros({3, 4}), zeros({3, 5}), true, {2, 1}); },
               {"grouped_matmul_into", "[2, 4, 5]", "[2, 4, 4]"});
  expect_error([&] { grouped(zeros({3, 5}), zeros({3, 4}), zeros({2, 5, 4}, DType::Float64), false, {2, 1}); },
               {"grouped_matmul_into", "float32", "float64"});
  expect_error([&] { grouped(zeros({3, 5}), zeros({3, 4}), zeros({5, 4}), false, {2, 1}); },
               {"grouped_matmul_into", "3-D", "[5, 4]"});
  expect_error([&] { grouped(zeros({3, 5}), zeros({3, 4}), zeros({2, 5, 4}), false, {4, -1}); },
               {"grouped_matmul_into", "size -1"});
  const int64_t most = std::numeric_limits<int64_t>::max();
  expect_error([&] { grouped(zeros({0, 5}), zeros({0, 4}), zeros({3, 5, 4}), false, {most, most, 2}); },
               {"grouped_matmul_into", "sum past the largest int64"});
  expect_error([&] { grouped(zeros({3, 5}), Tensor(), zeros({2, 5, 4}), false, {2, 1}); },
               {"grouped_matmul_into", "must be defined"});
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

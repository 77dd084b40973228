// FUSELAB_CPU_GEMM names a library FuseLab does not have (the target sets it to "mkl"): a CPU
// matmul throws fuselab::Error that names the variable and the value, instead of picking one.
#include <gtest/gtest.h>

#include "tensor/factories.h"
#include "tensor/tensor_math.h"
#include "tests/expect_error.h"

namespace fuselab::testing {
namespace {

TEST(CpuGemmEnvironment, AnUnknownLibraryIsAnError) {
  expect_error([] { math::matmul(ones({2, 3}), false, ones({3, 4}), false); },
               {"matmul", "FUSELAB_CPU_GEMM='mkl'", "openblas", "onednn"});
}

}  // namespace
}  // namespace fuselab::testing

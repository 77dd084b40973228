// FUSELAB_CPU_GEMM names a library FuseLab does not have (the target sets it to "mkl"): the first
// CPU kernel (here the fill that makes the operands) and every later one throw fuselab::Error naming
// the op, the variable and the value, instead of picking a library.
#include <gtest/gtest.h>

#include "tensor/factories.h"
#include "tests/expect_error.h"

namespace fuselab::testing {
namespace {

TEST(CpuGemmEnvironment, AnUnknownLibraryIsAnError) {
  expect_error([] { ones({2, 3}); }, {"fill_", "FUSELAB_CPU_GEMM='mkl'", "openblas", "onednn"});
  expect_error([] { ones({4}); }, {"fill_", "FUSELAB_CPU_GEMM='mkl'"});  // not only the first time
}

}  // namespace
}  // namespace fuselab::testing

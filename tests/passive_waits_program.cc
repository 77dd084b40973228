// tests/startup_test.sh's program that chooses passive OpenMP waits, first thing in main, as the
// examples do; then it prints its OMP_WAIT_POLICY and runs OpenMP threads through a float64 GEMM.
#include <cstdio>
#include <cstdlib>

#include "runtime/runtime.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

int main(int argc, char** argv) {
  fuselab::use_passive_waits(argc, argv);
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::printf("main started with OMP_WAIT_POLICY %s\n", policy ? policy : "unset");
  using namespace fuselab;
  const Tensor product = math::matmul(ones({2, 3}, DType::Float64), false, ones({3, 2}, DType::Float64), false);
  std::printf("product[0, 0] = %g\n", product.data<double>()[0]);
  return 0;
}

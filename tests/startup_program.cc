// A program that links FuseLab and owns its process, for tests/startup_test.sh: main prints first
// (unflushed: an exec would lose it), then asks FuseLab for a float64 GEMM, which loads OpenBLAS.
// With --passive-waits it first chooses passive OpenMP waits, as the examples do.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/error.h"
#include "runtime/runtime.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--passive-waits") fuselab::use_passive_waits(argc, argv);
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::printf("main started in process %d with OMP_WAIT_POLICY %s\n", int(getpid()), policy ? policy : "unset");
  try {
    using namespace fuselab;
    const Tensor product = math::matmul(ones({2, 3}, DType::Float64), false, ones({3, 2}, DType::Float64), false);
    std::printf("product[0, 0] = %g\n", product.to(Device::cpu()).data<double>()[0]);
  } catch (const fuselab::Error& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  return 0;
}

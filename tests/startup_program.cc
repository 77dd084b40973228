// A program that links FuseLab and owns its process, for tests/startup_test.sh: main prints first
// (unflushed: an exec would lose it), then asks FuseLab for a float64 GEMM, which loads OpenBLAS,
// and a float32 one large enough for oneDNN, which loads oneDNN.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "runtime/error.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

int main() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::printf("main started in process %d with OMP_WAIT_POLICY %s\n", int(getpid()), policy ? policy : "unset");
  try {
    using namespace fuselab;
    const Tensor product = math::matmul(ones({2, 3}, DType::Float64), false, ones({3, 2}, DType::Float64), false);
    std::printf("product[0, 0] = %g\n", product.data<double>()[0]);
    const Tensor wide = math::matmul(ones({128, 64}), false, ones({64, 128}), false);
    std::printf("float32 product[0, 0] = %g\n", wide.data<float>()[0]);
  } catch (const fuselab::Error& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  return 0;
}

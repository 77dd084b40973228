#include "kernels/cpu/threading.h"

#include <omp.h>

#include <cstdlib>

#include "kernels/cpu/openblas.h"

namespace fuselab::kernels::cpu {
namespace {

int threads_from_environment() {
  const char* value = std::getenv("FUSELAB_NUM_THREADS");
  const int requested = value ? std::atoi(value) : 0;
  return requested > 0 ? requested : omp_get_num_procs();
}

int& configured_threads() {
  static int threads = [] {
    const int n = threads_from_environment();
    omp_set_num_threads(n);
    openblas().set_num_threads(n);
    return n;
  }();
  return threads;
}

// Applies the setting before main() so every kernel sees it.
const int kApplied = configured_threads();

}  // namespace

int num_threads() { return configured_threads(); }

void set_num_threads(int threads) {
  configured_threads() = threads;
  omp_set_num_threads(threads);
  openblas().set_num_threads(threads);
}

}  // namespace fuselab::kernels::cpu

#include "kernels/cpu/threading.h"

#include <omp.h>

#include <atomic>

#include "kernels/cpu/openblas.h"
#include "runtime/settings.h"

namespace fuselab::kernels::cpu {
namespace {

// FUSELAB_NUM_THREADS, or every core; applied to OpenMP on the first call (OpenBLAS takes it when
// it loads). Nothing runs before main: a program that never calls a kernel never reads it.
std::atomic<int>& configured_threads() {
  static std::atomic<int> threads{[] {
    const int setting = runtime::settings().num_threads;
    const int n = setting > 0 ? setting : omp_get_num_procs();
    omp_set_num_threads(n);
    return n;
  }()};
  return threads;
}

}  // namespace

int num_threads() { return configured_threads(); }

void set_num_threads(int threads) {
  configured_threads() = threads;
  omp_set_num_threads(threads);
  if (const OpenBlas* loaded = openblas_if_loaded()) loaded->set_num_threads(threads);
}

}  // namespace fuselab::kernels::cpu

#include "kernels/cpu/threading.h"

#include <omp.h>

#include <atomic>

#include "kernels/cpu/openblas.h"
#include "runtime/settings.h"

namespace fuselab::kernels::cpu {
namespace {

// FUSELAB_NUM_THREADS, or every core, read on the first call (OpenBLAS takes it when it loads).
// Nothing runs before main: a program that never calls a kernel never reads it.
std::atomic<int>& configured_threads() {
  static std::atomic<int> threads{[] {
    const int setting = runtime::settings().num_threads;
    return setting > 0 ? setting : omp_get_num_procs();
  }()};
  return threads;
}

}  // namespace

int num_threads() { return configured_threads(); }

// omp_set_num_threads sets the calling thread's count only, so each thread that launches kernels
// applies the configured count once, and again after set_num_threads changes it.
void apply_num_threads() {
  thread_local int applied = 0;
  const int threads = configured_threads();
  if (applied == threads) return;
  omp_set_num_threads(threads);
  applied = threads;
}

void set_num_threads(int threads) {
  configured_threads() = threads;
  apply_num_threads();
  if (const OpenBlas* loaded = openblas_if_loaded()) loaded->set_num_threads(threads);
}

}  // namespace fuselab::kernels::cpu

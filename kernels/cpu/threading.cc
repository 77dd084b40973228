#include "kernels/cpu/threading.h"

#include <omp.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "kernels/cpu/openblas.h"

namespace fuselab::kernels::cpu {
namespace {

// FUSELAB_NUM_THREADS, or every core. This runs before main(), where nothing can be thrown, so
// a value that is not a positive integer is reported on stderr instead of passing silently.
int threads_from_environment() {
  const int cores = omp_get_num_procs();
  const char* value = std::getenv("FUSELAB_NUM_THREADS");
  if (!value) return cores;
  char* end = nullptr;
  errno = 0;
  const long requested = std::strtol(value, &end, 10);
  if (end != value && *end == '\0' && errno == 0 && requested > 0 && requested <= 4096) return int(requested);
  std::fprintf(stderr, "fuselab: FUSELAB_NUM_THREADS='%s' is not a thread count in [1, 4096]; using %d threads\n",
               value, cores);
  return cores;
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

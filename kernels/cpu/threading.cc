#include "kernels/cpu/threading.h"

#include <omp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "kernels/cpu/openblas.h"

namespace fuselab::kernels::cpu {
namespace {

// libgomp reads its wait policy once, in its own constructor, and that runs before any of
// FuseLab's (a library is initialised before the program that links it; a setenv() from
// .preinit_array is lost too, as glibc resets the environment after it). So unless the
// environment names a policy, FuseLab sets passive and runs the program again, once, with the
// same arguments, before any other FuseLab code has run (glibc passes constructors argv). If
// the exec fails, the program carries on with libgomp's default.
__attribute__((constructor(101))) void use_passive_waits(int, char** argv, char**) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/1);
  execv("/proc/self/exe", argv);
}

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

// use_passive_waits (runtime/runtime.h), in a file of its own so that only a program that calls it
// links a call to exec.
#include <unistd.h>

#include <cstdlib>

#include "runtime/runtime.h"

namespace fuselab {

void use_passive_waits(int argc, char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (argc < 1 || !argv || !argv[0]) return;
  setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/1);
  execv("/proc/self/exe", argv);
}

}  // namespace fuselab

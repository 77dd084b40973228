#include "kernels/cpu/openblas.h"

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cpu/threading.h"
#include "runtime/shared_library.h"
#include "runtime/settings.h"

namespace fuselab::kernels::cpu {
namespace {

const char* best_core_type() {
  if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
  if (__builtin_cpu_supports("avx2")) return "Haswell";
  return nullptr;  // let OpenBLAS decide
}

template <class Fn>
Fn symbol(const runtime::SharedLibrary& library, const char* name) {
  return reinterpret_cast<Fn>(library.symbol(name));
}

OpenBlas load() {
  if (const char* core = best_core_type()) setenv("OPENBLAS_CORETYPE", core, /*overwrite=*/0);
  // The OpenMP build shares FuseLab's OpenMP threads; the default (pthreads) build's threads
  // would spin against them on the same cores.
  const std::string& chosen = runtime::settings().openblas;
  static const runtime::SharedLibrary library(
      "OpenBLAS",
      chosen.empty() ? std::vector<std::string>{"/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0",
                                                "libopenblas.so.0"}
                     : std::vector<std::string>{chosen},
      "Debian's libopenblas0-openmp (bash tools/setup.sh)");
  OpenBlas blas{symbol<OpenBlas::Sgemm>(library, "cblas_sgemm"), symbol<OpenBlas::Dgemm>(library, "cblas_dgemm"),
                symbol<void (*)(int)>(library, "openblas_set_num_threads"),
                symbol<char* (*)()>(library, "openblas_get_corename")()};
  blas.set_num_threads(num_threads());
  return blas;
}

std::atomic<const OpenBlas*> loaded{nullptr};

}  // namespace

const OpenBlas& openblas() {
  static const OpenBlas& instance = *(loaded = new OpenBlas(load()));  // never unloaded
  return instance;
}

const OpenBlas* openblas_if_loaded() { return loaded; }

}  // namespace fuselab::kernels::cpu

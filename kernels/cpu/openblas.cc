#include "kernels/cpu/openblas.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/threading.h"
#include "runtime/settings.h"

namespace fuselab::kernels::cpu {
namespace {

const char* best_core_type() {
  if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
  if (__builtin_cpu_supports("avx2")) return "Haswell";
  return nullptr;  // let OpenBLAS decide
}

template <class Fn>
Fn symbol(void* library, const char* name) {
  void* address = dlsym(library, name);
  if (!address) throw std::runtime_error(std::string("OpenBLAS: the library FuseLab loaded has no ") + name);
  return reinterpret_cast<Fn>(address);
}

OpenBlas load() {
  if (const char* core = best_core_type()) setenv("OPENBLAS_CORETYPE", core, /*overwrite=*/0);
  // The OpenMP build shares FuseLab's OpenMP threads; the default (pthreads) build's threads
  // would spin against them on the same cores.
  const std::string& chosen = runtime::settings().openblas;
  const std::vector<std::string> candidates =
      chosen.empty() ? std::vector<std::string>{"/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0",
                                                "libopenblas.so.0"}
                     : std::vector<std::string>{chosen};
  void* library = nullptr;
  std::string reasons;
  for (const std::string& name : candidates) {
    if ((library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    reasons += std::string("; ") + dlerror();
  }
  if (!library) {
    throw std::runtime_error("OpenBLAS is needed for this CPU GEMM and could not be loaded; install Debian's "
                             "libopenblas0-openmp (bash tools/setup.sh)" + reasons);
  }
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

#include "kernels/cpu/openblas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>

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
  if (!address) throw std::runtime_error(std::string("OpenBLAS: missing symbol ") + name);
  return reinterpret_cast<Fn>(address);
}

OpenBlas load() {
  if (const char* core = best_core_type()) setenv("OPENBLAS_CORETYPE", core, /*overwrite=*/0);
  // The OpenMP build shares FuseLab's OpenMP threads; the default (pthreads) build's threads
  // would spin against them on the same cores.
  void* library = dlopen("/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!library) library = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    throw std::runtime_error(std::string("cannot load OpenBLAS (apt-get install libopenblas0-openmp): ") + dlerror());
  }
  return {symbol<OpenBlas::Sgemm>(library, "cblas_sgemm"), symbol<OpenBlas::Dgemm>(library, "cblas_dgemm"),
          symbol<void (*)(int)>(library, "openblas_set_num_threads"),
          symbol<char* (*)()>(library, "openblas_get_corename")()};
}

}  // namespace

const OpenBlas& openblas() {
  static const OpenBlas instance = load();
  return instance;
}

}  // namespace fuselab::kernels::cpu

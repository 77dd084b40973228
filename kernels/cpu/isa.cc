#include "kernels/cpu/isa.h"

#include <atomic>

#include "runtime/settings.h"

namespace fuselab::kernels::cpu {
namespace {

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
}

std::atomic<bool>& enabled() {
  static std::atomic<bool> on{runtime::settings().avx512};
  return on;
}

}  // namespace

bool use_avx512() {
  static const bool available = cpu_has_avx512();
  return available && enabled();
}

void set_avx512_enabled(bool on) { enabled() = on; }

}  // namespace fuselab::kernels::cpu

#include "kernels/cpu/isa.h"

#include <atomic>

#include "runtime/settings.h"

namespace fuselab::kernels::cpu {
namespace {

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

std::atomic<bool>& enabled() {
  static std::atomic<bool> on{runtime::settings().avx512};
  return on;
}

std::atomic<bool>& avx2_enabled() {
  static std::atomic<bool> on{true};
  return on;
}

}  // namespace

bool cpu_has_avx512() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  }();
  return has;
}

bool use_avx512() {
  static const bool available = cpu_has_avx512();
  return available && enabled();
}

void set_avx512_enabled(bool on) { enabled() = on; }

bool use_avx2() {
  static const bool available = cpu_has_avx2();
  return available && avx2_enabled();
}

void set_avx2_enabled(bool on) { avx2_enabled() = on; }

}  // namespace fuselab::kernels::cpu

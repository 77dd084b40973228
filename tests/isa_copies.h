// The instruction-set copies the CPU kernels pick from (kernels/cpu/isa.h), for tests that run a
// kernel on each and compare. On a CPU without AVX2 or AVX-512 a copy falls back to the best it has.
#pragma once

#include <utility>

#include "kernels/cpu/isa.h"

namespace fuselab::testing {

struct IsaCopy {
  const char* name;
  bool avx2, avx512;
};

inline constexpr IsaCopy kIsaCopies[] = {{"baseline", false, false}, {"AVX2", true, false}, {"AVX-512", true, true}};

// fn() with `copy` switched on, then the environment's choice (FUSELAB_DISABLE_AVX512) back.
template <class F>
auto with_isa(const IsaCopy& copy, F&& fn) {
  namespace cpu = kernels::cpu;
  const bool avx2_was = cpu::use_avx2(), avx512_was = cpu::use_avx512();
  cpu::set_avx2_enabled(copy.avx2);
  cpu::set_avx512_enabled(copy.avx512);
  struct Restore {
    bool avx2, avx512;
    ~Restore() {
      kernels::cpu::set_avx2_enabled(avx2);
      kernels::cpu::set_avx512_enabled(avx512);
    }
  } restore{avx2_was, avx512_was};
  return std::forward<F>(fn)();
}

}  // namespace fuselab::testing

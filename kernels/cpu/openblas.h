// OpenBLAS, loaded by FuseLab itself so that it runs its best kernels on this CPU.
//
// OpenBLAS chooses its kernels once, when it is loaded, from the CPU model. Debian's 0.3.21 does
// not know recent Xeons and falls back to its SSE3 "Prescott" kernels: 17-28 GFLOP/s instead of
// about 100 on this machine's AVX-512 cores. Linking it normally loads it before main() can react,
// so FuseLab dlopen()s it on first use, after naming the core type from the CPU's features
// (AVX-512: SkylakeX, AVX2: Haswell) unless the user already set OPENBLAS_CORETYPE.
#pragma once

#include <string>

namespace fuselab::kernels::cpu {

struct OpenBlas {
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                         float*, int);
  using Dgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                         double*, int);
  Sgemm sgemm;
  Dgemm dgemm;
  void (*set_num_threads)(int);
  std::string core;  // the kernels OpenBLAS runs, e.g. "SkylakeX"
};

// Loads OpenBLAS on first call; throws std::runtime_error if libopenblas.so.0 is missing.
const OpenBlas& openblas();

}  // namespace fuselab::kernels::cpu

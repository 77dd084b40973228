// OpenBLAS, loaded by FuseLab itself so that it runs its best kernels on this CPU.
//
// OpenBLAS chooses its kernels once, when it is loaded, from the CPU model. Debian's 0.3.21 does
// not know recent Xeons and falls back to its SSE3 "Prescott" kernels: 17-28 GFLOP/s instead of
// about 100 on this machine's AVX-512 cores. Linking it normally loads it before main() can react,
// so FuseLab dlopen()s it on first use, after naming the core type from the CPU's features
// (AVX-512: SkylakeX, AVX2: Haswell) unless the user already set OPENBLAS_CORETYPE. That is the one
// change FuseLab makes to the environment, at the first GEMM, and only for OpenBLAS to read.
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

// Loads OpenBLAS on the first call (FUSELAB_OPENBLAS, else Debian's OpenMP build, else
// libopenblas.so.0) and gives it num_threads() threads; when none loads, throws an exception
// naming the library and the Debian package (launch() makes it a fuselab::Error naming the op).
const OpenBlas& openblas();

// OpenBLAS when an earlier call loaded it, else null (loads nothing).
const OpenBlas* openblas_if_loaded();

}  // namespace fuselab::kernels::cpu

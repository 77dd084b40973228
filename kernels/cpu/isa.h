// Runtime choice of instruction set for the compute-bound loops.
//
// Binaries are built for baseline x86-64 (SSE2) so they run on any machine. The activation loops
// (activation_spans.h), the norms' backward rows (norms.cc), the all-element sums (elementwise.cc)
// and FlashAttention's exponential rows (flash_attention.cc) are also compiled for AVX2 + FMA (8
// floats an instruction, fused multiply-adds) and for AVX-512 (16), and the kernels pick the best
// copy this CPU has at run time (pick_isa). FUSELAB_DISABLE_AVX512=1, or set_avx512_enabled(false),
// keeps the AVX2 or baseline copy; set_avx2_enabled(false) the baseline one (tests compare them).
#pragma once

namespace fuselab::kernels::cpu {

#define FUSELAB_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")))

#define FUSELAB_TARGET_AVX2 __attribute__((target("avx2,fma")))

bool cpu_has_avx512();  // the CPU has AVX-512 (F, VL, DQ, BW), switched off or not
bool use_avx512();      // the CPU has AVX-512 and it is not switched off
void set_avx512_enabled(bool enabled);
bool use_avx2();  // the CPU has AVX2 and FMA and it is not switched off
void set_avx2_enabled(bool enabled);

// The copy of a function for the best instruction set in use: pick_isa(avx512_f, avx2_f, baseline_f).
template <class F>
F pick_isa(F avx512, F avx2, F baseline) {
  return use_avx512() ? avx512 : use_avx2() ? avx2 : baseline;
}

}  // namespace fuselab::kernels::cpu

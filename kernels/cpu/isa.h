// Runtime choice of instruction set for the compute-bound loops.
//
// Binaries are built for baseline x86-64 (SSE2) so they run on any machine. The activation loops
// (activation_spans.h), the norms' backward rows (norms.cc), the all-element sums (elementwise.cc)
// and FlashAttention's exponential rows (flash_attention.cc) are also compiled for AVX-512, and the
// kernels pick that copy at run time on CPUs that have it: 16 floats per instruction instead of 4.
// The activation loops have an AVX2 + FMA copy too (8 floats, fused multiply-adds), for the CPUs
// without AVX-512. FUSELAB_DISABLE_AVX512=1, or set_avx512_enabled(false), keeps the AVX2 or
// baseline copy; set_avx2_enabled(false) the baseline one (tests compare them).
#pragma once

namespace fuselab::kernels::cpu {

#define FUSELAB_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")))

#define FUSELAB_TARGET_AVX2 __attribute__((target("avx2,fma")))

bool use_avx512();  // the CPU has AVX-512 (F, VL, DQ, BW) and it is not switched off
void set_avx512_enabled(bool enabled);
bool use_avx2();  // the CPU has AVX2 and FMA and it is not switched off
void set_avx2_enabled(bool enabled);

}  // namespace fuselab::kernels::cpu

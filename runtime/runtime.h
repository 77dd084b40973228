// What a program asks of FuseLab's runtime from its own main: how many CPU threads the kernels
// use, which CUDA devices there are, and how OpenMP's threads wait. Nothing here, and nothing else
// in FuseLab, runs before main: settings (runtime/settings.h) are read, OpenBLAS is loaded and the
// CUDA devices are found on the first call that needs them. (oneDNN and, in a CUDA build, the CUDA
// runtime are linked as usual, so the dynamic loader needs them to start the program.)
#pragma once

#include <string>

#include "tensor/device.h"

namespace fuselab {

// The CPU kernels' and OpenBLAS's threads: FUSELAB_NUM_THREADS, every core, or what
// set_num_threads() set. set_num_threads throws fuselab::Error unless 1 <= threads <= 4096.
int num_threads();
void set_num_threads(int threads);

// CUDA devices on this machine (0 without a driver, a GPU or a CUDA build: never throws).
int cuda_device_count();
// Waits for the kernels queued on `device` (nothing to wait for on the CPU).
void synchronize(Device device);

// Which library runs each CPU GEMM and which kernels it picked for this CPU (loads OpenBLAS).
std::string cpu_gemm_description();

// Makes OpenMP's threads sleep at a barrier instead of spinning (OMP_WAIT_POLICY=passive), the
// program's choice for a shared machine (kernels/cpu/threading.h has the measurements). libgomp
// reads its policy once, when it is loaded, before main: so unless the environment already names a
// policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT), this sets it and executes the program again, once,
// with the same arguments. Call it first thing in main, before any output or other work: what
// happened before it happens twice. If the exec fails, the program carries on as it was.
void use_passive_waits(int argc, char** argv);

}  // namespace fuselab

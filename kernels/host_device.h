// FUSELAB_HOST_DEVICE marks math that both the CPU kernels and the CUDA kernels call.
#pragma once

#if defined(__CUDACC__)
#define FUSELAB_HOST_DEVICE __host__ __device__
#else
#define FUSELAB_HOST_DEVICE
#endif

"""`cuda_library`: compiles .cu files with nvcc (sm_80 and sm_90) into a cc_library.

Bazel 4 has no CUDA rules, so each .cu file becomes one genrule that runs `nvcc -c`, and the
objects go into a cc_library that links the CUDA runtime statically (it opens the driver at the first
CUDA call); cuBLASLt and cuDNN are opened on first use (kernels/cuda/cuda_libraries.cc).
"""

load("@local_cuda//:defs.bzl", "CUDA_PATH")

NVCC_FLAGS = " ".join([
    "-O3",
    "-std=c++17",
    "-Xcompiler=-fPIC",
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=sm_90",
    "-I.",
])

CUDA_LINKOPTS = [
    "-L%s/lib64" % CUDA_PATH,
    "-lcudart_static",
    "-ldl",
    "-lrt",
    "-lpthread",
]

# NCCL (in the toolkit's lib/ on these machines) is linked as usual, by the distributed programs only.
NCCL_LINKOPTS = [
    "-L%s/lib" % CUDA_PATH,
    "-Wl,-rpath,%s/lib" % CUDA_PATH,
    "-lnccl",
] + CUDA_LINKOPTS

def cuda_library(name, srcs, hdrs = [], deps = [], **kwargs):
    objects = []
    for src in srcs:
        obj = "%s_%s.o" % (name, src.replace("/", "_").replace(".cu", ""))
        native.genrule(
            name = obj.replace(".o", "_nvcc"),
            srcs = [src] + hdrs,
            outs = [obj],
            cmd = "%s/bin/nvcc %s -c $(location %s) -o $@" % (CUDA_PATH, NVCC_FLAGS, src),
        )
        objects.append(obj)
    native.cc_library(
        name = name,
        srcs = objects,
        hdrs = hdrs,
        deps = deps,
        copts = ["-isystem", CUDA_PATH + "/include"],
        linkopts = CUDA_LINKOPTS,
        **kwargs
    )

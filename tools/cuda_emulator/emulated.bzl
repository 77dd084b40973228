"""`emulated_cuda_library`: .cu files compiled as host C++ against the CUDA emulator.

Each .cu file, with the .cuh headers it includes, goes through rewrite_launches (a genrule), then the C++ toolchain compiles it with
tools/cuda_emulator/include ahead of everything, so `<cuda_runtime.h>` is the emulator's. The
library has the same symbols as the nvcc-built one, so a program can link it instead.
"""

def emulated_cuda_library(name, srcs, hdrs = [], deps = [], **kwargs):
    rewritten = []
    for src in srcs:
        out = "%s_%s.cc" % (name, src.replace("/", "_").replace(".cu", ""))
        native.genrule(
            name = out.replace(".cc", "_rewrite"),
            srcs = [src] + [h for h in hdrs if h.endswith(".cuh")],  # pasted in by the rewrite
            outs = [out],
            tools = ["//tools/cuda_emulator:rewrite_launches"],
            cmd = "$(location //tools/cuda_emulator:rewrite_launches) $(location %s) $@" % src,
        )
        rewritten.append(out)
    native.cc_library(
        name = name,
        srcs = rewritten,
        hdrs = hdrs,
        deps = deps + ["//tools/cuda_emulator:runtime"],
        copts = ["-Itools/cuda_emulator/include"],
        **kwargs
    )

def cc_binary_with_emulated_kernels(name, deps, **kwargs):
    """`name` linked with the CUDA kernels (//kernels/cuda), and `name`_emulated with the emulator's.

    The emulated one is testonly: its --device cuda runs without a GPU, slowly.
    """
    native.cc_binary(name = name, deps = deps + ["//kernels/cuda"], **kwargs)
    native.cc_binary(
        name = name + "_emulated",
        testonly = True,
        deps = deps + ["//kernels/cuda:kernels_emulated"],
        **kwargs
    )

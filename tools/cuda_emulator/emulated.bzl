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

"""Repository rule for the CUDA toolkit installed on this machine (/usr/local/cuda or $CUDA_PATH).

It writes `defs.bzl` (CUDA_AVAILABLE, CUDA_PATH) and, when the toolkit is there, links its
`include` folder into the repository, so host code can `#include <cuda_runtime.h>` or `<nccl.h>`
through `@local_cuda//:headers` (Bazel refuses include paths outside the execution root).
"""

_BUILD_WITH_CUDA = """
package(default_visibility = ["//visibility:public"])

exports_files(["defs.bzl"])

cc_library(
    name = "headers",
    # The top-level headers and the folders they include (not all of CCCL).
    hdrs = glob(["include/*.h", "include/*.hpp", "include/crt/**", "include/nv/**"]),
    includes = ["include"],
)
"""

def _local_cuda_impl(ctx):
    cuda_path = ctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    available = ctx.path(cuda_path + "/bin/nvcc").exists
    if available:
        ctx.symlink(cuda_path + "/include", "include")
        ctx.file("BUILD", _BUILD_WITH_CUDA)
    else:
        ctx.file("BUILD", 'exports_files(["defs.bzl"])\n')
    ctx.file("defs.bzl", "CUDA_AVAILABLE = %s\nCUDA_PATH = %r\n" % (available, cuda_path))

local_cuda = repository_rule(
    implementation = _local_cuda_impl,
    local = True,
    environ = ["CUDA_PATH"],
)

"""Repository rule that records whether the CUDA toolkit is installed on this machine."""

def _local_cuda_impl(ctx):
    cuda_path = ctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    available = ctx.path(cuda_path + "/bin/nvcc").exists
    ctx.file("BUILD", 'exports_files(["defs.bzl"])\n')
    ctx.file("defs.bzl", "CUDA_AVAILABLE = %s\nCUDA_PATH = %r\n" % (available, cuda_path))

local_cuda = repository_rule(
    implementation = _local_cuda_impl,
    local = True,
    environ = ["CUDA_PATH"],
)

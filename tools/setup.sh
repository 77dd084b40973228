#!/usr/bin/env bash
# Installs what FuseLab needs to build and test, from Debian's packages, when it is missing.
# Idempotent and quiet when everything is already there. The CUDA toolkit is optional: without
# /usr/local/cuda/bin/nvcc the build leaves CUDA out by itself.
set -euo pipefail

packages=(
  bazel-bootstrap   # Bazel 4.2.3, used offline (WORKSPACE mode)
  g++
  libgtest-dev      # GoogleTest
  libbenchmark-dev  # Google Benchmark
  libcli11-dev      # command-line flags of the examples and tools (examples/flags.h)
  libopenblas-dev   # GEMMs (loaded at run time: kernels/cpu/openblas.h)
  nlohmann-json3-dev  # the safetensors header
  libopenblas0-openmp  # the OpenBLAS build that shares FuseLab's OpenMP threads
  libsentencepiece-dev  # subword tokens (text/bpe_tokenizer.h, through //text:libfuselab_sentencepiece.so)
  libdnnl-dev       # oneDNN 2.6: CPU GEMMs with fused post-ops, and bfloat16 (kernels/cpu/gemm.h)
  libopenmpi-dev    # MPI for data-parallel training (distributed/)
  openmpi-bin       # mpirun
  wamerican         # /usr/share/dict/words, charlm's default data
  fortunes          # /usr/share/games/fortunes, the running text of the character-level GPT (data/text_corpus.h)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  if ! $sudo apt-get install -y -qq "${missing[@]}" >/dev/null; then
    $sudo apt-get update -qq >/dev/null
    $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

#!/usr/bin/env bash
# GPU checks in two steps, because the GPU machine has no Bazel:
#
#   bash tools/gpu_check.sh pack         # here: build, then copy binaries and libraries to .gpu/
#   bash .gpu/gpu_check.sh run LOGDIR    # on the GPU machine, from the repository root
#
# `run` checks that every library resolves, runs the GPU tests (cuda_test and op_cases_test; their
# device tests again under compute-sanitizer memcheck; nccl_test with one rank), trains charlm on the GPU for 3000
# steps, then runs //tools:bench on CUDA for the MLP block, the norm block and the MoE block at
# sizes that fill the chip, and PyTorch eager on the same shapes when torch is installed, and RMSNorm's bandwidth
# against a device-to-device copy. Logs go to LOGDIR; a table is printed last. Exit status: 0 when every
# test passed.
set -uo pipefail
mode="${1:-}"

pack() {
  set -e
  cd "$(dirname "$0")/.."
  local targets=(//tests:cuda_test //tests:op_cases_test //tests/distributed:nccl_test //tools:bench //examples:charlm)
  bazel build "${targets[@]}"
  rm -rf .gpu && mkdir -p .gpu/lib
  # The binaries find Bazel's shared libraries at $ORIGIN/../_solib_k8: keep bazel-bin's layout.
  for binary in tests/cuda_test tests/op_cases_test tests/distributed/nccl_test tools/bench examples/charlm; do
    mkdir -p ".gpu/$(dirname "$binary")" && cp "bazel-bin/$binary" ".gpu/$binary"
  done
  cp -rL bazel-bin/_solib_k8 .gpu/
  # System libraries the GPU machine may lack (not CUDA's: it has those), and the OpenMP OpenBLAS
  # that kernels/cpu dlopen()s.
  ldd .gpu/tests/cuda_test .gpu/tests/op_cases_test .gpu/tests/distributed/nccl_test .gpu/tools/bench .gpu/examples/charlm |
    awk '$3 ~ /^\// && $3 !~ /_solib|cuda|libc\.so|libm\.so|ld-linux|libpthread|libdl\.so|librt\.so|libstdc|libgcc_s/ { print $3 }' |
    sort -u | xargs -I{} cp -L {} .gpu/lib/
  local openblas=/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0
  cp -L "$openblas" .gpu/lib/libopenblas.so.0
  ldd "$openblas" | awk '$3 ~ /gfortran|quadmath/ { print $3 }' | xargs -I{} cp -L {} .gpu/lib/
  cp -L /lib/x86_64-linux-gnu/libstdc++.so.6 .gpu/lib/  # newer than some machines' own
  cp tools/gpu_check.sh bench/peers/pytorch_bench.py .gpu/
  cp /usr/share/dict/words .gpu/words  # charlm's data
  grep -qx '.gpu/' .git/info/exclude 2>/dev/null || echo '.gpu/' >>.git/info/exclude
  du -sh .gpu
  echo "packed: run 'bash .gpu/gpu_check.sh run LOGDIR' on the GPU machine (device tool: carry .gpu)"
}

# CUDA's libraries: the toolkit's folders, then any pip-installed nvidia/*/lib (PyTorch's).
cuda_library_path() {
  local dirs=(/usr/local/cuda/lib64 /usr/local/cuda/lib)
  for d in /usr/local/lib/python3*/dist-packages/nvidia/*/lib /usr/lib/python3*/site-packages/nvidia/*/lib \
    "$HOME"/.local/lib/python3*/site-packages/nvidia/*/lib; do
    [ -d "$d" ] && dirs+=("$d")
  done
  local IFS=:
  echo "${dirs[*]}"
}

run() {
  local logs="${1:?usage: gpu_check.sh run LOGDIR}"
  local gpu
  gpu="$(cd "$(dirname "$0")" && pwd)"
  mkdir -p "$logs"
  export LD_LIBRARY_PATH="$gpu/lib:$(cuda_library_path)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$PATH:/usr/local/cuda/bin"  # compute-sanitizer
  local status=0 rows=()
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >"$logs/device.txt" 2>&1
  if ldd "$gpu"/tests/cuda_test "$gpu"/tests/op_cases_test "$gpu"/tests/distributed/nccl_test "$gpu"/tools/bench \
    "$gpu"/examples/charlm |
    grep "not found" >"$logs/ldd_missing.txt"; then
    cat "$logs/ldd_missing.txt"
    status=1
  fi

  # name, command...: runs a test, keeps its log, adds a row to the table. GPU time is short, so
  # each step is cut off after $limit seconds (exit 124) instead of eating the rest of it.
  local limit=240
  check() {
    local name="$1"
    shift
    local start=$SECONDS
    if timeout "$limit" "$@" >"$logs/$name.log" 2>&1; then
      rows+=("$(printf '%-28s passed in %3d s (%d ok, %d skipped)' "$name" $((SECONDS - start)) \
        "$(grep -c '^\[       OK' "$logs/$name.log")" "$(grep -cE '^\[  SKIPPED \] .*\([0-9]+ ms\)$' "$logs/$name.log")")")
    else
      rows+=("$(printf '%-28s FAILED (exit %d): see %s' "$name" $? "$logs/$name.log")")
      status=1
    fi
  }
  export GTEST_COLOR=no
  check cuda_test "$gpu/tests/cuda_test"
  check op_cases_test "$gpu/tests/op_cases_test"
  if command -v compute-sanitizer >/dev/null; then
    check cuda_test_memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$gpu/tests/cuda_test" \
      --gtest_filter='Cuda.RoundTrip*:Cuda.BackwardAddNorm*:Cuda.IdsAndLabels*:Cuda.FusedSequential*:Cuda.Conv2d*:Cuda.LinearEpilogues*:Cuda.BFloat16MatchesCpu'
    check op_cases_test_memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$gpu/tests/op_cases_test" \
      --gtest_filter='*Cuda*'
  else
    rows+=("cuda_test_memcheck           SKIPPED: no compute-sanitizer on PATH")
  fi
  if command -v mpirun >/dev/null; then
    check nccl_test mpirun -np 1 --allow-run-as-root "$gpu/tests/distributed/nccl_test"
  else
    check nccl_test "$gpu/tests/distributed/nccl_test"  # MPI as a singleton
  fi

  # The main job on the GPU: the same run as on the CPU, so the losses can be compared.
  check charlm_cuda "$gpu/examples/charlm" --device cuda --data "$gpu/words" --steps 3000 --json "$logs/charlm_cuda.json"

  # moe_block: 8 experts, top-2, expert hidden 512 (both programs' defaults), its GEMMs grouped.
  local benches=("mlp_block 16384 1024 float32" "mlp_block 4096 1024 float32" "mlp_block 16384 1024 bfloat16"
    "norm_block 16384 4096 float32" "moe_block 16384 1024 float32" "moe_block 16384 1024 bfloat16")
  for b in "${benches[@]}"; do
    read -r model tokens hidden dtype <<<"$b"
    local name="${model}_${tokens}_$dtype"
    timeout "$limit" "$gpu/tools/bench" --device cuda --model "$model" --tokens "$tokens" --hidden "$hidden" \
      --dtype "$dtype" --iters 20 --json "$logs/bench_$name.json" >"$logs/bench_$name.log" 2>&1 || status=1
    if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
      timeout "$limit" python3 "$gpu/pytorch_bench.py" --device cuda --model "$model" --tokens "$tokens" --hidden "$hidden" \
        --dtype "$dtype" --iters 20 --json "$logs/torch_$name.json" >/dev/null 2>"$logs/torch_$name.log"
    fi
  done

  # The GPU bandwidth target: RMSNorm forward and backward against a device-to-device copy.
  timeout "$limit" "$gpu/tools/bench" --device cuda --model rmsnorm --tokens 16384 --hidden 4096 --iters 20 \
    --json "$logs/bench_rmsnorm.json" >"$logs/bench_rmsnorm.log" 2>&1 || status=1

  echo
  echo "device: $(cat "$logs/device.txt")"
  printf '%s\n' "${rows[@]}"
  [ -f "$logs/charlm_cuda.json" ] && echo "charlm --device cuda, 3000 steps: $(cat "$logs/charlm_cuda.json")"
  echo
  printf '%-11s %6s %6s %-8s | %14s %14s %8s | %14s | %s\n' model tokens hidden dtype "fused fwd+bwd" "unfused" \
    speedup "torch eager" "achieved"
  for b in "${benches[@]}"; do
    read -r model tokens hidden dtype <<<"$b"
    python3 - "$logs/bench_${model}_${tokens}_$dtype.json" "$logs/torch_${model}_${tokens}_$dtype.json" <<'PY'
import json, os, sys
ours = json.load(open(sys.argv[1]))[0] if os.path.exists(sys.argv[1]) else None
peer = json.load(open(sys.argv[2]))[0] if os.path.exists(sys.argv[2]) else None
if ours is None:
    print("bench failed: see its log"); sys.exit()
torch_ms = f"{peer['unfused_fwd_bwd_ms']:.3f} ms" if peer else "n/a"
tflops = ours.get("fused_fwd_bwd_tflops")
achieved = f"{tflops:.1f} TFLOP/s (GEMM work)" if tflops else ""
print(f"{ours['model']:11} {ours['tokens']:6} {ours['hidden']:6} {ours['dtype']:8} | {ours['fused_fwd_bwd_ms']:11.3f} ms "
      f"{ours['unfused_fwd_bwd_ms']:11.3f} ms {ours['speedup_fwd_bwd']:7.2f}x | {torch_ms:>14} | {achieved}")
PY
  done
  python3 - "$logs/bench_rmsnorm.json" <<'PY'
import json, os, sys
if not os.path.exists(sys.argv[1]):
    print("rmsnorm bandwidth: bench failed, see its log"); sys.exit()
r = json.load(open(sys.argv[1]))[0]
print(f"rmsnorm {r['tokens']}x{r['hidden']}: forward {r['forward_gbps']:.0f} GB/s "
      f"({100 * r['forward_fraction_of_copy']:.0f}% of copy), backward {r['backward_gbps']:.0f} GB/s "
      f"({100 * r['backward_fraction_of_copy']:.0f}% of copy), device-to-device copy {r['copy_gbps']:.0f} GB/s "
      f"(target: 80%)")
PY
  return $status
}

case "$mode" in
  pack) pack ;;
  run) shift && run "$@" ;;
  *) echo "usage: bash tools/gpu_check.sh pack | bash .gpu/gpu_check.sh run LOGDIR" >&2; exit 2 ;;
esac

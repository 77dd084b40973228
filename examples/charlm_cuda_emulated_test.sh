#!/usr/bin/env bash
# The main job's GPU path without a GPU: charlm --device cuda, linked with the CUDA emulator's
# kernels (tools/cuda_emulator), trains, evaluates and samples, and its losses follow the same
# binary's --device cpu run step by step.
set -euo pipefail
charlm="$1"
words="$2"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
common=(--data="$words" --steps=30 --batch=32 --hidden=32 --embed=8 --blocks=1 --seed=3)

"$charlm" "${common[@]}" --device=cpu --loss-log="$dir/cpu.txt" > /dev/null
"$charlm" "${common[@]}" --device=cuda --loss-log="$dir/cuda.txt" > "$dir/cuda_out.txt"
grep -q "validation loss" "$dir/cuda_out.txt" || { echo "FAIL: no validation loss"; cat "$dir/cuda_out.txt"; exit 1; }
bash "$(dirname "$0")/compare_losses.sh" "$dir/cpu.txt" "$dir/cuda.txt" 30
echo "PASS: charlm --device cuda on the emulator follows --device cpu over 30 steps"

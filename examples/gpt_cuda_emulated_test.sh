#!/usr/bin/env bash
# The main job's GPU path without a GPU: gpt --device cuda, linked with the CUDA emulator's kernels
# (tools/cuda_emulator), trains (FlashAttention and the Linear epilogues on the device),
# evaluates and samples, and its losses follow the same binary's --device cpu run step by step.
set -euo pipefail
gpt="$1"
shift  # the rest: flags for both runs, such as --arch=llama
source "$(dirname "$0")/require_fortunes.sh"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
common=(--steps=4 --batch=2 --context=8 --width=16 --heads=2 --layers=1 --dropout=0.1 --seed=3 --sample=20
        --val-tokens=64 "$@")

"$gpt" "${common[@]}" --device=cpu --loss-log="$dir/cpu.txt" > /dev/null
"$gpt" "${common[@]}" --device=cuda --loss-log="$dir/cuda.txt" > "$dir/cuda_out.txt"
grep -q "FlashAttention" "$dir/cuda_out.txt" || { echo "FAIL: FlashAttention did not fuse"; cat "$dir/cuda_out.txt"; exit 1; }
if [[ " $* " == *" --arch=llama "* ]]; then
  grep -q "LMHeadCrossEntropy(" "$dir/cuda_out.txt" || { echo "FAIL: LMHeadCrossEntropy did not fuse"; exit 1; }
fi
bash "$(dirname "$0")/compare_losses.sh" "$dir/cpu.txt" "$dir/cuda.txt" 4
echo "PASS: gpt $* --device cuda on the emulator follows --device cpu over 4 steps"

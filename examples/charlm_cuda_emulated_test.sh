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
# Same steps, losses within 1e-4 relative (float32 sums in another order).
if ! awk 'NR == FNR { ref[$1] = $2; next }
          { n++; d = $2 - ref[$1]; if (d < 0) d = -d; if (!($1 in ref) || d > 1e-4 * ref[$1]) bad++ }
          END { exit (n == 30 && bad == 0) ? 0 : 1 }' "$dir/cpu.txt" "$dir/cuda.txt"; then
  echo "FAIL: the CUDA run's losses differ from the CPU run's:"
  paste "$dir/cpu.txt" "$dir/cuda.txt"
  exit 1
fi
echo "PASS: charlm --device cuda on the emulator follows --device cpu over 30 steps"

#!/usr/bin/env bash
# The fused GPT and the unfused one (--no-fusion), from the same seed, follow the same losses at
# every step to 1e-4 relative, and the fused run's lists do hold the fused ops named.
#   gpt_fusion_test.sh GPT COMPARE FUSED,OP,NAMES [ARCH FLAGS...]
set -euo pipefail
gpt="$1"
compare="$2"
fusions="${3//,/ }"
shift 3
source "$(dirname "$0")/require_fortunes.sh"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
common=(--steps=30 --batch=8 --context=16 --width=32 --heads=2 --layers=2 --dropout=0.1 --seed=5 --sample=0 --val-tokens=2000 "$@")
"$gpt" "${common[@]}" --loss-log="$dir/fused.txt" > "$dir/fused_out.txt"
"$gpt" "${common[@]}" --no-fusion --loss-log="$dir/unfused.txt" > "$dir/unfused_out.txt"
for fusion in $fusions; do
  grep -q "$fusion(" "$dir/fused_out.txt" || { echo "FAIL: $fusion did not fire"; exit 1; }
  ! grep -q "$fusion(" "$dir/unfused_out.txt" || { echo "FAIL: $fusion fired with --no-fusion"; exit 1; }
done
bash "$compare" "$dir/unfused.txt" "$dir/fused.txt" 30
paste "$dir/unfused.txt" "$dir/fused.txt" | tail -1 | awk '{ printf "PASS: 30 losses within 1e-4; last: unfused %s, fused %s\n", $2, $4 }'

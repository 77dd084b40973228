#!/usr/bin/env bash
# Training 40 steps straight and training 20, saving, then resuming to 40 give the same losses
# at every step, to the last printed digit.
set -euo pipefail
charlm="$1"
words="$2"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
common=(--data="$words" --steps=40 --batch=32 --hidden=32 --embed=8 --blocks=1 --seed=3)

"$charlm" "${common[@]}" --loss-log="$dir/straight.txt" > /dev/null
"$charlm" "${common[@]}" --stop-after=20 --checkpoint="$dir/ckpt" --checkpoint-every=10 --loss-log="$dir/resumed.txt" > /dev/null
"$charlm" "${common[@]}" --checkpoint="$dir/ckpt" --checkpoint-every=10 --resume --loss-log="$dir/resumed.txt" > "$dir/out.txt"
grep -q "resumed from .* at step 20" "$dir/out.txt"
if ! diff "$dir/straight.txt" "$dir/resumed.txt"; then
  echo "FAIL: the resumed run's losses differ from the uninterrupted run's"
  exit 1
fi
[ "$(wc -l < "$dir/straight.txt")" -eq 40 ]
echo "PASS: 40 losses identical after resuming at step 20"

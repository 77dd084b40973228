#!/usr/bin/env bash
# charlm learns: after a short run its validation loss is below the unigram baseline (predicting
# every character from its frequency alone) by a clear margin, not merely finite.
set -euo pipefail
charlm="$1"
shift
out="${TEST_TMPDIR:-$(mktemp -d)}/charlm_out.txt"
"$charlm" "$@" > "$out"
line=$(grep "^validation loss" "$out")
echo "$line"
# "validation loss 2.6540 (unigram baseline 2.9582) after 60 steps"
echo "$line" | awk '{ val = $3; base = $6 + 0; margin = base - val;
  if (margin < 0.15) { printf "FAIL: validation loss %s is not 0.15 below the unigram baseline %s\n", val, base; exit 1 }
  printf "PASS: validation loss %s is %.3f below the unigram baseline\n", val, margin }'

#!/usr/bin/env bash
# classify learns: its test accuracy on the held-out rows is far above chance (one over the
# number of classes it reports).
set -euo pipefail
classify="$1"
shift
out="${TEST_TMPDIR:-$(mktemp -d)}/classify_out.txt"
"$classify" "$@" > "$out"
classes=$(sed -n 's/.* \([0-9]*\) classes.*/\1/p' "$out")
accuracy=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' "$out")
echo "$classes classes, test accuracy $accuracy%"
awk -v classes="$classes" -v accuracy="$accuracy" 'BEGIN { chance = 100 / classes;
  if (classes < 2 || accuracy < chance + 35) { printf "FAIL: test accuracy %s%% is not 35 points above chance (%.1f%%)\n", accuracy, chance; exit 1 }
  printf "PASS: test accuracy %s%% against chance %.1f%%\n", accuracy, chance }'

#!/usr/bin/env bash
# Every bad input a user can type or feed to charlm and classify ends in a non-zero exit and a
# message naming the flag, file or value, never in a crash, a hang or a silent success. One case
# a line: the words the error must contain, then the command.
set -uo pipefail
charlm="$1"
classify="$2"
words="$3"
dir="${TEST_TMPDIR:-$(mktemp -d)}/bad_input"
rm -rf "$dir" && mkdir -p "$dir/empty" "$dir/folder/charlm.safetensors"
small=(--data="$words" --steps=20 --batch=32 --hidden=32 --embed=8 --blocks=1)
source "$(dirname "$0")/expect_error.sh"

# A real checkpoint at step 20, and copies with its metadata step edited in place (same length).
"$charlm" "${small[@]}" --checkpoint="$dir/good" >/dev/null || { echo "FAIL: the reference run failed"; exit 1; }
for edit in 2x 99; do
  mkdir -p "$dir/step_$edit"
  perl -0777 -pe "s/\"step\":\"20\"/\"step\":\"$edit\"/" "$dir/good/charlm.safetensors" >"$dir/step_$edit/charlm.safetensors"
done
printf 'a,b,label\n1,2,0\n1e39,2,1\n' >"$dir/huge_value.csv"
printf 'a,b,label\n1,2,0\n1,2,1000000000\n' >"$dir/huge_label.csv"
printf 'a,b,label\n1,2,0\n1,2,1e30\n' >"$dir/label_1e30.csv"
printf 'a,b,label\n1,2,0\n1,2,1000\n3,4,1\n' >"$dir/sparse_label.csv"

expect_error "--steps: '1e3' is not an integer" "$charlm" "${small[@]}" --steps 1e3
expect_error "--steps: '20x' is not an integer" "$charlm" "${small[@]}" --steps 20x
expect_error "--blocks: -1 is outside" "$charlm" "${small[@]}" --blocks=-1
expect_error "--stop-after: -3 is outside" "$charlm" "${small[@]}" --stop-after=-3
expect_error "--stop-after: 30 is outside [1, 20]" "$charlm" "${small[@]}" --stop-after=30
expect_error "--context: '1e11' is not an integer" "$charlm" "${small[@]}" --context 1e11
expect_error "--context: 100000000000 is outside" "$charlm" "${small[@]}" --context 100000000000
expect_error "--lr: 'abc' is not a finite number" "$charlm" "${small[@]}" --lr abc
expect_error "--lr: 'inf' is not a finite number" "$charlm" "${small[@]}" --lr inf
expect_error "--resume: 'maybe' is not" "$charlm" "${small[@]}" --resume=maybe
expect_error "unknown flag --stpes" "$charlm" "${small[@]}" --stpes=3
expect_error "unexpected argument 'extra'" "$charlm" "${small[@]}" extra
expect_error "cannot open the word list $dir/none.txt" "$charlm" "${small[@]}" --data="$dir/none.txt"
expect_error "--resume needs --checkpoint" "$charlm" "${small[@]}" --resume
expect_error "there is no checkpoint $dir/empty/charlm.safetensors" "$charlm" "${small[@]}" --resume --checkpoint="$dir/empty"
expect_error "$dir/folder/charlm.safetensors: is not a regular file" "$charlm" "${small[@]}" --resume --checkpoint="$dir/folder"
expect_error "metadata step '2x' is not a non-negative integer" "$charlm" "${small[@]}" --resume --checkpoint="$dir/step_2x"
expect_error "metadata step 99 disagrees with the optimizer's step count 20" "$charlm" "${small[@]}" --resume --checkpoint="$dir/step_99"
expect_error "is at step 20, past --steps=10" "$charlm" "${small[@]}" --steps=10 --resume --checkpoint="$dir/good"
expect_error "--json $dir/missing/out.json: its folder $dir/missing does not exist" "$charlm" "${small[@]}" \
  --json="$dir/missing/out.json"
expect_error "--json /proc/version: cannot create /proc/version.tmp beside it" "$charlm" "${small[@]}" --json=/proc/version
expect_error "--json /dev/full: write failed" "$charlm" "${small[@]}" --json=/dev/full
expect_error "--loss-log $dir/missing/loss.txt: its folder $dir/missing does not exist" "$charlm" "${small[@]}" --loss-log="$dir/missing/loss.txt"
expect_error "--loss-log /dev/full: write failed" "$charlm" "${small[@]}" --loss-log=/dev/full
expect_error "FUSELAB_DIST_TIMEOUT_S='abc' is not a valid value; it takes a number of seconds > 0" env FUSELAB_DIST_TIMEOUT_S=abc "$charlm" "${small[@]}" --data-parallel
expect_error "--steps: -1 is outside" "$classify" --steps=-1
expect_error "read_csv $dir/none.csv: cannot open it" "$classify" --data="$dir/none.csv"
expect_error "line 3: value 1e39 does not fit in float32" "$classify" --data="$dir/huge_value.csv"
expect_error "line 3: label 1000000000 is not a class id" "$classify" --data="$dir/huge_label.csv"
expect_error "line 3: label 1e30 is not a class id" "$classify" --data="$dir/label_1e30.csv"
expect_error "the largest label is 1000, which means 1001 classes for only 3 rows" "$classify" --data="$dir/sparse_label.csv"

# --help is not an error: it exits 0 and lists every flag with its default and its range.
for program in "$charlm" "$classify"; do
  cases=$((cases + 1))
  if ! help=$(timeout 60 "$program" --help 2>&1) || ! grep -qE -- "--steps INT \[[0-9]+\] .*in \[1, 1000000000\]" <<<"$help"; then
    echo "FAIL: $program --help did not exit 0 listing --steps with its default and range, got: $help"
    failures=$((failures + 1))
  fi
done

# A bad setting stops the run at the first call that reads the settings, naming it.
expect_error "FUSELAB_NUM_THREADS='abc' is not a valid value; it takes an integer in [1, 4096]" \
  env FUSELAB_NUM_THREADS=abc "$classify" --steps=1

# A --json file is written only by a finished run: one stopped early leaves none behind.
cases=$((cases + 1))
"$charlm" "${small[@]}" --stop-after=5 --json="$dir/stopped.json" >/dev/null
if [ -e "$dir/stopped.json" ]; then
  echo "FAIL: a run stopped by --stop-after left $dir/stopped.json"
  failures=$((failures + 1))
fi

# What must hold: a run shorter than --checkpoint-every still saves its final state, with no
# temporary left beside it, and that state resumes.
cases=$((cases + 1))
if [ "$(ls "$dir/good")" != "charlm.safetensors" ] ||
  ! "$charlm" "${small[@]}" --steps=25 --resume --checkpoint="$dir/good" >"$dir/resumed.txt" ||
  ! grep -q "resumed from .* at step 20" "$dir/resumed.txt"; then
  echo "FAIL: the 20-step run with --checkpoint-every=500 did not leave exactly its final, resumable checkpoint"
  failures=$((failures + 1))
fi

echo "bad_input: $((cases - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]

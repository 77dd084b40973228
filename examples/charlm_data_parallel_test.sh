#!/usr/bin/env bash
# charlm on two MPI ranks: rank 0 alone prints, the losses follow a one-process run on the same
# global batch, and checkpoints move between a 2-rank and a 1-rank run in both directions.
set -euo pipefail
charlm="$1"
words="$2"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
export FUSELAB_NUM_THREADS=1
# Under --config=asan: OpenMPI's plugins, unloaded at MPI_Finalize, keep allocations LeakSanitizer
# cannot attribute (no module left to suppress by), so leak checks are off for MPI processes.
# Address and UB checks stay on; the single-process DataParallel tests keep leak checks.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
two_ranks=(mpirun -np 2 --oversubscribe --allow-run-as-root "$charlm" --data-parallel)
common=(--data="$words" --steps=30 --batch=32 --hidden=32 --embed=8 --blocks=1 --seed=3 --checkpoint-every=15)

"$charlm" "${common[@]}" --loss-log="$dir/one.txt" > /dev/null
"${two_ranks[@]}" "${common[@]}" --loss-log="$dir/two.txt" > "$dir/two_out.txt"
# 2 ranks for 15 steps, then 1 rank resumes; and the reverse.
"${two_ranks[@]}" "${common[@]}" --stop-after=15 --checkpoint="$dir/a" --loss-log="$dir/two_then_one.txt" > /dev/null
"$charlm" "${common[@]}" --resume --checkpoint="$dir/a" --loss-log="$dir/two_then_one.txt" > /dev/null
"$charlm" "${common[@]}" --stop-after=15 --checkpoint="$dir/b" --loss-log="$dir/one_then_two.txt" > /dev/null
"${two_ranks[@]}" "${common[@]}" --resume --checkpoint="$dir/b" --loss-log="$dir/one_then_two.txt" > "$dir/resumed_out.txt"

[ "$(grep -c "^charlm:" "$dir/two_out.txt")" -eq 1 ] || { echo "FAIL: more than one rank printed"; exit 1; }
grep -q "data parallel: 2 rank(s), 16 examples each per step" "$dir/two_out.txt"
grep -q "resumed from .* at step 15" "$dir/resumed_out.txt"
for run in two two_then_one one_then_two; do
  bash "$(dirname "$0")/compare_losses.sh" "$dir/one.txt" "$dir/$run.txt" 30
done
echo "PASS: 2-rank, 2-then-1 and 1-then-2 rank runs follow the 1-rank losses over 30 steps"

#!/usr/bin/env bash
# What examples/training_run.h promises about the files a run writes, shown on charlm: an old
# --json or --loss-log file survives a run that is killed or stops early; --json and --loss-log
# cannot name one file; two runs cannot share a --checkpoint folder (the second names the first's
# process) or a --loss-log file; and --lr given with --resume says that the checkpoint's lr wins.
set -uo pipefail
charlm="$1"
words="$2"
dir="${TEST_TMPDIR:-$(mktemp -d)}/training_run"
rm -rf "$dir" && mkdir -p "$dir"
small=(--data="$words" --steps=20 --batch=32 --hidden=32 --embed=8 --blocks=1)
source "$(dirname "$0")/expect_error.sh"

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# Waits up to 30 s for the file $1 to exist.
wait_for() {
  for _ in $(seq 150); do
    [ -s "$1" ] && return 0
    sleep 0.2
  done
  return 1
}

# An old report survives a run stopped by --stop-after, and the finished run replaces it.
cases=$((cases + 1))
echo old >"$dir/report.json"
"$charlm" "${small[@]}" --stop-after=5 --json="$dir/report.json" >/dev/null
[ "$(cat "$dir/report.json")" = old ] || fail "a run stopped by --stop-after changed the old --json file"
"$charlm" "${small[@]}" --json="$dir/report.json" >/dev/null
grep -q '"val_loss"' "$dir/report.json" && [ ! -e "$dir/report.json.tmp" ] ||
  fail "a finished run did not replace --json, leaving no temporary: $(ls "$dir")"

# Old files survive a run killed while it trains.
cases=$((cases + 1))
echo old >"$dir/killed.json" && echo "1 old" >"$dir/killed.log"
"$charlm" "${small[@]}" --steps=100000000 --json="$dir/killed.json" --loss-log="$dir/killed.log" >/dev/null &
run=$!
wait_for "$dir/killed.log.tmp" && sleep 0.5 || fail "the killed run never started writing its loss log"
kill -9 "$run" && wait "$run" 2>/dev/null
[ "$(cat "$dir/killed.json")" = old ] && [ "$(cat "$dir/killed.log")" = "1 old" ] ||
  fail "a killed run changed the old --json or --loss-log file"

# A killed run with checkpoints leaves the losses up to its last checkpoint, where --resume goes on,
# and a run that does not resume starts the log afresh.
cases=$((cases + 1))
"$charlm" "${small[@]}" --steps=100000000 --checkpoint="$dir/killed" --checkpoint-every=5 \
  --loss-log="$dir/checkpointed.log" >/dev/null &
run=$!
wait_for "$dir/checkpointed.log" || fail "the run never committed its loss log at a checkpoint"
kill -9 "$run" && wait "$run" 2>/dev/null
steps=$(awk '{print $1}' "$dir/checkpointed.log" | tr '\n' ' ')
[ "$steps" = "$(seq -s ' ' 1 "$(wc -l <"$dir/checkpointed.log")") " ] && [ $(($(wc -l <"$dir/checkpointed.log") % 5)) = 0 ] ||
  fail "the killed run's loss log is not the steps up to a checkpoint: $steps"
"$charlm" "${small[@]}" --loss-log="$dir/checkpointed.log" >/dev/null
[ "$(wc -l <"$dir/checkpointed.log")" = 20 ] || fail "a run without --resume appended to an old loss log"

expect_error "--json $dir/same.txt and --loss-log $dir/same.txt name the same file" \
  "$charlm" "${small[@]}" --json="$dir/same.txt" --loss-log="$dir/same.txt"
expect_error "--json $dir/same.txt and --loss-log $dir/./same.txt name the same file" \
  "$charlm" "${small[@]}" --json="$dir/same.txt" --loss-log="$dir/./same.txt"

# A second run on a --checkpoint folder or a --loss-log file in use fails naming the holder.
"$charlm" "${small[@]}" --steps=100000000 --checkpoint="$dir/shared" --loss-log="$dir/shared.log" >/dev/null &
run=$!
wait_for "$dir/shared/.lock" || fail "the first run never locked its --checkpoint folder"
expect_error "--checkpoint: the folder $dir/shared is in use by process $run" \
  "$charlm" "${small[@]}" --checkpoint="$dir/shared"
expect_error "--loss-log $dir/shared.log: another run is writing it" "$charlm" "${small[@]}" --loss-log="$dir/shared.log"
kill -9 "$run" && wait "$run" 2>/dev/null
cases=$((cases + 1))
"$charlm" "${small[@]}" --checkpoint="$dir/shared" >/dev/null || fail "the folder stayed locked after its run ended"

# --lr with --resume: the checkpoint's lr wins, and the run says so.
cases=$((cases + 1))
"$charlm" "${small[@]}" --stop-after=10 --checkpoint="$dir/lr" >/dev/null
said=$("$charlm" "${small[@]}" --lr=0.5 --resume --checkpoint="$dir/lr" 2>&1 >/dev/null)
grep -qF -- "--lr 0.5 is not applied: a resumed run keeps the learning rate its checkpoint saved (0.003)" <<<"$said" ||
  fail "--lr with --resume did not say that the checkpoint's lr wins, said: $said"

echo "training_run: $((cases - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]

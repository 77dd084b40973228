#!/usr/bin/env bash
# Data-parallel scaling on this machine: charlm's steps/s with 1 rank of 1 thread against 2 MPI
# ranks of 1 thread each, on the same global batch, runs interleaved (1 2 1 2 ...), medians.
#   bash tools/bench_data_parallel.sh [repetitions] [batch sizes...]
# Each run trains on 245,760 examples (60 steps at batch 4096), long enough to average over the
# shared host's busy moments; the ratio is the median over back-to-back pairs.
set -euo pipefail
cd "$(dirname "$0")/.."
repetitions="${1:-3}"
shift || true
batches=("${@:-256 1024}")
bazel build -c opt //examples:charlm >/dev/null 2>&1
charlm=bazel-bin/examples/charlm
dir="$(mktemp -d)"
export FUSELAB_NUM_THREADS=1

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { sed -E "s/.*\"$1\": ([0-9.e+-]+).*/\1/" "$2"; }

printf "%-6s %-14s %-14s %-22s %s\n" batch "1 rank step/s" "2 ranks step/s" "ratio (min-max)" "2-rank exposed all-reduce wait"
for batch in ${batches[*]}; do
  steps=$((245760 / batch))  # the same work per run
  for r in $(seq "$repetitions"); do
    "$charlm" --steps=$steps --batch="$batch" --json="$dir/one_$r.json" >/dev/null
    mpirun -np 2 --oversubscribe --allow-run-as-root "$charlm" --data-parallel --steps=$steps --batch="$batch" \
      --json="$dir/two_$r.json" | grep -o "took [0-9.]*%" | tr -d 'tok% ' >"$dir/comm_$r.txt"
  done
  one=$(for r in $(seq "$repetitions"); do field steps_per_s "$dir/one_$r.json"; done | median)
  two=$(for r in $(seq "$repetitions"); do field steps_per_s "$dir/two_$r.json"; done | median)
  # The ratio is the median over pairs run back to back, which share the host's load of the moment.
  ratios=$(for r in $(seq "$repetitions"); do
    awk -v a="$(field steps_per_s "$dir/two_$r.json")" -v b="$(field steps_per_s "$dir/one_$r.json")" 'BEGIN { print a / b }'
  done | sort -g)
  ratio=$(printf "%.2fx (%.2f-%.2f)" "$(echo "$ratios" | median)" "$(echo "$ratios" | head -1)" "$(echo "$ratios" | tail -1)")
  comm=$(cat "$dir"/comm_*.txt | median)
  printf "%-6s %-14.1f %-14.1f %-22s %s%%\n" "$batch" "$one" "$two" "$ratio" "$comm"
done

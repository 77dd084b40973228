#!/usr/bin/env bash
# README command 1: installs what is missing, builds, trains the character-level GPT on Debian's
# fortunes (the main job), then runs the fused-vs-unfused benchmark once at a small size.
# Arguments go to gpt, e.g. --steps=300 or --no-fusion.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"  # threads sleep at barriers (docs/settings.md)
bazel build -c opt //examples:gpt //tools:bench
bazel-bin/examples/gpt "$@"
echo
bazel-bin/tools/bench --model mlp_block --tokens 1024 --hidden 256 --iters 10

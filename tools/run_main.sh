#!/usr/bin/env bash
# README command 1: installs what is missing, builds, and runs the main job (a real training run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bazel run -c opt //examples:train_mlp -- --target-loss=0.05 "$@"

#!/usr/bin/env bash
# README command 2: installs what is missing, builds everything and runs every test.
# Extra arguments go to bazel test, e.g. --config=asan or --config=cpu.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bazel test "$@" //...

#!/usr/bin/env bash
# Runs an example binary with its arguments; the example's exit status is the test's.
set -euo pipefail
"$@"

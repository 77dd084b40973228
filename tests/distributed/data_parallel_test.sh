#!/usr/bin/env bash
# Two MPI ranks on this machine: data-parallel training matches one process, and a rank that
# fails (throws, or hangs past the timeout) stops every rank with a clear error.
set -uo pipefail
here="$(dirname "$0")"
export FUSELAB_NUM_THREADS=1  # one core per rank
# Under --config=asan: OpenMPI's plugins, unloaded at MPI_Finalize, keep allocations LeakSanitizer
# cannot attribute (no module left to suppress by), so leak checks are off for MPI processes.
# Address and UB checks stay on; the single-process DataParallel tests keep leak checks.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpirun=(mpirun -np 2 --oversubscribe --allow-run-as-root)
status=0

echo "== training matches one process"
# Both ranks run GoogleTest: keep them from writing Bazel's one XML and premature-exit files.
env -u XML_OUTPUT_FILE -u TEST_PREMATURE_EXIT_FILE "${mpirun[@]}" "$here/data_parallel_worker" || status=1

# expect_clear_failure NAME PATTERN COMMAND...: the run fails within 60 s and says PATTERN.
expect_clear_failure() {
  local name="$1" pattern="$2"
  shift 2
  echo "== $name"
  local start=$SECONDS log
  log="$(timeout 60 "$@" 2>&1)"
  local code=$?
  echo "$log" | grep -m1 "fuselab:" || true
  if [ $code -eq 0 ] || [ $code -eq 124 ]; then
    echo "FAIL: exit code $code (expected a failure before the 60 s timeout)"
    status=1
  elif ! grep -q "$pattern" <<<"$log"; then
    echo "FAIL: the output does not say '$pattern':"
    echo "$log"
    status=1
  else
    echo "ok: exit code $code after $((SECONDS - start)) s"
  fi
}

expect_clear_failure "a rank that throws stops every rank" "rank 1 of 2: injected failure on purpose" \
  "${mpirun[@]}" "$here/failing_rank" throw
FUSELAB_DIST_TIMEOUT_S=3 expect_clear_failure "a rank that hangs is caught by the timeout" \
  "rank 0 of 2: MPI_Iallreduce did not complete within 3 s" "${mpirun[@]}" "$here/failing_rank" hang
exit $status

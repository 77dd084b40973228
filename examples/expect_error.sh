# Sourced by the bad-input tests: expect_error SAYS COMMAND... counts a case and records a failure
# unless COMMAND exits non-zero (not by the 60 s timeout or a signal) with SAYS in its stderr.
# The test reads $cases and $failures at the end.
failures=0 cases=0

expect_error() {
  local says="$1"
  shift
  cases=$((cases + 1))
  local out rc
  out=$(timeout 60 "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ] || ! grep -qF -- "$says" <<<"$out"; then
    echo "FAIL (exit $rc): $* -- expected an error saying '$says', got: $out"
    failures=$((failures + 1))
  fi
}

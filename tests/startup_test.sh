#!/usr/bin/env bash
# Nothing happens when FuseLab loads: a program that links it runs main once, in the environment it
# was given, and FuseLab opens OpenBLAS and oneDNN at the first GEMM that needs each (a missing one
# is an error naming it and its package, after main has run); no GEMM library, nor CUDA's, is a
# library the program needs to start. Passive OpenMP waits are the program's choice.
set -uo pipefail
program="$1"
passive_program="$2"  # calls use_passive_waits first thing in main
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect() { grep -qF -- "$2" <<<"$1" || fail "expected '$2' in: $1"; }
refuse() { grep -qF -- "$2" <<<"$1" && fail "did not expect '$2' in: $1"; }
count() { grep -cF -- "$2" <<<"$1"; }
plain_env=(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u FUSELAB_OPENBLAS OMP_DISPLAY_ENV=verbose)

# main runs once, with the environment untouched, and the GEMM runs.
out=$("${plain_env[@]}" "$program" 2>&1)
[ "$(count "$out" "main started")" = 1 ] || fail "main should print once: $out"
expect "$out" "OMP_WAIT_POLICY unset"
expect "$out" "product[0, 0] = 3"
expect "$out" "float32 product[0, 0] = 64"

# The libraries opened on first use are not among those the loader opens before main.
needed=$(readelf -d "$program" | grep NEEDED)
for library in libopenblas libdnnl libcudart libcublas libcudnn; do refuse "$needed" "$library"; done
refuse "$out" "GOMP_SPINCOUNT = '0'"  # libgomp's default: threads spin before they sleep

# No exec in a program that does not ask for one.
if nm "$program" | grep -qw 'execv'; then fail "the program links a call to execv: $(nm "$program" | grep -w execv)"; fi

# use_passive_waits: passive unless the environment names a policy; main's work runs once.
out=$("${plain_env[@]}" "$passive_program" 2>&1)
expect "$out" "GOMP_SPINCOUNT = '0'"
[ "$(count "$out" "main started")" = 1 ] || fail "main should print once: $out"
expect "$out" "OMP_WAIT_POLICY passive"
out=$("${plain_env[@]}" OMP_WAIT_POLICY=active "$passive_program" 2>&1)
expect "$out" "OMP_WAIT_POLICY = 'ACTIVE'"
refuse "$out" "GOMP_SPINCOUNT = '0'"

# OpenBLAS that cannot be loaded: an error at the first GEMM naming it and its package.
for hide in "FUSELAB_OPENBLAS=/nonexistent/libopenblas.so.0" "LD_LIBRARY_PATH=$TEST_TMPDIR/noblas FUSELAB_OPENBLAS=libopenblas.so.0"; do
  mkdir -p "$TEST_TMPDIR/noblas" && : >"$TEST_TMPDIR/noblas/libopenblas.so.0"  # not a library: loading it fails
  out=$(env $hide "$program" 2>&1) && fail "ran with OpenBLAS hidden ($hide): $out"
  [ "$(count "$out" "main started")" = 1 ] || fail "main should print once before the error: $out"
  for word in "error: matmul" "OpenBLAS" "libopenblas0-openmp" "tools/setup.sh"; do expect "$out" "$word"; done
done

# oneDNN that cannot be loaded: the float64 GEMM (OpenBLAS) runs, the float32 one names oneDNN.
mkdir -p "$TEST_TMPDIR/nodnnl" && : >"$TEST_TMPDIR/nodnnl/libdnnl.so.2"
out=$(env LD_LIBRARY_PATH="$TEST_TMPDIR/nodnnl" FUSELAB_CPU_GEMM=onednn "$program" 2>&1) && fail "ran with oneDNN hidden: $out"
expect "$out" "product[0, 0] = 3"
for word in "error: matmul" "oneDNN" "libdnnl2" "tools/setup.sh"; do expect "$out" "$word"; done

[ "$failures" = 0 ] && echo "PASS" || exit 1

#!/usr/bin/env bash
# The bench tool runs both models, writes every JSON field and an SVG, times mnist_mlp's training
# step with --step (at its own --tokens default), and rejects bad flags.
# Arguments: the bench binary, then flags for every run (bench_cuda_emulated_test: --device cuda).
set -euo pipefail
bench="$1"
shift
device_flags=("$@")
run() { "$bench" "$@" "${device_flags[@]}"; }
dir="${TEST_TMPDIR:-$(mktemp -d)}"
run --model mlp_block --tokens 64 --hidden 32 --iters 3 --json "$dir/mlp.json" --plot "$dir/mlp.svg"
run --model norm_block --tokens 64 --hidden 32 --iters 3 --json "$dir/norm.json"
for field in model device dtype tokens hidden fused_fwd_ms unfused_fwd_ms fused_fwd_bwd_ms unfused_fwd_bwd_ms \
             speedup_fwd_bwd fused_peak_bytes unfused_peak_bytes gemms_fwd_bwd_ms; do
  grep -q "\"$field\"" "$dir/mlp.json" || { echo "missing $field"; exit 1; }
done
grep -q '"model": "norm_block"' "$dir/norm.json"
grep -q '"gemms_fwd_bwd_ms": null' "$dir/norm.json"  # no GEMMs in the norm block
if grep -q '"gemms_fwd_bwd_ms": null' "$dir/mlp.json"; then echo "mlp_block lacks its GEMM floor"; exit 1; fi
grep -q '"fused_fwd_bwd_tflops": [0-9]' "$dir/mlp.json"
run --model rmsnorm --tokens 64 --hidden 32 --iters 3 --json "$dir/rmsnorm.json"
for field in forward_gbps backward_gbps copy_gbps forward_fraction_of_copy backward_fraction_of_copy; do
  grep -q "\"$field\": [0-9]" "$dir/rmsnorm.json" || { echo "rmsnorm report lacks $field"; exit 1; }
done
run --model mlp_block --tokens 64 --hidden 32 --iters 2 --per-fusion --json "$dir/per_fusion.json" --plot "$dir/per_fusion.svg"
for fusion in ForwardLinearBiasActivation ForwardLinearBiasAdd BackwardActivationBias; do
  grep -q "\"fusion\": \"$fusion\"" "$dir/per_fusion.json" || { echo "per-fusion report lacks $fusion"; exit 1; }
done
grep -q '"fused_saved_bytes"' "$dir/per_fusion.json"
# A fusion whose name is shorter than a bar label's first line (GroupedMlp, where RoutedGroupedMlp
# is off) plots too.
FUSELAB_DISABLE_FUSIONS=RoutedGroupedMlp run --model moe_block --tokens 16 --hidden 16 --expert-hidden 8 --iters 1 \
  --per-fusion --json "$dir/moe.json" --plot "$dir/moe.svg"
grep -q '"fusion": "GroupedMlp"' "$dir/moe.json"
grep -q ">GroupedMlp<" "$dir/moe.svg"
grep -q "<svg" "$dir/mlp.svg"
run --model mlp_block --tokens 64 --hidden 32 --iters 2 --dtype bfloat16 --json "$dir/bf16.json"
grep -q '"dtype": "bfloat16"' "$dir/bf16.json"
grep -q '"fused_step_ms": null' "$dir/mlp.json"  # no --step, no step timing
run --model mnist_mlp --hidden 16 --iters 2 --step --json "$dir/step.json"
grep -q '"tokens": 128,' "$dir/step.json" || { echo "mnist_mlp does not default to 128 tokens"; exit 1; }
for field in fused_step_ms unfused_step_ms; do
  grep -q "\"$field\": [0-9]" "$dir/step.json" || { echo "--step report lacks $field"; exit 1; }
done
if "$bench" --model rmsnorm --step 2>/dev/null; then echo "accepted --step for rmsnorm"; exit 1; fi
if "$bench" --model mnist_mlp --per-fusion --step 2>/dev/null; then echo "accepted --step with --per-fusion"; exit 1; fi
if "$bench" --model nope 2>/dev/null; then echo "accepted an unknown model"; exit 1; fi
if "$bench" --frobnicate 2>/dev/null; then echo "accepted an unknown flag"; exit 1; fi
help=$("$bench" --help)
grep -qE -- "--iters INT \[20\] .*in \[1, 1000000\]" <<<"$help" || { echo "--help lacks --iters with its default"; exit 1; }
echo PASS

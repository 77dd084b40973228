#!/usr/bin/env bash
# The bench puts each run against the machine's limits: mlp_block's and moe_block's JSON have the
# FMA peak and their GEMM work's share of it (float32 only), moe_block's the FLOPs of its GEMMs;
# norm_block's and rmsnorm's the bytes they must move and their share of the copy bandwidth; every
# value is sane (speed itself is not tested). norm_block and rmsnorm run
# on tensors larger than the last-level cache, which is what the copy bandwidth is measured on.
# Argument: the bench binary.
set -euo pipefail
bench="$1"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
command -v python3 >/dev/null || { echo "FAIL: python3 is needed to read the JSON reports"; exit 1; }
"$bench" --model mlp_block --tokens 256 --hidden 64 --iters 3 --json "$dir/mlp.json" >"$dir/mlp.txt"
"$bench" --model moe_block --tokens 256 --hidden 32 --experts 4 --top-k 2 --expert-hidden 48 --iters 3 \
  --json "$dir/moe.json" >/dev/null
"$bench" --model moe_block --tokens 256 --hidden 32 --experts 4 --top-k 2 --expert-hidden 48 --iters 1 \
  --dtype bfloat16 --json "$dir/moe_bf16.json" >/dev/null
"$bench" --model norm_block --tokens 16384 --hidden 256 --iters 3 --json "$dir/norm.json" >"$dir/norm.txt"
"$bench" --model rmsnorm --tokens 16384 --hidden 256 --iters 3 --json "$dir/rmsnorm.json" >"$dir/rmsnorm.txt"
grep -q "of the FMA peak" "$dir/mlp.txt" || { echo "FAIL: mlp_block prints no share of the FMA peak"; exit 1; }
grep -q "of the copy bandwidth" "$dir/norm.txt" || { echo "FAIL: norm_block prints no share of the copy bandwidth"; exit 1; }
grep -q "against the memory's copy bandwidth" "$dir/rmsnorm.txt" || { echo "FAIL: rmsnorm prints no share of it"; exit 1; }

python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]

def share(row, field):
    """A positive share, below 10: that catches a wrong unit (x1000), not a slow run. Shares can
    exceed 1: data that stays in the last-level cache beats the copy bandwidth, the backward's time
    is fwd+bwd less fwd (noisy), and a sanitizer build slows the FMA loop but not the GEMM library."""
    value = row[field]
    assert isinstance(value, (int, float)) and 0 < value <= 10, (row["model"], field, value)

[mlp] = json.load(open(f"{d}/mlp.json"))
assert mlp["fma_peak_gflops"] > 0 and mlp["threads"] >= 1, mlp
share(mlp, "fraction_of_peak")
share(mlp, "gemms_fraction_of_peak")
assert mlp["outside_gemms_fraction"] < 1, mlp
assert mlp["memory_copy_gbps"] is None and mlp["forward_bytes"] is None, mlp

# moe_block's floor: the experts' six GEMMs over its 256 x 2 routed rows, 2 flops a multiply-add:
# u = x W1^T (width 32 -> 2 x 48), y = a W2^T (48 -> 32), and two GEMMs of each size in backward.
[moe] = json.load(open(f"{d}/moe.json"))
assert moe["gemms_fwd_bwd_ms"] > 0, moe
flops = moe["fused_fwd_bwd_tflops"] * 1e9 * moe["fused_fwd_bwd_ms"]
assert abs(flops - 2 * 3 * 512 * (96 * 32 + 32 * 48)) < 1e-4 * flops, (flops, moe)  # JSON keeps 6 digits
share(moe, "fraction_of_peak")
share(moe, "gemms_fraction_of_peak")
[moe_bf16] = json.load(open(f"{d}/moe_bf16.json"))
assert moe_bf16["gemms_fwd_bwd_ms"] > 0 and moe_bf16["fraction_of_peak"] is None, moe_bf16  # a float32 peak

tensor = 16384 * 256 * 4  # one float32 [tokens, hidden] tensor
[norm] = json.load(open(f"{d}/norm.json"))
assert norm["memory_copy_gbps"] > 0 and norm["fma_peak_gflops"] is None, norm
assert norm["forward_bytes"] == 4 * tensor and norm["backward_bytes"] == 3 * tensor, norm
share(norm, "forward_fraction_of_memory")
share(norm, "backward_fraction_of_memory")
share(norm, "fwd_bwd_fraction_of_memory")

[rms] = json.load(open(f"{d}/rmsnorm.json"))
assert rms["memory_copy_gbps"] > 0, rms
assert rms["forward_bytes"] == 2 * tensor and rms["backward_bytes"] == 3 * tensor, rms
share(rms, "forward_fraction_of_memory")
share(rms, "backward_fraction_of_memory")
PY
echo PASS

#!/usr/bin/env bash
# //tools:bench on the examples' models. The bench builds each example's own model (its fused
# lists with every fusion on are the ones the example prints), --per-fusion reports one JSON row
# per registered fusion that fires on it, naming the fused ops it made, and no row for the others;
# every example model times fused against unfused; a size flag of another model, or an unknown
# model, is an error naming what is known.
# Arguments: the bench, charlm and custom_fusion binaries, and a word list for charlm.
set -euo pipefail
bench="$1" charlm="$2" custom_fusion="$3" words="$4"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
command -v python3 >/dev/null || { echo "FAIL: python3 is needed to read the JSON reports"; exit 1; }

sizes=(--hidden=32 --context=4 --embed=8 --blocks=2)
"$charlm" --data="$words" --steps=1 "${sizes[@]}" >"$dir/charlm.txt"
"$bench" --model charlm --tokens 64 "${sizes[@]}" --iters 2 --per-fusion --json "$dir/charlm.json" >"$dir/bench_charlm.txt"
"$custom_fusion" >"$dir/custom.txt"
"$bench" --model custom_fusion --tokens 16 --iters 2 --per-fusion --json "$dir/custom.json" >"$dir/bench_custom.txt"

python3 - "$dir" <<'PY'
import json, re, sys
d = sys.argv[1]

def fused_lists(path):
    """The last 'forward: [...]' and 'backward: [...]' lines a program printed."""
    lines = open(path).read().splitlines()
    return [l for l in lines if l.startswith("forward: [")][-1], [l for l in lines if l.startswith("backward: [")][-1]

def fused_entries(lists):
    """Entries covering two ops or more, e.g. 'ForwardLinearBiasAdd(linear2, bias2, addextrainput0)'."""
    return {m.group(0) for l in lists for m in re.finditer(r"\w+\([^)]*\)", l) if "," in m.group(0)}

def check(model, example_out, bench_out, report, sizes, expected=None):
    example = fused_lists(f"{d}/{example_out}")
    assert fused_lists(f"{d}/{bench_out}") == example, f"{model}: the bench's fused lists differ from the example's"
    together = fused_entries(example)
    fusions = {e.split("(")[0] for e in together}
    rows = json.load(open(f"{d}/{report}"))
    names = [r["fusion"] for r in rows]
    assert len(names) == len(set(names)), f"{model}: a fusion has two rows: {names}"
    assert set(names) == fusions, f"{model}: rows {names}, but the fusions that fire are {sorted(fusions)}"
    if expected: assert set(names) == expected, f"{model}: rows {names}, expected {sorted(expected)}"
    for r in rows:
        assert r["model"] == model and r["sizes"] == sizes, r
        assert r["fused_entries"] and all(e.startswith(r["fusion"] + "(") for e in r["fused_entries"]), r
        # alone, a fusion fuses at least where it fuses with every other fusion on
        mine = {e for e in together if e.startswith(r["fusion"] + "(")}
        assert mine <= set(r["fused_entries"]), (r["fusion"], mine, r["fused_entries"])
        for field in ("fused_fwd_bwd_ms", "unfused_fwd_bwd_ms", "speedup_fwd_bwd"):
            assert isinstance(r[field], (int, float)) and r[field] > 0, (r["fusion"], field, r[field])
        for field in ("fused_saved_bytes", "unfused_saved_bytes"):
            assert isinstance(r[field], int) and r[field] > 0, (r["fusion"], field, r[field])
    print(f"{model}: {len(rows)} fusions: {', '.join(names)}")

check("charlm", "charlm.txt", "bench_charlm.txt", "charlm.json", {"context": 4, "embed": 8, "blocks": 2})
check("custom_fusion", "custom.txt", "bench_custom.txt", "custom.json", {},
      expected={"ForwardLinearSquare", "BackwardSquareScale"})
PY

for model in charlm classify custom_fusion lm_head llama_block moe_block; do
  "$bench" --model "$model" --tokens 16 --iters 1 --json "$dir/$model.json" >/dev/null
  python3 -c 'import json, sys; [r] = json.load(open(sys.argv[1])); assert r["model"] == sys.argv[2] and r["fused_fwd_bwd_ms"] > 0, r' \
    "$dir/$model.json" "$model"
done

# A skewed router (--router-skew) builds and times (16 experts, top 2).
"$bench" --model moe_block --tokens 64 --experts 16 --router-skew 12 --iters 1 --json "$dir/skewed.json" >/dev/null
python3 -c 'import json, sys; [r] = json.load(open(sys.argv[1])); assert r["fused_fwd_bwd_ms"] > 0, r' "$dir/skewed.json"

expect_error() {  # message, then the bench's arguments
  local message="$1"
  shift
  if "$bench" "$@" >/dev/null 2>"$dir/err.txt"; then echo "FAIL: accepted $*"; exit 1; fi
  grep -qF -- "$message" "$dir/err.txt" || { echo "FAIL: $* said: $(cat "$dir/err.txt")"; exit 1; }
}
expect_error "unknown --model nope; known: mlp_block, norm_block, charlm, classify, mnist_mlp, custom_fusion, gpt, llama, llama_block, attention, lm_head, moe_block, rmsnorm" --model nope
expect_error "--blocks is a size of --model charlm, not of --model mlp_block" --model mlp_block --blocks 3
expect_error "--features is a size of --model classify, not of --model charlm" --model charlm --features 3
expect_error "--context: 0 is outside [1, 32]" --model charlm --context 0
expect_error "--layers is a size of --model gpt or llama, not of --model llama_block" --model llama_block --layers 2
expect_error "--experts is a size of --model moe_block, not of --model llama" --model llama --experts 4
expect_error "--top-k 3 is more than --experts 2" --model moe_block --experts 2 --top-k 3 --tokens 8 --iters 1
expect_error "--per-fusion times one shape" --model charlm --per-fusion --sweep
"$bench" --help | grep -qF "one of mlp_block, norm_block, charlm, classify, mnist_mlp, custom_fusion, gpt, llama, llama_block, attention, lm_head, moe_block, rmsnorm" ||
  { echo "FAIL: --help does not list the models"; exit 1; }
echo PASS

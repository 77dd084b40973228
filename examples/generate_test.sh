#!/usr/bin/env bash
# generate on a checkpoint of a short gpt run: greedy decoding repeats, top-k 1 is greedy at any
# temperature, a seed repeats its text, stdin and --prompt agree, --stop ends the text at the token
# of its first match, a prompt longer than the context is cut to it, a BPE run leaves its
# tokenizer.model beside the checkpoint; and bad input is an error naming it.
#   generate_test.sh GPT GENERATE [ARCH FLAGS...]
set -uo pipefail
gpt="$1" generate="$2"
shift 2
source "$(dirname "$0")/require_fortunes.sh"
source "$(dirname "$0")/expect_error.sh"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
"$gpt" --steps=60 --batch=8 --context=32 --width=32 --heads=2 --layers=1 --seed=3 --sample=0 --val-tokens=2000 \
  --checkpoint="$dir/ckpt" --checkpoint-every=60 "$@" > /dev/null || { echo "FAIL: gpt did not train"; exit 1; }

gen() { "$generate" --checkpoint="$dir/ckpt" "$@" 2>/dev/null; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
greedy=$(gen --prompt="The " --max-tokens=60 --temperature=0)
[ "$(gen --prompt="The " --max-tokens=60 --temperature=0)" == "$greedy" ] || fail "greedy decoding differs between runs"
[ "$(gen --prompt="The " --max-tokens=60 --temperature=1.5 --top-k=1 --seed=9)" == "$greedy" ] ||
  fail "top-k 1 is not greedy"
[ "$(gen --prompt="The " --max-tokens=60 --temperature=1 --top-p=0.9 --seed=4)" == \
  "$(gen --prompt="The " --max-tokens=60 --temperature=1 --top-p=0.9 --seed=4)" ] || fail "a seed does not repeat"
[ "$(printf 'The ' | gen --max-tokens=60 --temperature=0)" == "$greedy" ] || fail "stdin and --prompt differ"
stop="${greedy:5:1}"
[ -n "$stop" ] && [ "$stop" != $'\n' ] || stop="${greedy:0:1}"
stopped=$(gen --prompt="The " --max-tokens=60 --temperature=0 --stop="$stop")
# The greedy text up to its first match, and on to the end of the token that completed it (a
# subword token may go on past the match).
head="${greedy%%"$stop"*}$stop"
[[ "$greedy" == "$stopped"* && "$stopped" == "$head"* && ${#stopped} -lt $((${#head} + 16)) ]] ||
  fail "--stop='$stop' did not end the text at the token of its first match: '$stopped'"
long=$(printf 'To be or not to be, that is the question; whether tis nobler in the mind to suffer %.0s' 1 2)
[ "$(gen --prompt="$long" --max-tokens=40 --temperature=0 | wc -c)" -ge 40 ] ||
  fail "a prompt longer than the context"
if [[ " $* " == *" --tokenizer=bpe "* ]]; then
  [ -s "$dir/ckpt/tokenizer.model" ] || fail "gpt wrote no tokenizer.model beside its checkpoint"
fi
speeds=$("$generate" --checkpoint="$dir/ckpt" --prompt="The " --max-tokens=20 2>&1 >/dev/null)
grep -qE "prefill: [0-9]+ tokens in .* tokens/s\); decode: 19 tokens in" <<<"$speeds" || fail "speeds: $speeds"

odd=$("$generate" --checkpoint="$dir/ckpt" --prompt=$'The \x07' --max-tokens=5 2>&1 >/dev/null)
if [[ " $* " == *" --tokenizer=bpe "* ]]; then  # its byte pieces read any text
  [[ "$odd" != *"lacks"* ]] || fail "a BPE model warned of a byte it has a piece for: $odd"
else
  [[ "$odd" == *"lacks some of the prompt's characters"* ]] || fail "no warning for a character outside the vocabulary: $odd"
fi

expect_error "the prompt is empty" "$generate" --checkpoint="$dir/ckpt" </dev/null
expect_error "--checkpoint=DIR is required" "$generate" --prompt=x
expect_error "$dir/none/gpt.safetensors" "$generate" --checkpoint="$dir/none" --prompt=x
expect_error "--top-p" "$generate" --checkpoint="$dir/ckpt" --prompt=x --top-p=0
mkdir -p "$dir/bad" && head -c 100 /dev/urandom > "$dir/bad/gpt.safetensors"
expect_error "$dir/bad/gpt.safetensors" "$generate" --checkpoint="$dir/bad" --prompt=x
echo "$cases bad inputs checked, $failures failures"
[ "$failures" -eq 0 ] && echo PASS

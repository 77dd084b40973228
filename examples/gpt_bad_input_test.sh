#!/usr/bin/env bash
# Every bad input to gpt we know of ends in a non-zero exit and a message naming the flag, folder
# or value, never in a crash, a hang or a silent success. One case a line: the words the error
# must contain, then the command. The cases that get as far as reading the corpus need the
# fortunes package: without it the test fails saying how to install it.
set -uo pipefail
gpt="$1"
dir="${TEST_TMPDIR:-$(mktemp -d)}/gpt_bad_input"
rm -rf "$dir" && mkdir -p "$dir/empty" "$dir/folder/gpt.safetensors"
small=(--steps=4 --batch=4 --context=8 --width=16 --heads=2 --layers=1 --sample=0 --val-tokens=200)
source "$(dirname "$0")/expect_error.sh"
source "$(dirname "$0")/require_fortunes.sh"

expect_error "--steps: '1e3' is not an integer" "$gpt" "${small[@]}" --steps 1e3
expect_error "--steps: 0 is outside" "$gpt" "${small[@]}" --steps 0
expect_error "--steps: '' is not an integer" "$gpt" "${small[@]}" --steps=
expect_error "unexpected argument 'sigmoid'" "$gpt" "${small[@]}" --arch=llama --experts=4 --router= sigmoid
expect_error "--layers: -1 is outside" "$gpt" "${small[@]}" --layers=-1
expect_error "--heads: 0 is outside" "$gpt" "${small[@]}" --heads=0
expect_error "--context: 0 is outside" "$gpt" "${small[@]}" --context=0
expect_error "--dropout: 1 is outside" "$gpt" "${small[@]}" --dropout=1
expect_error "--lr: 'abc' is not a finite number" "$gpt" "${small[@]}" --lr abc
expect_error "--stop-after: 9 is outside [1, 4]" "$gpt" "${small[@]}" --stop-after=9
expect_error "--val-tokens: 1 token has nothing to predict" "$gpt" "${small[@]}" --val-tokens=1
expect_error "unknown flag --widht" "$gpt" "${small[@]}" --widht=3
expect_error "--resume needs --checkpoint" "$gpt" "${small[@]}" --resume
expect_error "--device must be cpu or cuda, got tpu" "$gpt" "${small[@]}" --device=tpu
expect_error "--recompute must be none, mlp, norms or block, got blocks" "$gpt" "${small[@]}" --recompute=blocks
expect_error "--dtype: float16 is not a floating dtype: float32, float64 or bfloat16" "$gpt" "${small[@]}" --dtype=float16
expect_error "fortune_files $dir/none: no such folder" "$gpt" "${small[@]}" --corpus="$dir/none"
expect_error "fortune_files $dir/empty: holds no fortune files" "$gpt" "${small[@]}" --corpus="$dir/empty"
expect_error "--width=30 does not split evenly over --heads=4" "$gpt" "${small[@]}" --width=30 --heads=4
expect_error "--kv-heads, --rope-theta and --experts are llama's" "$gpt" "${small[@]}" --experts=4
expect_error "--top-k=5 is more than --experts=4" "$gpt" "${small[@]}" --arch=llama --experts=4 --top-k=5
expect_error "--top-k chooses among experts: give --experts" "$gpt" "${small[@]}" --arch=llama --experts=0 --top-k=2
expect_error "--balance-loss chooses among experts: give --experts" "$gpt" "${small[@]}" --arch=llama --balance-loss=0.5
expect_error "--z-loss chooses among experts: give --experts" "$gpt" "${small[@]}" --z-loss=3
expect_error "--router chooses among experts: give --experts" "$gpt" "${small[@]}" --router=sigmoid
expect_error "--router=switch is not softmax, softmax-all or sigmoid" "$gpt" "${small[@]}" --arch=llama --experts=4 \
  --router=switch
expect_error "--moe-every=2 leaves none of the --layers=1 blocks with experts" "$gpt" "${small[@]}" --arch=llama \
  --experts=4 --moe-every=2
expect_error "--moe-every=1 leaves none of the --layers=0 blocks with experts" "$gpt" "${small[@]}" --arch=llama \
  --experts=4 --layers=0
expect_error "--batch=4 does not split evenly into --accumulate=3" "$gpt" "${small[@]}" --accumulate=3
expect_error "there is no checkpoint $dir/empty/gpt.safetensors" "$gpt" "${small[@]}" --resume --checkpoint="$dir/empty"
expect_error "$dir/folder/gpt.safetensors: is not a regular file" "$gpt" "${small[@]}" --resume --checkpoint="$dir/folder"
expect_error "--json $dir/missing/out.json: its folder $dir/missing does not exist" "$gpt" "${small[@]}" \
  --json="$dir/missing/out.json"
"$gpt" "${small[@]}" --checkpoint="$dir/good" >/dev/null || { echo "FAIL: the reference run failed"; exit 1; }
expect_error "is at step 4, past --steps=2" "$gpt" "${small[@]}" --steps=2 --resume --checkpoint="$dir/good"
expect_error "gpt.safetensors" "$gpt" "${small[@]}" --width=32 --resume --checkpoint="$dir/good"
# A checkpoint resumes only into the configuration and vocabulary it was saved with, even where
# the shapes would fit: heads split the same width, and two corpora of as many characters.
expect_error "gpt.safetensors was saved with --heads=2; this run has --heads=4" \
  "$gpt" "${small[@]}" --heads=4 --resume --checkpoint="$dir/good"
expect_error "gpt.safetensors was saved with --dtype=float32; this run has --dtype=bfloat16" \
  "$gpt" "${small[@]}" --dtype=bfloat16 --resume --checkpoint="$dir/good"
expect_error "gpt.safetensors was saved with --tokenizer=char; this run has --tokenizer=bpe" \
  "$gpt" "${small[@]}" --tokenizer=bpe --vocab-size=512 --resume --checkpoint="$dir/good"
"$gpt" "${small[@]}" --arch=llama --experts=2 --top-k=1 --checkpoint="$dir/moe" >/dev/null ||
  { echo "FAIL: the run with experts failed"; exit 1; }
expect_error "gpt.safetensors was saved with settings this run has none of: --capacity-factor=0 --experts=2" \
  "$gpt" "${small[@]}" --arch=llama --resume --checkpoint="$dir/moe"
expect_error "gpt.safetensors was saved with --router=softmax; this run has --router=softmax-all" \
  "$gpt" "${small[@]}" --arch=llama --experts=2 --top-k=1 --router=softmax-all --resume --checkpoint="$dir/moe"
expect_error "--tokenizer=words is not char or bpe" "$gpt" "${small[@]}" --tokenizer=words
expect_error "--vocab-size: 256 is outside" "$gpt" "${small[@]}" --tokenizer=bpe --vocab-size=256
expect_error "vocab_size 300 must hold the 256 bytes" "$gpt" "${small[@]}" --tokenizer=bpe --vocab-size=300
for letters in abcdefgh abcdefgx; do
  mkdir -p "$dir/corpus_$letters"
  for i in $(seq 40); do printf '%s %s\n%%\n' "$letters" "$i"; done >"$dir/corpus_$letters/words"
done
"$gpt" "${small[@]}" --corpus="$dir/corpus_abcdefgh" --checkpoint="$dir/letters" >/dev/null ||
  { echo "FAIL: the run on a generated corpus failed"; exit 1; }
expect_error 'saved with vocabulary="\n %123456789abcdefgh"; this run has vocabulary="\n %123456789abcdefgx"' \
  "$gpt" "${small[@]}" --corpus="$dir/corpus_abcdefgx" --resume --checkpoint="$dir/letters"
# A batch that does not fit in memory names the step, the bytes and the flags that size it. The
# memory limit is left out under AddressSanitizer, which reserves more address space than it allows.
# (An instrumented binary names __asan_init; reading the file needs neither ldd nor the loader.)
if ! grep -q __asan_init "$gpt"; then
  expect_error "training step 1 ran out of memory for its activations and grads (allocate 68719476736 bytes" \
    bash -c 'ulimit -v 2000000 && exec "$@"' _ "$gpt" "${small[@]}" --batch=65536 --context=256 --width=1024 --heads=8
  expect_error "they grow with --batch=65536 --accumulate=1 --arch=gpt2 --context=256" \
    bash -c 'ulimit -v 2000000 && exec "$@"' _ "$gpt" "${small[@]}" --batch=65536 --context=256 --width=1024 --heads=8
fi
echo "gpt_bad_input: $((cases - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# gpt learns: after a short run of a small GPT (or, given --arch=llama, a llama block; given
# --tokenizer=bpe, on subword tokens; given --experts, with a mixture of experts as its MLP, whose
# load it reports) on Debian's fortunes its validation loss per character is
# below the unigram baseline's (predicting every token from its frequency alone) by a clear
# margin, with its attention fused into FlashAttention (and llama's head and loss into
# LMHeadCrossEntropy).
# Fails, saying how to install it, where the fortunes package is not installed.
set -euo pipefail
gpt="$1"
shift
source "$(dirname "$0")/require_fortunes.sh"
out="${TEST_TMPDIR:-$(mktemp -d)}/gpt_out.txt"
"$gpt" "$@" > "$out"
line=$(grep "^validation loss" "$out")
echo "$line"
# "validation loss 2.6540 nats/token, 2.6540 nats/character (unigram baseline 3.3172, 3.3172) after ..."
echo "$line" | awk '{ val = $5; base = $10 + 0; margin = base - val;
  if (margin < 0.4) { printf "FAIL: validation loss %s is not 0.4 below the unigram baseline %s\n", val, base; exit 1 }
  printf "PASS: validation loss %s is %.3f below the unigram baseline\n", val, margin }'
grep -q "^sampled text" "$out"
grep -q "FlashAttention(" "$out" || { echo "FAIL: FlashAttention did not fire:"; grep "^forward" "$out"; exit 1; }
if [[ " $* " == *" --experts="* ]]; then
  grep -q "Router(" "$out" || { echo "FAIL: no Router in the model:"; grep "^forward" "$out"; exit 1; }
  grep "^experts' load" "$out" || { echo "FAIL: the experts' load was not reported"; exit 1; }
fi
if [[ " $* " == *" --arch=llama "* ]]; then
  grep -q "LMHeadCrossEntropy(" "$out" || { echo "FAIL: LMHeadCrossEntropy did not fire:"; grep "^forward" "$out"; exit 1; }
fi

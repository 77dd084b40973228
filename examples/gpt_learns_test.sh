#!/usr/bin/env bash
# gpt learns: after a short run of a small GPT (or, given --arch=llama, a llama block; given
# --tokenizer=bpe, on subword tokens; given --experts, with a mixture of experts as its MLP, whose
# load it reports in its progress bar, its summary and --json, and given --capacity-factor the
# share of token copies dropped) on Debian's fortunes its validation loss per character is
# below the unigram baseline's (predicting every token from its frequency alone) by a clear
# margin, with its attention fused into FlashAttention (and llama's head and loss into
# LMHeadCrossEntropy).
# Fails, saying how to install it, where the fortunes package is not installed.
set -euo pipefail
gpt="$1"
shift
source "$(dirname "$0")/require_fortunes.sh"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
out="$dir/gpt_out.txt"
json="$dir/gpt.json"
"$gpt" "$@" --json="$json" > "$out"
line=$(grep "^validation loss" "$out")
echo "$line"
# "validation loss 2.6540 nats/token, 2.6540 nats/character (unigram baseline 3.3172, 3.3172) after ..."
echo "$line" | awk '{ val = $5; base = $10 + 0; margin = base - val;
  if (margin < 0.4) { printf "FAIL: validation loss %s is not 0.4 below the unigram baseline %s\n", val, base; exit 1 }
  printf "PASS: validation loss %s is %.3f below the unigram baseline\n", val, margin }'
grep -q "^sampled text" "$out"
grep -q "FlashAttention(" "$out" || { echo "FAIL: FlashAttention did not fire:"; grep "^forward" "$out"; exit 1; }
# A --json field's value: json_field NAME.
json_field() { grep -o "\"$1\": [-0-9.e+]*" "$json" | awk '{ print $2 }'; }
if [[ " $* " == *" --experts="* ]]; then
  grep -q "Router(" "$out" || { echo "FAIL: no Router in the model:"; grep "^forward" "$out"; exit 1; }
  grep "^experts' load" "$out" || { echo "FAIL: the experts' load was not reported"; exit 1; }
  grep -q "step [0-9]*/[0-9]* .* load [0-9.]*" "$out" || { echo "FAIL: no load column in the progress bar"; exit 1; }
  # The busiest expert's rows over the mean: at least 1, at most experts / top_k.
  experts=$(echo " $* " | grep -o -- "--experts=[0-9]*" | tail -1 | cut -d= -f2)
  top_k=$(echo " $* " | grep -o -- "--top-k=[0-9]*" | tail -1 | cut -d= -f2)
  for field in expert_load expert_load_mean; do
    value=$(json_field "$field")
    awk -v v="$value" -v most="$experts / ${top_k:-2}" -v f="$field" 'BEGIN { split(most, p, " / "); m = p[1] / p[2];
      if (v == "" || v < 1 || v > m) { printf "FAIL: --json %s is \"%s\", not in [1, %g]\n", f, v, m; exit 1 } }'
  done
  dropped=$(json_field dropped_fraction)
  if [[ " $* " == *" --capacity-factor="* ]]; then
    grep -q "step [0-9]*/[0-9]* .* dropped [0-9.]*%" "$out" || { echo "FAIL: no dropped column in the progress bar"; exit 1; }
    awk -v d="$dropped" 'BEGIN { if (d == "" || d <= 0 || d >= 1) { printf "FAIL: dropped_fraction \"%s\" with a capacity\n", d; exit 1 } }'
  else
    awk -v d="$dropped" 'BEGIN { if (d != 0) { printf "FAIL: dropless, but dropped_fraction is \"%s\"\n", d; exit 1 } }'
  fi
  echo "PASS: the experts' load $(json_field expert_load) (run mean $(json_field expert_load_mean)), dropped $dropped"
fi
if [[ " $* " == *" --arch=llama "* ]]; then
  grep -q "LMHeadCrossEntropy(" "$out" || { echo "FAIL: LMHeadCrossEntropy did not fire:"; grep "^forward" "$out"; exit 1; }
fi

#!/usr/bin/env bash
# Training 30 steps straight and training 15, saving, then resuming to 30 give the same losses at
# every step, to the last printed digit, with dropout on (the checkpoint holds its generators)
# and the optimizer's two parameter groups (decayed and not) restored; once with one batch a step
# and once with two micro-batches a step (--accumulate=2, a Dropout mask per micro-batch).
#   gpt_resume_test.sh GPT DECAYED,TENSORS [ARCH FLAGS...]
set -euo pipefail
gpt="$1"
decay="${2/,/ of }"  # the parameter tensors in the decayed group: "5,17" reads "5 of 17"
shift 2
source "$(dirname "$0")/require_fortunes.sh"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
# With --tokenizer=bpe the first run trains the BPE model and caches the tokens; the others map them.
common=(--steps=30 --batch=8 --context=16 --width=32 --heads=2 --layers=1 --dropout=0.1 --seed=3 --sample=0 --val-tokens=2000
  --token-cache="$dir/tokens" "$@")

for accumulate in 1 2; do
  run=("${common[@]}" --accumulate=$accumulate)
  rm -rf "$dir/ckpt" "$dir/straight.txt" "$dir/resumed.txt"
  "$gpt" "${run[@]}" --loss-log="$dir/straight.txt" > /dev/null
  "$gpt" "${run[@]}" --stop-after=15 --checkpoint="$dir/ckpt" --checkpoint-every=5 --loss-log="$dir/resumed.txt" > /dev/null
  "$gpt" "${run[@]}" --checkpoint="$dir/ckpt" --checkpoint-every=5 --resume --loss-log="$dir/resumed.txt" > "$dir/out.txt"
  grep -q "resumed from .* at step 15" "$dir/out.txt"
  # 1 layer: 4 Linear weights and the head's decay (GPT-2: both embeddings, 12 of the block's
  # parameters, and the final LayerNorm's 2 do not; llama: the embedding and 3 RMSNorms).
  grep -q "weight decay 0.01 on $decay parameter tensors" "$dir/out.txt"
  if ! diff "$dir/straight.txt" "$dir/resumed.txt"; then
    echo "FAIL: with --accumulate=$accumulate the resumed run's losses differ from the uninterrupted run's"
    exit 1
  fi
  [ "$(wc -l < "$dir/straight.txt")" -eq 30 ]
  echo "PASS: --accumulate=$accumulate: 30 losses identical after resuming at step 15"
done
# A weight decay other than the checkpoint's: the saved one wins, and the run says so.
rm -rf "$dir/ckpt"
"$gpt" "${common[@]}" --stop-after=5 --checkpoint="$dir/ckpt" > /dev/null
said=$("$gpt" "${common[@]}" --stop-after=6 --checkpoint="$dir/ckpt" --resume --weight-decay=0.5 2>&1 > /dev/null)
grep -qF "a weight decay of 0.5 for parameter group 0 is not applied: a resumed run keeps the one its checkpoint saved (0.01)" \
  <<<"$said" || { echo "FAIL: --weight-decay with --resume did not say the checkpoint's wins, said: $said"; exit 1; }
echo "PASS: a resumed run says it keeps the checkpoint's weight decay"

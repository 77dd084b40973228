#!/usr/bin/env bash
# hf_checkpoint: a gpt checkpoint exported to Hugging Face's layout and imported again generates
# the same text as the original (for GPT-2's block in characters and the llama block in BPE
# pieces), a model transformers made imports without a tokenizer, and bad input is an error
# naming it.
#   hf_checkpoint_test.sh GPT GENERATE HF_CHECKPOINT TRANSFORMERS_MADE_FOLDER
set -uo pipefail
gpt="$1" generate="$2" hf="$3" transformers_made="$4"
source "$(dirname "$0")/require_fortunes.sh"
source "$(dirname "$0")/expect_error.sh"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
small=(--steps=20 --batch=4 --context=16 --width=32 --heads=4 --layers=2 --sample=0 --val-tokens=200)
gen() { "$generate" --checkpoint="$1" --prompt="The " --max-tokens=30 --temperature=0 2>/dev/null; }

for model in "gpt2 --tokenizer=char" "llama --tokenizer=bpe --vocab-size=512"; do
  set -- $model
  name="$1"
  "$gpt" "${small[@]}" --arch=$model --checkpoint="$dir/$name" > /dev/null || { fail "gpt $model did not train"; continue; }
  "$hf" --checkpoint="$dir/$name" --export="$dir/$name.hf" > /dev/null || { fail "export of $name"; continue; }
  [ -s "$dir/$name.hf/config.json" ] && [ -s "$dir/$name.hf/model.safetensors" ] || fail "$name: no config.json or model.safetensors"
  "$hf" --import="$dir/$name.hf" --checkpoint="$dir/$name.back" > /dev/null || { fail "import of $name"; continue; }
  original=$(gen "$dir/$name") back=$(gen "$dir/$name.back")
  [ -n "$original" ] && [ "$original" == "$back" ] || fail "$name: the imported model generates '$back', not '$original'"
  echo "PASS: $name: exported, imported, generates the same text"
done
[ -s "$dir/llama.hf/tokenizer.model" ] || fail "the BPE model's export has no tokenizer.model"

"$hf" --import="$transformers_made" --checkpoint="$dir/made" > /dev/null || fail "import of $transformers_made"
expect_error "has no tokenizer FuseLab reads" "$generate" --checkpoint="$dir/made" --prompt=x
# A tokenizer.model beside a model transformers made: a damaged one, and one of another vocabulary.
mkdir -p "$dir/spm" && cp "$transformers_made"/config.json "$transformers_made"/model.safetensors "$dir/spm/"
head -c 300 "$dir/llama.hf/tokenizer.model" > "$dir/spm/tokenizer.model"
expect_error "$dir/spm/tokenizer.model is not a SentencePiece model" "$hf" --import="$dir/spm" --checkpoint="$dir/x"
cp "$dir/llama.hf/tokenizer.model" "$dir/spm/tokenizer.model"
expect_error "has 512 tokens, but config.json's vocab_size is 64" "$hf" --import="$dir/spm" --checkpoint="$dir/x"
expect_error "give one of --export=HF_DIR and --import=HF_DIR" "$hf" --checkpoint="$dir/gpt2"
expect_error "give one of --export=HF_DIR and --import=HF_DIR" "$hf" --checkpoint="$dir/gpt2" --export=a --import=b
expect_error "--checkpoint=DIR is required" "$hf" --export="$dir/x"
expect_error "$dir/none/gpt.safetensors: does not exist" "$hf" --checkpoint="$dir/none" --export="$dir/x"
expect_error "$dir/none is not a folder" "$hf" --import="$dir/none" --checkpoint="$dir/x"
mkdir -p "$dir/broken" && echo '{"model_type": "gpt2"' > "$dir/broken/config.json"
expect_error "$dir/broken/config.json is not JSON" "$hf" --import="$dir/broken" --checkpoint="$dir/x"
expect_error "holds a model alone (one imported, say), without the optimizer's state" \
  "$gpt" "${small[@]}" --resume --checkpoint="$dir/gpt2.back"
expect_error "--checkpoint $dir/gpt2 already holds a checkpoint" "$hf" --import="$dir/gpt2.hf" --checkpoint="$dir/gpt2"
touch "$dir/a_file"
expect_error "--export $dir/a_file: is a file, not a folder" "$hf" --checkpoint="$dir/gpt2" --export="$dir/a_file"
expect_error "--checkpoint $dir/a_file: is a file, not a folder" "$gpt" "${small[@]}" --checkpoint="$dir/a_file"
# An export over a BPE model's export leaves no tokenizer.model of the earlier model behind.
"$hf" --checkpoint="$dir/gpt2" --export="$dir/llama.hf" > /dev/null && [ ! -e "$dir/llama.hf/tokenizer.model" ] ||
  fail "a character model's export kept an earlier tokenizer.model"
echo "$cases bad inputs checked, $failures failures"
[ "$failures" -eq 0 ] && echo PASS

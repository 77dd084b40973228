#!/usr/bin/env bash
# README command 1: installs what is missing, builds, trains the GPT on Debian's fortunes in BPE
# pieces (the main job), generates text from a prompt with the trained checkpoint and the KV
# cache, then runs the fused-vs-unfused benchmark once at a small size.
# Arguments go to gpt, e.g. --steps=300, --no-fusion or --arch=llama.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"  # threads sleep at barriers (docs/settings.md)
bazel build -c opt //examples:gpt //examples:generate //tools:bench
checkpoint="${TMPDIR:-/tmp}/fuselab-main"
bazel-bin/examples/gpt --tokenizer=bpe --sample=0 --checkpoint="$checkpoint" "$@"
echo
prompt="The meaning of life "
echo "generate --checkpoint=$checkpoint --prompt='$prompt' --max-tokens=200:"
printf '%s' "$prompt"
bazel-bin/examples/generate --checkpoint="$checkpoint" --prompt="$prompt" --max-tokens=200 --seed=1
echo
bazel-bin/tools/bench --model mlp_block --tokens 1024 --hidden 256 --iters 10

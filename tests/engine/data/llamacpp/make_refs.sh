#!/usr/bin/env bash
# Regenerates the llama.cpp reference outputs in this folder (run by hand; CI only reads them).
#   LLAMA_BIN=/tmp/llcpp/build-cpu/bin tests/engine/data/llamacpp/make_refs.sh [model.gguf]
# llama.cpp: the one vendored by llama-cpp-python 0.3.36 (PyPI sdist), built for the CPU.
# The outputs printed here were copied into greedy_gemma3_270m.json and
# perplexity_gemma3_270m.json (with the model's sha256).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${LLAMA_BIN:-/tmp/llcpp/build-cpu/bin}
model=${1:-${TANDEM_DEFAULT_MODEL:-$HOME/.local/share/tandem/models/gemma-3-270m-q4_k_m.gguf}}
sha256sum "$model"
# Greedy continuation, 48 tokens; llama-completion ends its output with a blank line
# (not generated text), which the JSON leaves out.
"$bin/llama-completion" -m "$model" -p 'The history of the printing press begins' -n 48 \
  --temp 0 --top-k 1 --ignore-eos -no-cnv --no-display-prompt -t 2 -c 256 --seed 1 2>/dev/null \
  | tee /tmp/llamacpp_greedy.txt
"$bin/llama-tokenize" -m "$model" -f /tmp/llamacpp_greedy.txt --ids --no-bos --log-disable 2>/dev/null | tail -1
# Perplexity: 4 chunks of 256 tokens.
"$bin/llama-perplexity" -m "$model" -f "$here/perplexity_text.txt" -c 256 -b 256 -t 2 2>&1 \
  | grep -E '^\[|Final estimate'

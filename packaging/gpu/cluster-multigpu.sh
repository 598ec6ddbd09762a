#!/usr/bin/env bash
# Cluster mode on one multi-GPU host: one tandem-node per GPU over loopback TCP, tensor parallel,
# against one GPU holding the whole model. Prints decode tok/s and the speedup per GPU count.
#   packaging/gpu/cluster-multigpu.sh BIN_DIR [OUT_DIR]
# BIN_DIR holds tandem-cli, tandem-node and the backend plugins (a packaging/gpu/bundle.sh bundle
# with env.sh, or a build's bin/). Environment:
#   CLUSTER_BACKEND=vulkan|hip (default vulkan)    CLUSTER_LIKE=llama-3.1-70b (synth shape)
#   CLUSTER_TYPE=q4_0   CLUSTER_MODELS=/tmp (where the synthetic GGUF is written; 70B Q4_0 ~40 GB)
#   CLUSTER_GPUS="2 4" (group sizes tried, capped at the GPUs present)   CLUSTER_NGEN=64
# 70B Q4_0 (~40 GB) fits one H200 (141 GB), so it is the model; set CLUSTER_LIKE=llama-3.1-8b for
# a quick run. The coordinator (tandem-cli, GPU 0) is rank 0; GPUs 1..n-1 each run a tandem-node.
set -uo pipefail
BIN="$(cd "${1:?usage: cluster-multigpu.sh BIN_DIR [OUT_DIR]}" && pwd)"
OUT="${2:-$PWD/cluster-multigpu-out}"
BACKEND="${CLUSTER_BACKEND:-vulkan}"
LIKE="${CLUSTER_LIKE:-llama-3.1-70b}"
TYPE="${CLUSTER_TYPE:-q4_0}"
MODELS="${CLUSTER_MODELS:-/tmp}"
NGEN="${CLUSTER_NGEN:-64}"
SECRET="multigpu-$$"
mkdir -p "$OUT"
run() { if [ -x "$BIN/env.sh" ]; then "$BIN/env.sh" "$@"; else PATH="$BIN:$PATH" "$@"; fi; }
note() { printf '\n== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)" | tee -a "$OUT/summary.md"; }

NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || echo 0)
note "devices ($NGPU GPUs)"
nvidia-smi --query-gpu=index,name,memory.total --format=csv 2>&1 | tee -a "$OUT/summary.md"
run tandem-cli devices 2>&1 | tee -a "$OUT/summary.md"
[ "$NGPU" -ge 2 ] || { echo "need at least 2 GPUs" | tee -a "$OUT/summary.md"; exit 1; }

MODEL="$MODELS/cluster-$LIKE-$TYPE.gguf"
if [ ! -f "$MODEL" ]; then
  note "synth $LIKE $TYPE -> $MODEL"
  run tandem-cli synth --like "$LIKE" --type "$TYPE" -o "$MODEL" || exit 1
fi

bench() {  # bench NAME extra-args...
  local name=$1; shift
  run tandem-cli bench -m "$MODEL" --backend "$BACKEND" --device 0 --ctx 512 -p 0 -n "$NGEN" \
    --json "$@" >"$OUT/$name.json" 2>"$OUT/$name.log"
  local rc=$?
  local tg
  tg=$(grep -o '"decode_tok_s": *[0-9.e+-]*' "$OUT/$name.json" | grep -o '[0-9.e+-]*$')
  echo "${tg:-0}"
  return $rc
}

note "1 GPU (whole model)"
T1=$(bench gpu1) || { tail -5 "$OUT/gpu1.log" | tee -a "$OUT/summary.md"; }
echo "decode tok/s: $T1" | tee -a "$OUT/summary.md"

printf '\n| GPUs | decode tok/s | speedup |\n|---|---|---|\n| 1 | %s | 1.00x |\n' "$T1" >"$OUT/table.md"
for n in ${CLUSTER_GPUS:-2 4}; do
  [ "$n" -le "$NGPU" ] || continue
  note "$n GPUs: tandem-node on GPUs 1..$((n - 1)), coordinator on GPU 0"
  pids=(); nodes=""
  for ((g = 1; g < n; g++)); do
    log="$OUT/node$n-$g.log"
    run tandem-node serve --static-only --cluster-port 0 --cluster-secret "$SECRET" \
      --backend "$BACKEND" --device "$g" --models "$(dirname "$MODEL")" \
      --shard-cache "$OUT/shards$g" >"$log" 2>&1 &
    pids+=($!)
    for _ in $(seq 300); do grep -q 'cluster port ' "$log" && break; sleep 0.2; done
    port=$(grep -o 'cluster port [0-9]*' "$log" | grep -o '[0-9]*$')
    nodes="${nodes:+$nodes,}127.0.0.1:$port"
  done
  shares=$(printf '1%.0s,' $(seq "$n")); shares=${shares%,}
  TN=$(bench "gpu$n" --cluster "$nodes" --cluster-secret "$SECRET" --cluster-shares "$shares" \
       --cluster-timeout-ms 30000) || tail -5 "$OUT/gpu$n.log" | tee -a "$OUT/summary.md"
  grep '^rank ' "$OUT/gpu$n.log" | tee -a "$OUT/summary.md"
  kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null
  sp=$(awk -v a="$TN" -v b="$T1" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
  echo "decode tok/s: $TN ($sp)" | tee -a "$OUT/summary.md"
  printf '| %d | %s | %s |\n' "$n" "$TN" "$sp" >>"$OUT/table.md"
done
note "$LIKE $TYPE, backend $BACKEND, loopback TCP, tg$NGEN"
cat "$OUT/table.md" | tee -a "$OUT/summary.md"

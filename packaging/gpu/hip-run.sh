#!/usr/bin/env bash
# The HIP backend's run on a lent NVIDIA GPU host (through the CUDA compatibility path), from a
# bundle made by packaging/gpu/bundle.sh (binaries built with -DTANDEM_HIP_PLATFORM=nvidia
# -DTANDEM_CUDA_ARCHS=90):
#   1. the op suite (test-backend-ops) on hip: per-case and worst-per-op NMSE printed,
#   2. the hf-tiny logits/greedy tests on hip,
#   3. tandem-cli bench on synthetic llama-3.1-8b-shaped models (Q4_0, Q4_K, Q8_0: pp512, tg128,
#      achieved GB/s, the device's D2D copy bandwidth) on --backend hip and --backend vulkan,
#      and a table with the HIP/Vulkan ratios,
#   4. the per-node GPU time profile of Q4_0 decode (TANDEM_HIP_PROFILE=1: op, calls, us, share,
#      GB/s of the matvecs) into the summary.
# Usage: hip-run.sh BUNDLE_DIR [OUT_DIR]     (about 4-6 minutes on an H100)
# Environment: HIP_RUN_STAGES="tests models bench profile" (default: all), HIP_RUN_TYPES="q4_0 q4_k q8_0"
# (q4_k_m: f16 synth + tandem-cli quantize, ~1-2 min more),
# HIP_RUN_MODELS=/tmp (where the synthetic GGUFs are written; ~18 GB),
# HIP_RUN_BACKENDS="hip hip-eager vulkan" (hip-eager: step graphs off, first type only).
set -uo pipefail
BUNDLE="$(cd "${1:?usage: hip-run.sh BUNDLE_DIR [OUT_DIR]}" && pwd)"
OUT="${2:-${OUT:-$PWD/hip-run-out}}"
STAGES="${HIP_RUN_STAGES:-tests models bench profile}"
TYPES="${HIP_RUN_TYPES:-q4_0 q4_k q8_0}"
BACKENDS="${HIP_RUN_BACKENDS:-hip hip-eager vulkan}"
MODELS="${HIP_RUN_MODELS:-/tmp}"
mkdir -p "$OUT"
run() { "$BUNDLE/env.sh" "$@"; }
status=0
note() { printf '\n== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)" | tee -a "$OUT/summary.md"; }

note "devices"
nvidia-smi --query-gpu=name,memory.total,clocks.max.memory --format=csv 2>&1 | tee -a "$OUT/summary.md"
run tandem-cli devices 2>&1 | tee -a "$OUT/summary.md"

if [[ " $STAGES " == *" tests "* ]]; then
  note "op suite on hip (test-backend-ops: every op vs double references and the CPU backend)"
  TANDEM_TEST_BACKENDS=hip run test-backend-ops --gtest_output="xml:$OUT/test-backend-ops.xml" \
    >"$OUT/test-backend-ops.log" 2>&1 || status=1
  grep -E '^\[  (PASSED|FAILED|  SKIPPED) |^\[  FAILED  \]' "$OUT/test-backend-ops.log" |
    tee -a "$OUT/summary.md"
  # The worst NMSE per op (vs f64, vs cpu) is the table after "NMSE per op and backend".
  sed -n '/^NMSE per op and backend/,$p' "$OUT/test-backend-ops.log" | grep -E '^(NMSE|\|)' |
    tee -a "$OUT/summary.md"
fi

if [[ " $STAGES " == *" models "* ]]; then
  note "hf-tiny logits/greedy on hip (test-hip: HipModels*)"
  run test-hip --gtest_filter='*HipModels*' --gtest_output="xml:$OUT/test-hip-models.xml" \
    >"$OUT/test-hip-models.log" 2>&1 || status=1
  grep -E 'hip vs cpu|differs|^\[  (PASSED|FAILED) |^\[  FAILED  \]|SKIPPED' \
    "$OUT/test-hip-models.log" | tee -a "$OUT/summary.md"
fi

# One number from bench's JSON output.
field() {
  local v
  v=$(grep -o "\"$2\": *[-0-9.e+]*" "$1" | head -1 | sed 's/.*: *//')
  echo "${v:-0}"
}

if [[ " $STAGES " == *" bench "* ]]; then
  note "bench: synthetic llama-3.1-8b shapes, pp512 / tg128"
  for q in $TYPES; do
    model="$MODELS/l8b-$q.gguf"
    if [ ! -f "$model" ] && [ "$q" = q4_k_m ]; then
      # synth writes one type; the Q4_K_M mix (Q6_K output/attn_v/half of ffn_down) comes from
      # the quantizer, from an f16 synth (16 GB, about a minute more).
      [ -f "$MODELS/l8b-f16.gguf" ] ||
        run tandem-cli synth --like llama-3.1-8b --type f16 -o "$MODELS/l8b-f16.gguf" >/dev/null
      run tandem-cli quantize "$MODELS/l8b-f16.gguf" "$model" --type q4_k_m >/dev/null 2>&1 ||
        echo "quantize q4_k_m failed" | tee -a "$OUT/summary.md"
    fi
    [ -f "$model" ] || run tandem-cli synth --like llama-3.1-8b --type "$q" -o "$model" >/dev/null
    for be in $BACKENDS; do
      # hip-eager: the HIP backend with step graphs off, for the first type only (what graph
      # replay buys).
      backend="$be" graphs=1
      if [ "$be" = hip-eager ]; then
        [ "$q" = "${TYPES%% *}" ] || continue
        backend=hip graphs=0
      fi
      TANDEM_HIP_GRAPHS=$graphs timeout 150 "$BUNDLE/env.sh" tandem-cli bench -m "$model" \
        --backend "$backend" -p 512 -n 128 --json \
        >"$OUT/bench-$q-$be.json" 2>"$OUT/bench-$q-$be.err" || {
        echo "bench $q $be failed: $(tail -3 "$OUT/bench-$q-$be.err")" | tee -a "$OUT/summary.md"
        status=1
      }
    done
  done
  {
    echo
    echo "| type | backend | pp512 tok/s | tg128 tok/s | decode GB/s | copy GB/s | decode/copy |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    for q in $TYPES; do
      for be in $BACKENDS; do
        f="$OUT/bench-$q-$be.json"
        [ -s "$f" ] || continue
        printf '| %s | %s | %.1f | %.1f | %.1f | %.1f | %.2f |\n' "$q" "$be" \
          "$(field "$f" prefill_tok_s)" "$(field "$f" decode_tok_s)" "$(field "$f" decode_gb_s)" \
          "$(field "$f" copy_gb_s)" "$(field "$f" decode_over_copy)"
      done
    done
    echo
    echo "| type | pp512 hip/vulkan | tg128 hip/vulkan |"
    echo "|---|---:|---:|"
    for q in $TYPES; do
      h="$OUT/bench-$q-hip.json" v="$OUT/bench-$q-vulkan.json"
      [ -s "$h" ] && [ -s "$v" ] || continue
      awk -v hp="$(field "$h" prefill_tok_s)" -v vp="$(field "$v" prefill_tok_s)" \
          -v ht="$(field "$h" decode_tok_s)" -v vt="$(field "$v" decode_tok_s)" -v q="$q" \
          'BEGIN { printf "| %s | %.2f | %.2f |\n", q, (vp > 0 ? hp / vp : 0), (vt > 0 ? ht / vt : 0) }'
    done
  } | tee -a "$OUT/summary.md"
fi
if [[ " $STAGES " == *" profile "* ]]; then
  note "profile: Q4_0 decode, GPU time per node (TANDEM_HIP_PROFILE=1, graphs off)"
  model="$MODELS/l8b-q4_0.gguf"
  [ -f "$model" ] || run tandem-cli synth --like llama-3.1-8b --type q4_0 -o "$model" >/dev/null
  TANDEM_HIP_PROFILE=1 timeout 150 "$BUNDLE/env.sh" tandem-cli bench -m "$model" --backend hip \
    -p 0 -n 32 >"$OUT/profile-q4_0.out" 2>"$OUT/profile-q4_0.err" || status=1
  sed -n '/^hip profile/,$p' "$OUT/profile-q4_0.err" | grep -E '^(hip profile|\|)' |
    tee -a "$OUT/summary.md"
fi
note "done (status $status)"
exit $status

#!/usr/bin/env bash
# The Vulkan backend on a lent GPU host (NVIDIA H100/H200, NVIDIA Vulkan driver), in one go:
# devices, the op tests (NMSE per weight type and shape), the hf-tiny logits/greedy tests, and
# the llama-3.1-8b-shaped benchmarks (ours and llama.cpp's llama-bench on the same files).
#
#   packaging/gpu/vulkan-run.sh BUNDLE [LLAMACPP_DIR]
#     BUNDLE        packaging/gpu/bundle.sh's output, unpacked (bin/, lib/, fixtures/, env.sh);
#                   needs tandem-cli, libtandem-backend-vulkan.so, test-vulkan, test-backend-ops
#     LLAMACPP_DIR  llama-bench and its .so files built with -DGGML_VULKAN=ON
#                   (default .gpu/llamacpp-vulkan; skipped when absent)
# Environment: VK_RUN_TYPES (default "q4_0 q4_k_m q8_0"), VK_RUN_TMP (default /tmp/vk-run),
# VK_RUN_SKIP_TESTS=1 for benchmarks only, VK_RUN_PROFILE=1 for a per-op GPU time table.
# Everything goes to stdout as markdown; the whole run stays under ~8 minutes on an H100.
set -uo pipefail
if [ $# -lt 1 ] || [ ! -x "$1/env.sh" ]; then
  echo "usage: $0 BUNDLE [LLAMACPP_DIR]   (BUNDLE has env.sh, bin/, lib/)" >&2
  exit 2
fi
B="$(cd "$1" && pwd)"
L="${2:-.gpu/llamacpp-vulkan}"
[ -d "$L" ] && L="$(cd "$L" && pwd)"
TMP="${VK_RUN_TMP:-/tmp/vk-run}"
TYPES="${VK_RUN_TYPES:-q4_0 q4_k_m q8_0}"
mkdir -p "$TMP"
run() { "$B/env.sh" "$@"; }
section() { printf '\n## %s\n\n' "$*"; }
t_start=$(date +%s)
status=0

section "Devices"
(command -v vulkaninfo >/dev/null && vulkaninfo --summary 2>/dev/null | grep -E "deviceName|driverName|driverInfo|apiVersion" ) || true
run tandem-cli devices || status=1
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,clocks.max.memory --format=csv

if [ "${VK_RUN_SKIP_TESTS:-0}" != 1 ]; then
  section "Op tests (test-vulkan: every op vs the CPU backend; NMSE per weight type and shape)"
  # The NMSE table rows start with '|'; gtest's summary follows.
  TANDEM_TEST_BACKENDS=cpu,vulkan timeout 240 "$B/env.sh" test-vulkan --gtest_brief=1 \
    > "$TMP/test-vulkan.log" 2>&1
  rc=$?
  grep -E '^\|' "$TMP/test-vulkan.log"
  grep -E '^\[  (PASSED|FAILED|  OK|SKIPPED)|FAILED|Failure|error' "$TMP/test-vulkan.log" | head -60
  echo "test-vulkan exit $rc"
  [ $rc -eq 0 ] || status=1

  section "Engine op suite on cpu and vulkan (test-backend-ops)"
  TANDEM_TEST_BACKENDS=cpu,vulkan timeout 120 "$B/env.sh" test-backend-ops --gtest_brief=1 \
    > "$TMP/test-backend-ops.log" 2>&1
  rc=$?
  tail -n 30 "$TMP/test-backend-ops.log"
  echo "test-backend-ops exit $rc"
  [ $rc -eq 0 ] || status=1
fi

section "Benchmarks: synth llama-3.1-8b, pp512 / tg128"
echo "(q4_k_m: synth writes every matrix in q4_k, attn_v/ffn_down/output in q6_k on the layers"
echo " llama.cpp's Q4_K_M gives more bits, when synth supports the mix; else plain q4_k)"
printf '\n| type | GiB | ours pp512 tok/s | ours tg128 tok/s | ours GB/s | copy GB/s | GB/s / copy | llama.cpp pp512 | llama.cpp tg128 | tg ours/llama.cpp |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
json_num() { sed -n "s/.*\"$1\": *\([-0-9.e+]*\).*/\1/p" "$2" | head -1; }
for q in $TYPES; do
  f="$TMP/l8b-$q.gguf"
  if [ ! -s "$f" ]; then
    if ! run tandem-cli synth --like llama-3.1-8b --type "$q" -o "$f" > "$TMP/synth-$q.log" 2>&1; then
      # synth without the q4_k_m mix: plain q4_k stands for it
      if [ "$q" = q4_k_m ]; then
        run tandem-cli synth --like llama-3.1-8b --type q4_k -o "$f" > "$TMP/synth-$q.log" 2>&1 || { echo "| $q | synth failed: $(tail -1 "$TMP/synth-$q.log") |"; status=1; continue; }
      else
        echo "| $q | synth failed: $(tail -1 "$TMP/synth-$q.log") |"; status=1; continue
      fi
    fi
  fi
  gib=$(awk -v b="$(stat -c %s "$f")" 'BEGIN{printf "%.2f", b/1073741824}')
  timeout 150 "$B/env.sh" tandem-cli bench -m "$f" --backend vulkan --ctx 1024 -p 512 -n 128 --json \
    > "$TMP/bench-$q.json" 2> "$TMP/bench-$q.err"
  pp=$(json_num prefill_tok_s "$TMP/bench-$q.json"); tg=$(json_num decode_tok_s "$TMP/bench-$q.json")
  gbs=$(json_num decode_gb_s "$TMP/bench-$q.json"); cbw=$(json_num copy_gb_s "$TMP/bench-$q.json")
  [ -n "$tg" ] || { status=1; tg=ERR; tail -3 "$TMP/bench-$q.err" | sed 's/^/    /' >&2; }
  ratio=$(awk -v a="${gbs:-0}" -v c="${cbw:-0}" 'BEGIN{ if (c > 0) printf "%.2f", a/c; else print "-" }')
  lpp=-; ltg=-
  if [ -x "$L/llama-bench" ]; then
    LD_LIBRARY_PATH="$L:$B/lib:${LD_LIBRARY_PATH:-}" timeout 150 "$L/llama-bench" -m "$f" -ngl 99 \
      -p 512 -n 128 -r 2 -o csv > "$TMP/llama-$q.csv" 2> "$TMP/llama-$q.err"
    # csv columns: ... n_prompt,n_gen,...,avg_ts,stddev_ts
    lpp=$(awk -F, 'NR==1{for(i=1;i<=NF;i++){gsub(/"/,"",$i);h[$i]=i}} NR>1{gsub(/"/,"");if($h["n_prompt"]>0)print $h["avg_ts"]}' "$TMP/llama-$q.csv" | head -1)
    ltg=$(awk -F, 'NR==1{for(i=1;i<=NF;i++){gsub(/"/,"",$i);h[$i]=i}} NR>1{gsub(/"/,"");if($h["n_gen"]>0)print $h["avg_ts"]}' "$TMP/llama-$q.csv" | head -1)
    [ -n "$ltg" ] || { ltg=ERR; tail -3 "$TMP/llama-$q.err" | sed 's/^/    /' >&2; }
  fi
  rel=$(awk -v a="$tg" -v b="$ltg" 'BEGIN{ if (b+0 > 0 && a+0 > 0) printf "%.2f", a/b; else print "-" }')
  printf '| %s | %s | %.0f | %.1f | %.0f | %.0f | %s | %s | %s | %s |\n' "$q" "$gib" "${pp:-0}" "${tg//ERR/0}" \
    "${gbs:-0}" "${cbw:-0}" "$ratio" "$lpp" "$ltg" "$rel"
  if [ "${VK_RUN_PROFILE:-0}" = 1 ]; then
    TANDEM_VK_PROFILE=1 timeout 120 "$B/env.sh" tandem-cli bench -m "$f" --backend vulkan --ctx 1024 \
      -p 512 -n 16 > /dev/null 2> "$TMP/profile-$q.txt"
  fi
  [ $(( $(date +%s) - t_start )) -gt 420 ] && { echo "(stopping: time budget)"; break; }
done
if [ "${VK_RUN_PROFILE:-0}" = 1 ]; then
  for p in "$TMP"/profile-*.txt; do section "GPU time per op: $(basename "$p" .txt)"; grep -E '^\|' "$p"; done
fi
for q in $TYPES; do
  [ -s "$TMP/bench-$q.err" ] && { section "bench $q stderr (log lines)"; head -20 "$TMP/bench-$q.err"; }
done
echo
echo "total $(( $(date +%s) - t_start )) s, status $status"
exit $status

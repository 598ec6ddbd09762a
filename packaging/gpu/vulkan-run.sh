#!/usr/bin/env bash
# The Vulkan backend on a lent GPU host (NVIDIA H100/H200, NVIDIA Vulkan driver), in one go:
# devices, the op tests (NMSE per weight type and shape), the hf-tiny logits/greedy tests, and
# the llama-3.1-8b-shaped benchmarks (ours and llama.cpp's llama-bench on the same files).
#
#   packaging/gpu/vulkan-run.sh BUNDLE [LLAMACPP_DIR]
#     BUNDLE        packaging/gpu/bundle.sh's output, unpacked (bin/, lib/, fixtures/, env.sh);
#                   needs tandem-cli, libtandem-backend-vulkan.so, test-vulkan, test-backend-ops
#     LLAMACPP_DIR  llama-bench and its .so files built with -DGGML_VULKAN=ON
#                   (default .gpu/llamacpp-vulkan, or LLAMACPP_DIR.tar.xz unpacked; skipped
#                   when absent)
# Environment: VK_RUN_LIKE (synth shape, default llama-3.1-8b), VK_RUN_TYPES (default "q4_0 q8_0 q4_k_m"), VK_RUN_TMP (default /tmp/vk-run),
# VK_RUN_SKIP_TESTS=1 for benchmarks only, VK_RUN_PROFILE=0 to skip the per-op GPU time table
# (first type only), VK_RUN_SWEEP=0 to skip the decode switch sweep (first type, tg64).
# q4_k_m: synth writes f16, `tandem-cli quantize --type q4_k_m` makes llama.cpp's mix from it.
# Everything goes to stdout as markdown; the whole run stays under ~8 minutes on an H100.
set -uo pipefail
if [ $# -lt 1 ] || [ ! -x "$1/env.sh" ]; then
  echo "usage: $0 BUNDLE [LLAMACPP_DIR]   (BUNDLE has env.sh, bin/, lib/)" >&2
  exit 2
fi
B="$(cd "$1" && pwd)"
L="${2:-.gpu/llamacpp-vulkan}"
TMP="${VK_RUN_TMP:-/tmp/vk-run}"
mkdir -p "$TMP"
if [ ! -d "$L" ] && [ -f "$L.tar.xz" ]; then  # as carried: .gpu/llamacpp-vulkan.tar.xz
  tar -xJf "$L.tar.xz" -C "$TMP" && L="$TMP/$(basename "$L")"
fi
[ -d "$L" ] && L="$(cd "$L" && pwd)"
TYPES="${VK_RUN_TYPES:-q4_0 q8_0 q4_k_m}"
LIKE="${VK_RUN_LIKE:-llama-3.1-8b}"  # another synth shape for a quick local check
mkdir -p "$TMP"
rm -f "$TMP/sweep.txt" "$TMP"/profile-*.txt
run() { "$B/env.sh" "$@"; }
section() { printf '\n## %s\n\n' "$*"; }
t_start=$(date +%s)
status=0

section "Devices"
(command -v vulkaninfo >/dev/null && vulkaninfo --summary 2>/dev/null | grep -E "deviceName|driverName|driverInfo|apiVersion" ) || true
run tandem-cli devices || status=1
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,clocks.max.memory --format=csv

if [ "${VK_RUN_SKIP_TESTS:-0}" != 1 ]; then
  section "Op suite on cpu and vulkan (test-backend-ops: every op vs f64 and the CPU backend)"
  # One '|' row per case, then the worst NMSE per op and backend; gtest's summary follows.
  TANDEM_TEST_BACKENDS=cpu,vulkan timeout 300 "$B/env.sh" test-backend-ops --gtest_brief=1 \
    > "$TMP/test-backend-ops.log" 2>&1
  rc=$?
  sed -n '/^NMSE per op and backend/,$p' "$TMP/test-backend-ops.log" | grep -E '^(NMSE|\|)'
  grep -E '^\[  (PASSED|FAILED|  OK|SKIPPED)|FAILED|Failure|error' "$TMP/test-backend-ops.log" |
    head -60
  echo "test-backend-ops exit $rc"
  [ $rc -eq 0 ] || status=1

  section "Vulkan-only tests (test-vulkan: matvec variants, import, profile, speed paths, models)"
  timeout 240 "$B/env.sh" test-vulkan --gtest_brief=1 > "$TMP/test-vulkan.log" 2>&1
  rc=$?
  grep -E '^\|' "$TMP/test-vulkan.log"
  grep -E '^\[  (PASSED|FAILED|  OK|SKIPPED)|FAILED|Failure|error' "$TMP/test-vulkan.log" | head -60
  echo "test-vulkan exit $rc"
  [ $rc -eq 0 ] || status=1
fi

section "Benchmarks: synth $LIKE, pp512 / tg128"
# "pp512 f32 tiles": the prefill with cooperative matrices off (TANDEM_VK_COOPMAT=0), the
# kernel devices without them run.
printf '\n| type | GiB | ours pp512 tok/s | ours pp512 f32 tiles | ours tg128 tok/s | ours GB/s | copy GB/s | GB/s / copy | llama.cpp pp512 | llama.cpp tg128 | pp ours/llama.cpp | tg ours/llama.cpp |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|\n'
llama_ts() {  # llama_ts CSV COLUMN: avg_ts of the first row whose COLUMN is > 0
  python3 -c 'import csv,sys
for r in csv.DictReader(open(sys.argv[1])):
    if int(r[sys.argv[2]]) > 0: print("%.1f" % float(r["avg_ts"])); break' "$1" "$2" 2>/dev/null
}
json_num() { sed -n "s/.*\"$1\": *\([-0-9.e+]*\).*/\1/p" "$2" | head -1; }
for q in $TYPES; do
  f="$TMP/$LIKE-$q.gguf"
  if [ ! -s "$f" ]; then
    if [ "$q" = q4_k_m ]; then
      # llama.cpp's Q4_K_M mix (q4_k, q6_k for attn_v/ffn_down/output) quantized from f16;
      # plain q4_k stands for it when that fails or takes too long.
      if ! { run tandem-cli synth --like "$LIKE" --type f16 -o "$TMP/$LIKE-f16.gguf" &&
             timeout 200 "$B/env.sh" tandem-cli quantize "$TMP/$LIKE-f16.gguf" "$f" --type q4_k_m; } \
           > "$TMP/synth-$q.log" 2>&1; then
        echo "(q4_k_m: quantize failed, plain q4_k instead: $(tail -1 "$TMP/synth-$q.log"))" >&2
        rm -f "$f"
        run tandem-cli synth --like "$LIKE" --type q4_k -o "$f" >> "$TMP/synth-$q.log" 2>&1
      fi
      rm -f "$TMP/$LIKE-f16.gguf"
    else
      run tandem-cli synth --like "$LIKE" --type "$q" -o "$f" > "$TMP/synth-$q.log" 2>&1
    fi
    [ -s "$f" ] || { echo "| $q | synth failed: $(tail -1 "$TMP/synth-$q.log") |"; status=1; continue; }
  fi
  gib=$(awk -v b="$(stat -c %s "$f")" 'BEGIN{printf "%.2f", b/1073741824}')
  timeout 150 "$B/env.sh" tandem-cli bench -m "$f" --backend vulkan --ctx 1024 -p 512 -n 128 --json \
    > "$TMP/bench-$q.json" 2> "$TMP/bench-$q.err"
  TANDEM_VK_COOPMAT=0 timeout 100 "$B/env.sh" tandem-cli bench -m "$f" --backend vulkan --ctx 1024 \
    -p 512 -n 0 --json > "$TMP/bench-$q-f32tiles.json" 2>/dev/null
  pp_f32=$(json_num prefill_tok_s "$TMP/bench-$q-f32tiles.json")
  pp=$(json_num prefill_tok_s "$TMP/bench-$q.json"); tg=$(json_num decode_tok_s "$TMP/bench-$q.json")
  gbs=$(json_num decode_gb_s "$TMP/bench-$q.json"); cbw=$(json_num copy_gb_s "$TMP/bench-$q.json")
  [ -n "$tg" ] || { status=1; tg=ERR; tail -3 "$TMP/bench-$q.err" | sed 's/^/    /' >&2; }
  ratio=$(awk -v a="${gbs:-0}" -v c="${cbw:-0}" 'BEGIN{ if (c > 0) printf "%.2f", a/c; else print "-" }')
  lpp=-; ltg=-
  if [ -x "$L/llama-bench" ]; then
    LD_LIBRARY_PATH="$L:$B/lib:${LD_LIBRARY_PATH:-}" timeout 150 "$L/llama-bench" -m "$f" -ngl 99 \
      -p 512 -n 128 -r 2 -o csv > "$TMP/llama-$q.csv" 2> "$TMP/llama-$q.err"
    # csv columns: ... n_prompt,n_gen,...,avg_ts,stddev_ts
    # gpu_info holds a quoted comma ("NVIDIA H200, NVIDIA H200"): parse the CSV properly.
    lpp=$(llama_ts "$TMP/llama-$q.csv" n_prompt)
    ltg=$(llama_ts "$TMP/llama-$q.csv" n_gen)
    [ -n "$ltg" ] || { ltg=ERR; tail -3 "$TMP/llama-$q.err" | sed 's/^/    /' >&2; }
  fi
  rel=$(awk -v a="$tg" -v b="$ltg" 'BEGIN{ if (b+0 > 0 && a+0 > 0) printf "%.2f", a/b; else print "-" }')
  prel=$(awk -v a="$pp" -v b="$lpp" 'BEGIN{ if (b+0 > 0 && a+0 > 0) printf "%.2f", a/b; else print "-" }')
  printf '| %s | %s | %.0f | %.0f | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s |\n' "$q" "$gib" "${pp:-0}" \
    "${pp_f32:-0}" "${tg//ERR/0}" "${gbs:-0}" "${cbw:-0}" "$ratio" "$lpp" "$ltg" "$prel" "$rel"
  if [ "${VK_RUN_PROFILE:-1}" = 1 ] && [ "$q" = "${TYPES%% *}" ]; then
    TANDEM_VK_PROFILE=1 timeout 120 "$B/env.sh" tandem-cli bench -m "$f" --backend vulkan --ctx 1024 \
      -p 512 -n 32 > /dev/null 2> "$TMP/profile-$q.txt"
  fi
  if [ "${VK_RUN_SWEEP:-1}" = 1 ] && [ "$q" = "${TYPES%% *}" ]; then
    # decode speed with one switch each: the f32-activation matvec instead of the int8-dot one
    # (TANDEM_VK_Q8=0), the int8-dot matvec's rows per 128-invocation workgroup (default 2) and
    # its invocations sharing each item's activations over the rows off (TANDEM_VK_Q8_SHARE=0),
    # q/k/v's matvec roping and storing its rows itself off (TANDEM_VK_QKV_ROPE=0), the norms
    # folded into the matvecs around them off (TANDEM_VK_NORM_FUSE=0), cached
    # command buffers off (re-recorded every step), split-K attention off (one workgroup per
    # head); TANDEM_VK_NONE=0 is the default itself. tg64 after pp512.
    for sw in TANDEM_VK_NONE=0 TANDEM_VK_Q8=0 TANDEM_VK_Q8_ROWS=1 TANDEM_VK_Q8_ROWS=4 \
              TANDEM_VK_Q8_SHARE=0 TANDEM_VK_QKV_ROPE=0 TANDEM_VK_NORM_FUSE=0 TANDEM_VK_CACHE=0 \
              TANDEM_VK_SPLITK=0; do
      env "$sw" timeout 60 "$B/env.sh" tandem-cli bench -m "$f" --backend vulkan \
        --ctx 1024 -p 512 -n 64 --json > "$TMP/sweep-$sw.json" 2>/dev/null
      echo "$sw $(json_num decode_tok_s "$TMP/sweep-$sw.json") $(json_num decode_gb_s "$TMP/sweep-$sw.json")" >> "$TMP/sweep.txt"
    done
  fi
  [ $(( $(date +%s) - t_start )) -gt 420 ] && { echo "(stopping: time budget)"; break; }
done
if [ -s "$TMP/sweep.txt" ]; then
  section "Decode with one switch (${TYPES%% *}, tg64 after pp512; TANDEM_VK_NONE=0 is the default)"
  printf '| switch | tok/s | GB/s |\n|---|---|---|\n'
  awk '{printf "| %s | %.1f | %.1f |\n", $1, $2, $3}' "$TMP/sweep.txt"
fi
for p in "$TMP"/profile-*.txt; do
  [ -s "$p" ] || continue
  section "GPU time per op: $(basename "$p" .txt) (pp512 + tg32, each node after a barrier)"
  grep -E '^\|' "$p"
done
for q in $TYPES; do
  [ -s "$TMP/bench-$q.err" ] && { section "bench $q stderr (log lines)"; head -20 "$TMP/bench-$q.err"; }
done
echo
echo "total $(( $(date +%s) - t_start )) s, status $status"
exit $status

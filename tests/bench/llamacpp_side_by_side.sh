#!/usr/bin/env bash
# Tandem vs llama.cpp on the CPU, same GGUF, same threads, same moment: pp512 and tg128 tokens/s
# of both and their ratio, per weight type, plus decode bytes/token and GB/s.
#
#   tests/bench/llamacpp_side_by_side.sh [--cli build-cpu/bin/tandem-cli]
#       [--llama-bin /tmp/llcpp/build-cpu/bin] [--types "q4_0 q8_0 q4_k"] [--like llama-3.2-1b]
#       [--threads 2] [--reps 3] [--pp 512] [--tg 128] [--dir /tmp/tandem-side-by-side]
#       [--omp-passive]
#
# The models come from `tandem-cli synth --like ... --type ...` (random weights in the real
# shapes; llama.cpp loads them with placeholder tokens). The two tools run alternately, each test
# --reps times; the table shows the mean tokens/s of each and ours / llama.cpp. llama.cpp's
# threads are OpenMP threads (its default build): on a loaded machine their spin-waiting makes it
# much slower (tg 0.1 tok/s at a load average of 20, against 3.9 with OMP_WAIT_POLICY=passive),
# so the load average is printed next to the numbers. Run it when the machine is quiet and read
# the ratios, not the absolute figures; on a loaded machine --omp-passive (OMP_WAIT_POLICY=passive
# for llama.cpp) gives it its fair numbers.
set -euo pipefail

cli=build-cpu/bin/tandem-cli
llama_bin=/tmp/llcpp/build-cpu/bin
types="q4_0 q8_0 q4_k"
like=llama-3.2-1b
threads=2
reps=3
pp=512
tg=128
dir=/tmp/tandem-side-by-side
omp=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --cli) cli=$2; shift 2 ;;
    --llama-bin) llama_bin=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --like) like=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --pp) pp=$2; shift 2 ;;
    --tg) tg=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --omp-passive) omp=passive; shift ;;
    *) echo "unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ -x $cli ]] || { echo "no tandem-cli at $cli (--cli)" >&2; exit 2; }
[[ -x $llama_bin/llama-bench ]] || { echo "no llama-bench in $llama_bin (--llama-bin)" >&2; exit 2; }
mkdir -p "$dir"

# Mean tokens/s of one llama-bench test (-p N -n 0 or -p 0 -n N) over $reps repetitions.
llama_ts() {  # model, n_prompt, n_gen
  env ${omp:+OMP_WAIT_POLICY=$omp} "$llama_bin/llama-bench" -m "$1" -p "$2" -n "$3" -t "$threads" -r "$reps" -o json 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(r[0]["avg_ts"])'
}
# "mean bytes": mean of $reps runs of tandem-cli bench (field prefill_tok_s or decode_tok_s)
# and the decode weight bytes per token.
tandem_ts() {  # model, n_prompt, n_gen, field
  local vals=() out
  for ((i = 0; i < reps; i++)); do
    out=$("$cli" bench -m "$1" -p "$2" -n "$3" --threads "$threads" --json)
    vals+=("$(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(j[sys.argv[2]], j["decode_bytes_per_token"])' "$out" "$4")")
  done
  python3 -c 'import sys; v=[x.split() for x in sys.argv[1:]]; print(sum(float(a) for a, _ in v) / len(v), v[-1][1])' "${vals[@]}"
}

echo "# $(date -u +%FT%TZ)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# like=$like threads=$threads reps=$reps  tandem: $cli  llama.cpp: $llama_bin" \
  "OMP_WAIT_POLICY=${omp:-${OMP_WAIT_POLICY:-(default)}}"
rows=()
for t in $types; do
  f=$dir/$like-$t.gguf
  [[ -s $f ]] || "$cli" synth --like "$like" --type "$t" -o "$f" >/dev/null
  load0=$(cut -d' ' -f1 /proc/loadavg)
  l_pp=$(llama_ts "$f" "$pp" 0)
  read -r o_pp _ < <(tandem_ts "$f" "$pp" 0 prefill_tok_s)
  l_tg=$(llama_ts "$f" 0 "$tg")
  read -r o_tg bytes < <(tandem_ts "$f" 0 "$tg" decode_tok_s)
  load1=$(cut -d' ' -f1 /proc/loadavg)
  rows+=("$(python3 - "$t" "$o_pp" "$l_pp" "$o_tg" "$l_tg" "$bytes" "$load0" "$load1" "$pp" "$tg" <<'EOF'
import sys
t, o_pp, l_pp, o_tg, l_tg, b, l0, l1, pp, tg = sys.argv[1:]
o_pp, l_pp, o_tg, l_tg, b = map(float, (o_pp, l_pp, o_tg, l_tg, b))
print(f"| {t} | {o_pp:.1f} | {l_pp:.1f} | {o_pp / l_pp:.2f} | {o_tg:.2f} | {l_tg:.2f} | "
      f"{o_tg / l_tg:.2f} | {b / 1e6:.0f} | {o_tg * b / 1e9:.1f} | {l_tg * b / 1e9:.1f} | {l0}-{l1} |")
EOF
)")
  echo "${rows[-1]}"
done
echo
echo "| type | pp$pp tandem | pp$pp llama.cpp | pp ratio | tg$tg tandem | tg$tg llama.cpp | tg ratio | MB/token | tandem GB/s | llama.cpp GB/s | load avg |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"

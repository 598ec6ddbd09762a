#!/bin/bash
# Transport round trip and all-reduce latency between separate processes, over loopback TCP and
# over a veth pair between two network namespaces (a real kernel network path with its own
# addresses, routes and devices; no wire in between). Needs root for `ip netns`; the namespaces
# and links are removed on every exit.
#
#   sudo tests/bench/cluster_netns.sh build-rdma [--quick]
#
# Prints the markdown tables of bench-cluster-net for: 2 processes over loopback, 2 processes
# over a veth pair, 3 and 4 processes over loopback, and 3 and 4 processes in their own
# namespaces joined by veths to a bridge (in a namespace of its own).
set -euo pipefail
build=${1:?usage: cluster_netns.sh BUILD_DIR [--quick]}
shift
bin="$build/bin/bench-cluster-net"
[[ -x $bin ]] || { echo "missing $bin (configure with -DTANDEM_BUILD_BENCH=ON)" >&2; exit 1; }

ns_a=tandem-bench-a
ns_b=tandem-bench-b
ns_br=tandem-bench-br
ns_n=(tandem-bench-0 tandem-bench-1 tandem-bench-2 tandem-bench-3)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for ns in "$ns_a" "$ns_b" "$ns_br" "${ns_n[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM
cleanup

# Starts ranks 0..n-1 in that order (each connects to the lower ones, which must already listen),
# each in its namespace; rank 0 prints.
#   run_group "label" "addr0,addr1,..." ns0 ns1 ...   ("-" = the current namespace)
run_group() {
    local label=$1 addrs=$2
    shift 2
    local namespaces=("$@") r
    echo
    echo "### $label"
    pids=()
    for ((r = 0; r < ${#namespaces[@]}; r++)); do
        if [[ ${namespaces[r]} == - ]]; then
            "$bin" --rank "$r" --addresses "$addrs" "${bench_args[@]}" &
        else
            ip netns exec "${namespaces[r]}" "$bin" --rank "$r" --addresses "$addrs" \
                "${bench_args[@]}" &
        fi
        pids+=($!)
        sleep 0.3
    done
    for p in "${pids[@]}"; do wait "$p"; done
    pids=()
}

bench_args=("$@")

ip netns add "$ns_a"
ip netns add "$ns_b"
ip link add tdm-veth-a netns "$ns_a" type veth peer name tdm-veth-b netns "$ns_b"
ip -n "$ns_a" addr add 10.199.0.1/24 dev tdm-veth-a
ip -n "$ns_b" addr add 10.199.0.2/24 dev tdm-veth-b
for ns in "$ns_a" "$ns_b"; do
    ip -n "$ns" link set lo up
done
ip -n "$ns_a" link set tdm-veth-a up
ip -n "$ns_b" link set tdm-veth-b up

# Rank i in tandem-bench-i at 10.199.1.(i+1), its veth's peer end on a bridge in tandem-bench-br.
ip netns add "$ns_br"
ip -n "$ns_br" link add tdm-br type bridge
ip -n "$ns_br" link set tdm-br up
for i in 0 1 2 3; do
    ns=${ns_n[i]}
    ip netns add "$ns"
    ip link add "tdm-v$i" netns "$ns" type veth peer name "tdm-p$i" netns "$ns_br"
    ip -n "$ns" addr add "10.199.1.$((i + 1))/24" dev "tdm-v$i"
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "tdm-v$i" up
    ip -n "$ns_br" link set "tdm-p$i" master tdm-br
    ip -n "$ns_br" link set "tdm-p$i" up
done

run_group "2 processes, loopback TCP" 127.0.0.1:47611,127.0.0.1:47612 - -
run_group "2 processes, veth between network namespaces" 10.199.0.1:47611,10.199.0.2:47612 \
    "$ns_a" "$ns_b"
run_group "3 processes, loopback TCP" 127.0.0.1:47621,127.0.0.1:47622,127.0.0.1:47623 - - -
run_group "4 processes, loopback TCP" \
    127.0.0.1:47631,127.0.0.1:47632,127.0.0.1:47633,127.0.0.1:47634 - - - -
run_group "3 processes, veth + bridge between network namespaces" \
    10.199.1.1:47641,10.199.1.2:47642,10.199.1.3:47643 "${ns_n[@]:0:3}"
run_group "4 processes, veth + bridge between network namespaces" \
    10.199.1.1:47651,10.199.1.2:47652,10.199.1.3:47653,10.199.1.4:47654 "${ns_n[@]}"

#!/bin/bash
# On a host with an RDMA (verbs) device: runs the hardware RDMA test and bench-cluster-net
# between two processes over the device's IP, so the negotiation picks RDMA (RoCE: the GID of
# that address; InfiniBand: any address). On RoCE it then measures TCP over 127.0.0.1 (no RoCE
# GID there, so the negotiation keeps TCP) for a side-by-side comparison in the same run.
#
#   tests/bench/cluster_rdma_device.sh BUILD_DIR [--quick]
set -euo pipefail
build=${1:?usage: cluster_rdma_device.sh BUILD_DIR [--quick]}
shift
echo "== devices"
ls /sys/class/infiniband 2>/dev/null || echo "(no /sys/class/infiniband)"
command -v ibv_devinfo >/dev/null && ibv_devinfo 2>&1 | grep -E "hca_id|state|link_layer|active_mtu" || true
echo "memlock: $(ulimit -l)"

echo "== RdmaVerbs test"
"$build/bin/test-cluster" --gtest_filter='RdmaVerbs.*:RdmaRing.*' 2>&1 | tail -15

# The IPv4 address of the first netdev behind an RDMA device (RoCE), else 127.0.0.1 (IB).
ip4=127.0.0.1
for dev in /sys/class/infiniband/*/device/net/*; do
    [[ -e $dev ]] || continue
    a=$(ip -4 -o addr show dev "$(basename "$dev")" 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1)
    if [[ -n $a ]]; then ip4=$a; break; fi
done
echo "== bench over $ip4 (RDMA if negotiated; the table header names the transport)"
"$build/bin/bench-cluster-net" --rank 0 --addresses "$ip4:47711,$ip4:47712" "$@" &
p0=$!
sleep 0.5
"$build/bin/bench-cluster-net" --rank 1 --addresses "$ip4:47711,$ip4:47712" "$@"
wait $p0
if [[ $ip4 != 127.0.0.1 ]]; then
    echo "== same over loopback TCP"
    "$build/bin/bench-cluster-net" --rank 0 --addresses 127.0.0.1:47721,127.0.0.1:47722 "$@" &
    p0=$!
    sleep 0.5
    "$build/bin/bench-cluster-net" --rank 1 --addresses 127.0.0.1:47721,127.0.0.1:47722 "$@"
    wait $p0
fi

// bench-cluster-net: the transport's fixed cost (round trip of one message) and all-reduce
// latency per message size, direct exchange vs ring, fp32 vs bf16 wire, between real ranks.
//
//   bench-cluster-net --rank R --addresses h0:p0,h1:p1[,...]   one rank per process (rank 0
//                                                              prints);
//                                                              tests/bench/cluster_netns.sh runs
//                                                              these over loopback and veth
//   bench-cluster-net --local N                                N ranks as threads, 127.0.0.1
//   bench-cluster-net --memory                                 round trip of the RDMA ring
//                                                              protocol over the in-memory link
//                                                              next to loopback TCP (simulation:
//                                                              the protocol's CPU cost, no NIC)
// Times are medians of per-operation wall time on rank 0.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tandem/net/collective_group.h"
#include "tandem/net/rdma_ring.h"
#include "tandem/net/transport_mesh.h"

namespace {

using namespace tandem::net;
using Sec = std::chrono::duration<double>;

double median_us(std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2] * 1e6;
}

// Median round trip (us) of a `bytes` message sent by the initiator and echoed back.
double round_trip_us(Transport& t, bool initiator, size_t bytes, int iters) {
    std::vector<uint8_t> msg(bytes, 1), got;
    std::vector<double> times;
    const Millis timeout(30000);
    for (int i = 0; i < iters + 20; ++i) {
        const auto t0 = Clock::now();
        if (initiator) {
            t.send(msg, timeout);
            t.recv(got, timeout);
        } else {
            t.recv(got, timeout);
            t.send(got, timeout);
        }
        if (i >= 20) times.push_back(Sec(Clock::now() - t0).count());
    }
    return median_us(times);
}

const std::vector<size_t> kRttSizes = {8, 256, 4096, 65536};

void print_rtt_header(const char* what) {
    std::printf("\n%s\n\n| message | round trip | one-way (RTT/2) |\n|---|---|---|\n", what);
}

std::string size_text(size_t b) {
    if (b >= (1u << 20)) return std::to_string(b >> 20) + " MiB";
    if (b >= 1024) return std::to_string(b >> 10) + " KiB";
    return std::to_string(b) + " B";
}

void run_rank(int rank, std::vector<std::unique_ptr<Transport>> peers, bool quick) {
    const int R = static_cast<int>(peers.size());
    const std::string link = peers[rank == 0 ? 1 : 0]->describe();
    if (rank <= 1) {
        Transport& t = *peers[static_cast<size_t>(1 - rank)];
        if (rank == 0)
            print_rtt_header(("Transport round trip, rank 0 <-> 1 over " + link).c_str());
        for (size_t b : kRttSizes) {
            const double us = round_trip_us(t, rank == 0, b, quick ? 200 : 2000);
            if (rank == 0)
                std::printf("| %s | %.1f us | %.1f us |\n", size_text(b).c_str(), us, us / 2);
        }
    }
    CollectiveOptions base;
    base.timeout = Millis(60000);  // ranks 2+ wait here while 0 and 1 measure round trips
    TransportCollective c(rank, std::move(peers), base);
    std::vector<size_t> sizes = {256, 1024, 4096, 16384, 65536, 262144, 1 << 20, 4 << 20};
    if (quick) sizes.resize(5);
    struct Col {
        WireType wire;
        AllReduceAlgo algo;
    };
    const Col cols[] = {{WireType::F32, AllReduceAlgo::Direct},
                        {WireType::F32, AllReduceAlgo::Ring},
                        {WireType::BF16, AllReduceAlgo::Direct},
                        {WireType::BF16, AllReduceAlgo::Ring}};
    std::vector<std::vector<double>> table(sizes.size());
    for (const Col& col : cols) {
        CollectiveOptions o = base;
        o.wire = col.wire;
        o.all_reduce = col.algo;
        c.set_options(o);
        for (size_t si = 0; si < sizes.size(); ++si) {
            const size_t n = sizes[si] / 4;  // fp32 elements; the bf16 wire carries half the bytes
            std::vector<float> v(n, 1.0f);
            const int iters = static_cast<int>(
                std::clamp<size_t>((quick ? 2u << 20 : 16u << 20) / sizes[si], 10, 1000));
            std::vector<double> times;
            for (int i = 0; i < iters + 5; ++i) {
                const auto t0 = Clock::now();
                c.all_reduce_sum(v.data(), n);
                if (i >= 5) times.push_back(Sec(Clock::now() - t0).count());
                std::fill(v.begin(), v.end(), 1.0f);
            }
            table[si].push_back(median_us(times));
        }
    }
    if (rank != 0) return;
    std::printf("\nAll-reduce, %d ranks over %s (median per all-reduce; size = fp32 payload)\n\n",
                R, link.c_str());
    std::printf(
        "| size | fp32 direct | fp32 ring | bf16 direct | bf16 ring | ring/direct fp32 |\n");
    std::printf("|---|---|---|---|---|---|\n");
    for (size_t si = 0; si < sizes.size(); ++si) {
        const auto& r = table[si];
        std::printf("| %s | %.1f us | %.1f us | %.1f us | %.1f us | %.2f |\n",
                    size_text(sizes[si]).c_str(), r[0], r[1], r[2], r[3], r[1] / r[0]);
    }
    std::fflush(stdout);
}

// Round trip of the RDMA ring protocol over the in-memory link next to loopback TCP.
void run_memory(bool quick) {
    MemoryLinkOptions mo;
    mo.geometry = make_ring_geometry(1 << 20, 1024);
    mo.max_inline = 256;
    mo.send_queue_depth = 128;
    struct Case {
        std::string what;
        std::unique_ptr<Transport> a, b;
    };
    std::vector<Case> cases;
    // Busy-polling pays off only with a core per waiting thread; on a loaded machine yielding at
    // once lets the peer thread run.
    for (int spin_us : {200, 0}) {
        auto [la, lb] = make_memory_link_pair(mo);
        RingOptions ro;
        ro.busy_poll = std::chrono::microseconds(spin_us);
        cases.push_back(
            {"RDMA ring protocol over the in-memory link (simulation, no NIC), busy-poll " +
                 std::to_string(spin_us) + " us",
             make_ring_transport(std::move(la), ro), make_ring_transport(std::move(lb), ro)});
    }
    auto [ta, tb] = tcp_loopback_pair();
    cases.push_back({"loopback TCP", std::move(ta), std::move(tb)});
    for (auto& c : cases) {
        print_rtt_header(c.what.c_str());
        for (size_t b : kRttSizes) {
            std::thread echo([&] { round_trip_us(*c.b, false, b, quick ? 200 : 2000); });
            const double us = round_trip_us(*c.a, true, b, quick ? 200 : 2000);
            echo.join();
            std::printf("| %s | %.1f us | %.1f us |\n", size_text(b).c_str(), us, us / 2);
        }
    }
}

std::vector<HostPort> parse_addresses(const std::string& list) {
    std::vector<HostPort> out;
    size_t at = 0;
    while (at <= list.size()) {
        const size_t comma = std::min(list.find(',', at), list.size());
        out.push_back(parse_host_port(list.substr(at, comma - at), 0));
        at = comma + 1;
    }
    return out;
}

int usage() {
    std::fprintf(stderr,
                 "usage: bench-cluster-net --rank R --addresses h:p,h:p[,...] [--quick]\n"
                 "       bench-cluster-net --local N [--quick]\n"
                 "       bench-cluster-net --memory [--quick]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    int rank = -1, local = 0;
    bool memory = false, quick = false;
    std::string addresses;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--rank" && i + 1 < argc)
            rank = std::atoi(argv[++i]);
        else if (a == "--addresses" && i + 1 < argc)
            addresses = argv[++i];
        else if (a == "--local" && i + 1 < argc)
            local = std::atoi(argv[++i]);
        else if (a == "--memory")
            memory = true;
        else if (a == "--quick")
            quick = true;
        else
            return usage();
    }
    try {
        if (memory) {
            run_memory(quick);
            return 0;
        }
        MeshOptions mo;
        mo.secret = "bench";
        mo.timeout = Millis(20000);
        if (local >= 2 && local <= 4) {
            std::vector<std::unique_ptr<Listener>> listeners;
            std::vector<HostPort> addrs;
            for (int r = 0; r < local; ++r) {
                listeners.push_back(std::make_unique<Listener>(0, "127.0.0.1"));
                addrs.push_back({"127.0.0.1", listeners.back()->port()});
            }
            std::vector<std::thread> ranks;
            for (int r = 0; r < local; ++r)
                ranks.emplace_back(
                    [&, r] { run_rank(r, connect_mesh(r, addrs, *listeners[r], mo), quick); });
            for (auto& t : ranks) t.join();
            return 0;
        }
        if (rank < 0 || addresses.empty()) return usage();
        const auto addrs = parse_addresses(addresses);
        if (rank >= static_cast<int>(addrs.size()) || addrs.size() < 2) return usage();
        Listener listener(addrs[rank].port, addrs[rank].host);
        run_rank(rank, connect_mesh(rank, addrs, listener, mo), quick);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench-cluster-net: %s\n", e.what());
        return 1;
    }
    return 0;
}

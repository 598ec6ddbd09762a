// All-reduce latency of a 2-rank group over loopback TCP, 256 B - 64 KiB, fp32 and bf16 on the
// wire, optionally with a simulated one-way delay per message (args: bytes, wire, delay_us).
// The peer rank runs in a thread of this process and all-reduces in lock-step.
#include <benchmark/benchmark.h>

#include <atomic>
#include <thread>

#include "tandem/net/collective_group.h"

namespace {

using namespace tandem::net;

std::vector<std::unique_ptr<Transport>> peers_of(int rank, std::unique_ptr<Transport> t) {
    std::vector<std::unique_ptr<Transport>> p(2);
    p[static_cast<size_t>(1 - rank)] = std::move(t);
    return p;
}

void BM_AllReduce(benchmark::State& state) {
    const size_t n = static_cast<size_t>(state.range(0)) / 4;  // floats
    CollectiveOptions o;
    o.wire = state.range(1) ? WireType::BF16 : WireType::F32;
    const std::chrono::microseconds delay(state.range(2));
    auto [a, b] = tcp_loopback_pair();
    if (delay.count()) {
        a = make_delay_transport(std::move(a), delay);
        b = make_delay_transport(std::move(b), delay);
    }
    TransportCollective c0(0, peers_of(0, std::move(a)), o), c1(1, peers_of(1, std::move(b)), o);
    std::atomic<bool> stop{false};
    std::atomic<int64_t> rounds{0};
    std::thread peer([&] {
        std::vector<float> v(n, 1.0f);
        while (!stop.load()) {
            if (rounds.load() <= 0) continue;
            c1.all_reduce_sum(v.data(), n);
            rounds.fetch_sub(1);
        }
    });
    std::vector<float> v(n, 1.0f);
    for (auto _ : state) {
        rounds.fetch_add(1);
        c0.all_reduce_sum(v.data(), n);
    }
    while (rounds.load() > 0) {
    }
    stop = true;
    peer.join();
    state.SetLabel(delay.count() ? "simulated delay" : "loopback");
}

void sizes(benchmark::internal::Benchmark* b) {
    for (int64_t bytes : {256, 1024, 4096, 16384, 65536})
        for (int64_t bf16 : {0, 1}) b->Args({bytes, bf16, 0});
    for (int64_t d : {5, 50, 200}) b->Args({16384, 0, d});
}

BENCHMARK(BM_AllReduce)->Apply(sizes)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

// Cluster decode benchmark (prints numbers and ratios; not a test):
//  1. decode tok/s of one process with 1 thread vs this process (rank 0, 1 thread) + one
//     tandem-node worker process (1 thread) over loopback TCP, shares 1:1;
//  2. the same with 5, 50 and 200 us of SIMULATED one-way delay per collective message
//     (make_delay_transport on both ranks), against the model
//        time/token = compute/N + (2 x layers + 1) x all-reduce latency
//     (two all-reduces per layer plus the logits all-gather);
//  3. the model's prediction for 2 and 4 Strix-Halo-class nodes (256 GB/s) on a 70B Q4_0 model
//     over TCP (~70 us per all-reduce) and RDMA (~5 us);
//  4. all-reduce latency of a plain vs a paired, encrypted (SecureChannel) loopback link,
//     256 B - 64 KiB.
//
// bench-cluster-decode [--model FILE] [--tokens N] [--skip-decode]
// Without --model, synthesises llama-3.2-1b Q8_0 into $TMPDIR/tandem-bench/ (once).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tandem/backend/backend.h"
#include "tandem/engine/engine.h"
#include "tandem/engine/synth.h"
#include "tandem/net/channel.h"
#include "tandem/net/cluster_coordinator.h"
#include "tandem/net/collective_group.h"
#include "tandem/net/identity.h"
#include "tandem/net/transport.h"

namespace fs = std::filesystem;
using namespace tandem;
using clk = std::chrono::steady_clock;

namespace {

double seconds_since(clk::time_point t0) {
    return std::chrono::duration<double>(clk::now() - t0).count();
}

// Decodes a short prompt, then `n` tokens one at a time; returns decode seconds per token.
double decode_seconds_per_token(engine::Engine& e, int n) {
    std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8};
    std::vector<float> logits;
    e.clear();
    e.decode(prompt, logits);
    int32_t next = 9;
    e.decode(std::span(&next, 1), logits);  // warm-up step
    const auto t0 = clk::now();
    for (int i = 0; i < n; ++i) {
        next =
            static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        e.decode(std::span(&next, 1), logits);
    }
    return seconds_since(t0) / n;
}

struct Worker {
    pid_t pid = -1;
    std::string address;
    fs::path log;
    ~Worker() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
    }
};

void start_worker(Worker& w, const fs::path& node_bin, const fs::path& models,
                  const fs::path& tmp) {
    w.log = tmp / "node.log";
    fs::remove(w.log);  // an old log's port must not be read before the child truncates it
    w.pid = ::fork();
    if (w.pid == 0) {
        FILE* f = std::fopen(w.log.c_str(), "w");
        ::dup2(fileno(f), 1);
        ::dup2(fileno(f), 2);
        ::execl(node_bin.c_str(), node_bin.c_str(), "serve", "--static-only", "--cluster-port", "0",
                "--cluster-secret", "bench", "--threads", "1", "--models", models.c_str(),
                "--shard-cache", (tmp / "shards").c_str(), nullptr);
        ::_exit(127);
    }
    for (int i = 0; i < 600; ++i) {
        std::ifstream in(w.log);
        std::string line;
        while (std::getline(in, line))
            if (auto p = line.find("cluster port "); p != std::string::npos) {
                w.address = "127.0.0.1:" + std::to_string(std::stoi(line.substr(p + 13)));
                return;
            }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw Error("tandem-node did not start; see " + w.log.string());
}

// Median microseconds of one 2-rank all-reduce of `bytes` over the transports given.
double allreduce_us(std::unique_ptr<net::Transport> a, std::unique_ptr<net::Transport> b,
                    size_t bytes, int iters) {
    std::vector<std::unique_ptr<net::Transport>> pa(2), pb(2);
    pa[1] = std::move(a);
    pb[0] = std::move(b);
    net::TransportCollective c0(0, std::move(pa)), c1(1, std::move(pb));
    const size_t n = bytes / 4;
    std::thread peer([&] {
        std::vector<float> v(n, 1.0f);
        for (int i = 0; i < iters + 10; ++i) c1.all_reduce_sum(v.data(), n);
    });
    std::vector<float> v(n, 1.0f);
    std::vector<double> t;
    for (int i = 0; i < iters + 10; ++i) {
        const auto t0 = clk::now();
        c0.all_reduce_sum(v.data(), n);
        if (i >= 10) t.push_back(seconds_since(t0) * 1e6);
    }
    peer.join();
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

void encryption_table() {
    std::printf(
        "\n## All-reduce over a plain vs a paired, encrypted loopback link (2 ranks, f32, "
        "median)\n\n| bytes | plain TCP | SecureChannel | cost | ratio |\n|---|---|---|---|---|\n");
    const auto ia = net::Identity::generate(), ib = net::Identity::generate();
    for (size_t bytes : {size_t(256), size_t(1024), size_t(4096), size_t(16384), size_t(65536)}) {
        const int iters = bytes >= 16384 ? 300 : 1000;
        auto [ta, tb] = net::tcp_loopback_pair();
        const double plain = allreduce_us(std::move(ta), std::move(tb), bytes, iters);
        auto [sa, sb] = net::secure_loopback_pair(ia, ib);
        const double secure =
            allreduce_us(net::make_channel_transport(std::move(sa)),
                         net::make_channel_transport(std::move(sb)), bytes, iters);
        std::printf("| %zu | %.1f us | %.1f us | +%.1f us | %.2fx |\n", bytes, plain, secure,
                    secure - plain, secure / plain);
    }
}

// `efficiency`: fraction of the memory bandwidth a decode step reaches (assumed, 0.8).
void strix_halo_prediction(double efficiency) {
    // 70B llama shape: 80 layers, Q4_0 weights ~39.7 GB (4.5 bits per weight).
    const double bytes = 70.6e9 * 4.5 / 8, bw = 256e9 * efficiency;
    const int layers = 80;
    std::printf(
        "\n## Model prediction: 70B Q4_0 (%.1f GB), Strix-Halo-class nodes (256 GB/s, "
        "%.0f%% of it assumed reached)\n\n| nodes | link | all-reduce | ms/token | "
        "tok/s | speedup |\n|---|---|---|---|---|---|\n",
        bytes / 1e9, efficiency * 100);
    const double t1 = bytes / bw;
    std::printf("| 1 | - | - | %.1f | %.1f | 1.00x |\n", t1 * 1e3, 1 / t1);
    for (int n : {2, 4})
        for (auto [name, lat] : {std::pair{"TCP", 70e-6}, std::pair{"RDMA", 5e-6}}) {
            const double t = t1 / n + (2 * layers + 1) * lat;
            std::printf("| %d | %s | %.0f us | %.1f | %.1f | %.2fx |\n", n, name, lat * 1e6,
                        t * 1e3, 1 / t, t1 / t);
        }
}

}  // namespace

int main(int argc, char** argv) {
    fs::path model;
    int tokens = 32;
    bool skip_decode = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--model" && i + 1 < argc)
            model = argv[++i];
        else if (a == "--tokens" && i + 1 < argc)
            tokens = std::stoi(argv[++i]);
        else if (a == "--skip-decode")
            skip_decode = true;
        else {
            std::fprintf(stderr, "usage: %s [--model FILE] [--tokens N] [--skip-decode]\n",
                         argv[0]);
            return 2;
        }
    }
    try {
        const fs::path tmp = fs::temp_directory_path() / "tandem-bench";
        fs::create_directories(tmp);
        if (!skip_decode) {
            if (model.empty()) {
                model = tmp / "llama-3.2-1b-q8_0.gguf";
                if (!fs::exists(model)) {
                    std::fprintf(stderr, "synthesising %s ...\n", model.c_str());
                    engine::write_synthetic_model("llama-3.2-1b", DType::Q8_0, model);
                }
            }
            const fs::path node_bin = fs::canonical("/proc/self/exe").parent_path() / "tandem-node";
            auto whole = engine::load_model(model);
            const int layers = static_cast<int>(whole->hp.n_layer);
            engine::EngineOptions eo;
            eo.n_ctx = 256;
            BackendOptions bo;
            bo.threads = 1;
            engine::Engine single(whole, create_backend("cpu", 0, bo), eo);
            const double t1 = decode_seconds_per_token(single, tokens);
            const double gbs = double(single.decode_weight_bytes()) / t1 / 1e9;

            Worker w;
            start_worker(w, node_bin, model.parent_path(), tmp);
            auto run_cluster = [&](std::chrono::microseconds delay) {
                net::ClusterOptions co;
                co.nodes = {w.address};
                co.secret = "bench";
                co.shares = {1, 1};
                co.threads = 1;
                co.engine = eo;
                co.simulated_delay = delay;
                co.timeout = net::Millis(10000);
                net::ClusterCoordinator c(model, co);
                return decode_seconds_per_token(c.engine(), tokens);
            };
            const double t2 = run_cluster(std::chrono::microseconds(0));
            // All-reduce latency of this model's decode vector over loopback, for the model.
            auto [ta, tb] = net::tcp_loopback_pair();
            const double lat =
                allreduce_us(std::move(ta), std::move(tb), size_t(whole->hp.n_embd) * 4, 500) *
                1e-6;
            const int collectives = 2 * layers + 1;
            std::printf("## Decode, %s, CPU backend, 1 thread per process, loopback TCP\n\n",
                        model.filename().c_str());
            std::printf("| setup | ms/token | tok/s | speedup |\n|---|---|---|---|\n");
            std::printf("| 1 process | %.1f | %.2f | 1.00x |\n", t1 * 1e3, 1 / t1);
            std::printf("| 2 nodes (2 processes) | %.1f | %.2f | %.2fx |\n", t2 * 1e3, 1 / t2,
                        t1 / t2);
            std::printf(
                "\nsingle process reads %.1f GB/s of weights; all-reduce of %lld floats "
                "over loopback: %.1f us; %d collectives per token\n",
                gbs, static_cast<long long>(whole->hp.n_embd), lat * 1e6, collectives);
            std::printf("model at 0 delay: t1/2 + %d x %.1f us = %.1f ms (measured %.1f ms)\n",
                        collectives, lat * 1e6, (t1 / 2 + collectives * lat) * 1e3, t2 * 1e3);

            std::printf(
                "\n## SIMULATED one-way delay per collective message (both ranks)\n\n"
                "| one-way delay | ms/token | tok/s | model ms/token | model error |\n"
                "|---|---|---|---|---|\n");
            for (int d : {5, 50, 200}) {
                const double td = run_cluster(std::chrono::microseconds(d));
                // A 2-rank direct exchange waits for two one-way messages.
                const double model_t = t2 + collectives * 2 * d * 1e-6;
                std::printf("| %d us | %.1f | %.2f | %.1f | %+.0f%% |\n", d, td * 1e3, 1 / td,
                            model_t * 1e3, (td / model_t - 1) * 100);
            }
            strix_halo_prediction(0.8);
        } else {
            strix_halo_prediction(0.8);
        }
        encryption_table();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}

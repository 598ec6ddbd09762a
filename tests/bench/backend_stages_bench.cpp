// What one dependent stage of a step costs on a backend, whatever the kernel does: a decode step
// is ~9 stages per layer (norm, q/k/v, attention, ...), most of them tiny, so this floor times
// the stage count bounds decode speed as much as the bytes do. Through the Backend interface:
//   chain        N Scale nodes, each reading the one before (every node waits for the last)
//   independent  N Scale nodes of one input into N outputs (no node waits for another)
// each over `--floats` values, replayed as the engine replays decode steps (the first run
// records / captures). Per-node cost = (t(N) - t(1)) / (N - 1), so the step's fixed cost (submit,
// fence, copies) drops out; best of --reps.
//   bench-backend-stages [--backend vulkan] [--nodes 512] [--floats 4096] [--reps 20]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tandem/backend/backend.h"
#include "tandem/backend/graph.h"
#include "tandem/common/error.h"

namespace {

struct Options {
    std::string backend = "vulkan";
    int nodes = 512;
    int64_t floats = 4096;
    int reps = 20;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i], v = argv[i + 1];
        if (a == "--backend")
            o.backend = v;
        else if (a == "--nodes")
            o.nodes = std::max(2, std::atoi(v.c_str()));
        else if (a == "--floats")
            o.floats = std::max<int64_t>(4, std::atoll(v.c_str()));
        else if (a == "--reps")
            o.reps = std::max(1, std::atoi(v.c_str()));
        else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            std::exit(2);
        }
    }
    return o;
}

// A step of n Scale nodes over x [floats]: a chain through activations, or n independent
// outputs of x. Returns the best wall time of a replayed step, in microseconds.
double time_step(tandem::Backend& b, int n, bool chain, int64_t floats, int reps) {
    using namespace tandem;
    Graph g;
    StepIO io;
    std::vector<float> x(size_t(floats), 1.0f);
    std::vector<std::vector<float>> outs(size_t(chain ? 1 : n), std::vector<float>(x.size()));
    const TensorId in = g.input(0, "x", DType::F32, floats);
    io.inputs.push_back(x.data());
    TensorId prev = in;
    for (int k = 0; k < n; ++k) {
        const bool last = k == n - 1;
        TensorId out;
        if (!chain) {
            out = g.output(k, "y" + std::to_string(k), floats, 1);
            io.outputs.push_back(outs[size_t(k)].data());
        } else if (last) {
            out = g.output(0, "y", floats, 1);
            io.outputs.push_back(outs[0].data());
        } else {
            out = g.activation("a" + std::to_string(k), floats, 1);
        }
        Node nd;
        nd.op = Op::Scale;
        nd.out = out;
        nd.src[0] = chain ? prev : in;
        nd.f = {1.0f, 0.0f};
        g.add_node(nd);
        prev = out;
    }
    g.validate();
    b.reserve_scratch(g.plan_scratch());
    b.compute(g, io);  // records (Vulkan) / runs eagerly
    b.compute(g, io);  // captures (HIP graphs)
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        b.compute(g, io);
        const double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count();
        best = std::min(best, us);
    }
    if (outs[0][0] != 1.0f) throw tandem::Error("bench-backend-stages: Scale by 1 changed x");
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    try {
        auto b = tandem::create_backend(o.backend, 0, tandem::BackendOptions{});
        std::printf("backend %s (%s), %lld floats per node, best of %d\n\n", o.backend.c_str(),
                    b->device().name.c_str(), static_cast<long long>(o.floats), o.reps);
        std::printf("| graph | step with 1 node us | step with %d nodes us | per node us |\n",
                    o.nodes);
        std::printf("|---|---|---|---|\n");
        for (const bool chain : {true, false}) {
            const double t1 = time_step(*b, 1, chain, o.floats, o.reps);
            const double tn = time_step(*b, o.nodes, chain, o.floats, o.reps);
            std::printf("| %s | %.1f | %.1f | %.2f |\n",
                        chain ? "chain (each node waits)" : "independent", t1, tn,
                        (tn - t1) / double(o.nodes - 1));
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench-backend-stages: %s\n", e.what());
        return 1;
    }
    return 0;
}

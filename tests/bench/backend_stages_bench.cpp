// What one dependent stage of a step costs on a backend, whatever the kernel does: a decode step
// is ~9 stages per layer (norm, q/k/v, attention, ...), most of them tiny, so this floor times
// the stage count bounds decode speed as much as the bytes do. Through the Backend interface: a
// chain of N Scale nodes, each reading the one before (every node waits for the last), replayed
// as the engine replays decode steps (the first runs record / capture). Per-node cost =
// (t(N) - t(1)) / (N - 1), so the step's fixed cost (submit, fence, copies) drops out; best of
// --reps. Two sizes: a norm-sized vector (--floats: the floor) and --big floats (8 MB read +
// written per node at the default: bandwidth shows through).
//   bench-backend-stages [--backend vulkan] [--nodes 512] [--floats 4096] [--big 1048576]
//                        [--reps 20]
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
    int64_t floats = 4096, big = 1 << 20;
    int reps = 20;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; i += 2) {
        const std::string a = argv[i], v = i + 1 < argc ? argv[i + 1] : "";
        if (a == "--backend") {
            o.backend = v;
        } else if (a == "--nodes") {
            o.nodes = std::max(2, std::atoi(v.c_str()));
        } else if (a == "--floats") {
            o.floats = std::max<int64_t>(4, std::atoll(v.c_str()));
        } else if (a == "--big") {
            o.big = std::max<int64_t>(4, std::atoll(v.c_str()));
        } else if (a == "--reps") {
            o.reps = std::max(1, std::atoi(v.c_str()));
        } else {
            std::fprintf(stderr, "bench-backend-stages: unknown option %s\n", a.c_str());
            std::exit(2);
        }
    }
    return o;
}

// A step of n Scale nodes over x [floats], each reading the one before. Returns the best wall
// time of a replayed step, in microseconds.
double time_chain(tandem::Backend& b, int n, int64_t floats, int reps) {
    using namespace tandem;
    Graph g;
    StepIO io;
    std::vector<float> x(size_t(floats), 1.0f), y(x.size());
    TensorId prev = g.input(0, "x", DType::F32, floats);
    io.inputs.push_back(x.data());
    io.outputs.push_back(y.data());
    for (int k = 0; k < n; ++k) {
        Node nd;
        nd.op = Op::Scale;
        nd.out = k == n - 1 ? g.output(0, "y", floats, 1)
                            : g.activation("a" + std::to_string(k), floats, 1);
        nd.src[0] = prev;
        nd.f = {1.0f, 0.0f};
        g.add_node(nd);
        prev = nd.out;
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
    if (y[0] != 1.0f || y.back() != 1.0f)
        throw tandem::Error("a chain of Scale by 1 changed its input");
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    try {
        auto b = tandem::create_backend(o.backend, 0, tandem::BackendOptions{});
        std::printf("backend %s (%s), a chain of %d Scale nodes, best of %d\n\n", o.backend.c_str(),
                    b->device().name.c_str(), o.nodes, o.reps);
        std::printf(
            "| floats per node | step with 1 node us | step with %d nodes us | per node us "
            "| GB/s per node (read + written) |\n",
            o.nodes);
        std::printf("|---|---|---|---|---|\n");
        for (const int64_t n : {o.floats, o.big}) {
            const double t1 = time_chain(*b, 1, n, o.reps);
            const double tn = time_chain(*b, o.nodes, n, o.reps);
            const double per = (tn - t1) / double(o.nodes - 1);
            std::printf("| %lld | %.1f | %.1f | %.2f | %.0f |\n", static_cast<long long>(n), t1, tn,
                        per, 8.0 * double(n) / (per * 1e3));
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench-backend-stages: %s\n", e.what());
        return 1;
    }
    return 0;
}

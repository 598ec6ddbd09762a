// Plan vs measured for real-size models: for each model and backend, the planner's weights, KV
// and scratch against the bytes the backend holds after a prefill and one decode step (the
// Vulkan backend counts its vkAllocateMemory calls), the backend's other allocations against the
// planned runtime overhead, the scratch peak as % of the weights, and how long planning takes.
//
//   bench-planner [--ctx 4096] [--batch 16] [--prefill 16] [--backends cpu,vulkan]
//                 [--synth DIR] [MODEL.gguf ...]
// --synth DIR writes llama-3.2-1b and llama-3.1-8b (q4_0) into DIR when absent and adds them.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tandem/backend/backend.h"
#include "tandem/backend/registry.h"
#include "tandem/common/error.h"
#include "tandem/engine/engine.h"
#include "tandem/engine/synth.h"
#include "tandem/planner/memory_plan.h"

namespace {

using namespace tandem;
using Clock = std::chrono::steady_clock;

struct Args {
    int64_t ctx = 4096, batch = 16, prefill = 16;
    std::vector<std::string> backends{"cpu", "vulkan"};
    std::vector<std::filesystem::path> models;
};

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at <= s.size()) {
        size_t c = s.find(',', at);
        if (c == std::string::npos) c = s.size();
        if (c > at) out.push_back(s.substr(at, c - at));
        at = c + 1;
    }
    return out;
}

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) throw Error(k + " needs a value");
            return argv[++i];
        };
        if (k == "--ctx")
            a.ctx = std::stoll(next());
        else if (k == "--batch")
            a.batch = std::stoll(next());
        else if (k == "--prefill")
            a.prefill = std::stoll(next());
        else if (k == "--backends")
            a.backends = split(next());
        else if (k == "--synth") {
            const std::filesystem::path dir = next();
            std::filesystem::create_directories(dir);
            for (const char* like : {"llama-3.2-1b", "llama-3.1-8b"}) {
                const auto p = dir / (std::string(like) + "-q4_0.gguf");
                if (!std::filesystem::exists(p)) {
                    std::printf("writing %s\n", p.c_str());
                    std::fflush(stdout);
                    engine::write_synthetic_model(like, DType::Q4_0, p);
                }
                a.models.push_back(p);
            }
        } else if (!k.empty() && k[0] == '-')
            throw Error("unknown option " + k);
        else
            a.models.emplace_back(k);
    }
    if (a.models.empty()) throw Error("no model given (MODEL.gguf or --synth DIR)");
    if (a.prefill < 1 || a.prefill + 1 > a.ctx) throw Error("--prefill must be in [1, ctx)");
    return a;
}

double pct(uint64_t plan, uint64_t measured) {
    return measured ? 100.0 * (double(plan) - double(measured)) / double(measured) : 0.0;
}

double mib(uint64_t b) {
    return double(b) / (1024.0 * 1024.0);
}

}  // namespace

int main(int argc, char** argv) try {
    const Args a = parse(argc, argv);
    std::printf("context %lld, batch %lld, prefill %lld tokens + 1 decode step, f16 KV\n\n",
                static_cast<long long>(a.ctx), static_cast<long long>(a.batch),
                static_cast<long long>(a.prefill));
    std::printf(
        "| model | backend | weights plan / measured | KV plan / measured | scratch plan / "
        "measured | other (overhead planned) | scratch / weights | plan time |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    for (const auto& path : a.models) {
        auto whole = engine::load_model(path);
        const planner::PlanOptions po{a.ctx, a.batch, DType::F16, false};
        const auto t0 = Clock::now();
        const planner::DevicePlan p =
            planner::plan_device(*whole, engine::ShardSpec::whole(whole->hp), po, 0);
        const double plan_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        for (const std::string& bname : a.backends) {
            BackendFactory* f = BackendRegistry::instance().factory(bname);
            if (!f || f->devices().empty()) {
                std::printf("| %s | %s | not available | | | | | |\n", path.filename().c_str(),
                            bname.c_str());
                continue;
            }
            engine::Engine eng(whole, create_backend(bname, 0, {}), {a.ctx, DType::F16, a.batch});
            std::vector<int32_t> ids(static_cast<size_t>(a.prefill));
            for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i % 97 + 1);
            std::vector<float> logits;
            eng.decode(ids, logits);
            const int32_t one = 5;
            eng.decode({&one, 1}, logits);
            const Backend& b = eng.backend();
            std::printf(
                "| %s | %s (%s) | %llu / %llu (%+.3f%%) | %llu / %llu (%+.3f%%) | "
                "%llu / %llu (%+.3f%%) | %.1f MiB (%.0f MiB) | %.3f%% | %.1f ms |\n",
                path.filename().c_str(), bname.c_str(), b.device().name.c_str(),
                static_cast<unsigned long long>(p.weight_bytes),
                static_cast<unsigned long long>(b.weight_bytes()),
                pct(p.weight_bytes, b.weight_bytes()), static_cast<unsigned long long>(p.kv_bytes),
                static_cast<unsigned long long>(b.kv_bytes()), pct(p.kv_bytes, b.kv_bytes()),
                static_cast<unsigned long long>(p.scratch_bytes),
                static_cast<unsigned long long>(b.scratch_bytes()),
                pct(p.scratch_bytes, b.scratch_bytes()), mib(b.other_bytes()),
                mib(planner::runtime_overhead(b.device().type)),
                100.0 * double(p.scratch_bytes) / double(p.weight_bytes), plan_ms);
            std::fflush(stdout);
        }
    }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "bench-planner: %s\n", e.what());
    return 1;
}

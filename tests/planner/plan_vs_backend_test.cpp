// The planner's per-device figures against what the backends actually allocate when the engine
// runs the same model, shard, context and batch: the CPU backend's buffers, and the Vulkan
// backend's device memory as counted at vkAllocateMemory (weights, KV, scratch; everything else
// it holds, e.g. step I/O and staging, must fit the planned runtime overhead). Scratch is
// reserved once when the engine is created and must not grow over the steps.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "fixtures.h"
#include "tandem/backend/backend.h"
#include "tandem/backend/registry.h"
#include "tandem/engine/engine.h"
#include "tandem/engine/synth.h"
#include "tandem/hf/convert.h"
#include "tandem/planner/memory_plan.h"
#include "tandem/planner/shard_loader.h"
#include "test_models.h"

namespace tandem::planner {
namespace {

struct Measured {
    uint64_t weights = 0, kv = 0, scratch = 0, other = 0;
    uint64_t scratch_at_start = 0;  // before the first step
    DeviceType device = DeviceType::Cpu;
};

// Empty when `backend` can run step graphs here, else why not (for GTEST_SKIP).
std::string unavailable(const std::string& backend) {
    BackendFactory* f = BackendRegistry::instance().factory(backend);
    if (!f) return backend + " backend not available (plugin not built or no driver)";
    if (f->devices().empty()) return backend + " backend has no device";
    if (!create_backend(backend, 0, BackendOptions{1})->can_compute())
        return backend + " backend cannot compute yet";
    return {};
}

// Runs a prefill of `batch` tokens and one decode step: the step shapes the plan covers.
Measured run_engine(std::shared_ptr<engine::Model> model, const PlanOptions& o,
                    const std::string& backend_name) {
    auto backend = create_backend(backend_name, 0, BackendOptions{1});
    engine::Engine eng(model, std::move(backend), {o.n_ctx, o.kv_type, o.n_batch});
    Measured m;
    m.scratch_at_start = eng.backend().scratch_bytes();
    std::vector<int32_t> ids(static_cast<size_t>(o.n_batch));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i % 7 + 1);
    std::vector<float> logits;
    eng.decode(ids, logits, o.all_logits);
    const int32_t one = 3;
    eng.decode({&one, 1}, logits, o.all_logits);
    const Backend& b = eng.backend();
    m.weights = b.weight_bytes();
    m.kv = b.kv_bytes();
    m.scratch = b.scratch_bytes();
    m.other = b.other_bytes();
    m.device = b.device().type;
    return m;
}

void expect_close(uint64_t plan, uint64_t measured, const char* what, const std::string& label) {
    const double rel = measured ? std::abs(double(plan) - double(measured)) / double(measured) : 0;
    std::printf("  %-34s %-8s plan %12llu  measured %12llu  (%.3f%%)\n", label.c_str(), what,
                static_cast<unsigned long long>(plan), static_cast<unsigned long long>(measured),
                rel * 100);
    EXPECT_GT(measured, 0u) << label << " " << what;
    EXPECT_LE(rel, 0.02) << label << " " << what;
}

void expect_plan(const DevicePlan& plan, const Measured& m, const std::string& l,
                 bool all_logits = false) {
    expect_close(plan.weight_bytes, m.weights, "weights", l);
    expect_close(plan.kv_bytes, m.kv, "kv", l);
    expect_close(plan.scratch_bytes, m.scratch, "scratch", l);
    // All-logits steps are the one shape the engine cannot know of in advance.
    if (!all_logits) {
        EXPECT_EQ(m.scratch_at_start, m.scratch) << l << ": scratch grew after the first step";
    }
    const uint64_t overhead = runtime_overhead(m.device);
    if (m.other) {
        std::printf("  %-34s %-8s %llu bytes (planned overhead %llu)\n", l.c_str(), "other",
                    static_cast<unsigned long long>(m.other),
                    static_cast<unsigned long long>(overhead));
        EXPECT_LE(m.other, overhead) << l;
    }
}

void check_model(const std::filesystem::path& gguf_path, int n_ranks, const PlanOptions& o,
                 const std::string& label, const std::string& backend = "cpu") {
    auto whole = engine::load_model(gguf_path);
    for (int rank = 0; rank < n_ranks; ++rank) {
        const auto shard = n_ranks == 1 ? engine::ShardSpec::whole(whole->hp)
                                        : engine::ShardSpec::even(whole->hp, rank, n_ranks);
        const DevicePlan plan = plan_device(*whole, shard, o, 0);
        auto model = n_ranks == 1 ? whole : engine::load_model(whole->file, shard);
        const Measured m = run_engine(model, o, backend);
        expect_plan(
            plan, m,
            backend + " " + label + " " + std::to_string(rank) + "/" + std::to_string(n_ranks),
            o.all_logits);
    }
}

TEST(PlanVsBackend, HfTinyModelsOnCpu) {
    TANDEM_FIXTURE_OR_SKIP(root, "hf-tiny");
    const auto dir = test::temp_dir("planner-hf");
    for (const char* name :
         {"llama-tiny", "qwen2-tiny", "qwen3-tiny", "qwen3moe-tiny", "gemma3-tiny"}) {
        const auto out = dir / (std::string(name) + ".gguf");
        hf::convert_hf(*root_opt / name, out, {DType::F16, name});
        for (DType kv : {DType::F16, DType::F32})
            check_model(out, 1, {128, 32, kv, false},
                        std::string(name) + " " + std::string(dtype_name(kv)));
        check_model(out, 1, {64, 16, DType::F16, true}, std::string(name) + " all-logits");
    }
}

TEST(PlanVsBackend, SynthModelsAndShardsOnCpu) {
    const auto dir = test::temp_dir("planner-synth");
    for (const char* like : {"tiny-llama", "tiny-qwen2", "tiny-qwen3moe"}) {
        const auto out = dir / (std::string(like) + ".gguf");
        engine::write_synthetic_model(like, DType::Q8_0, out);
        check_model(out, 1, {256, 64, DType::F16, false}, like);
        check_model(out, 2, {256, 64, DType::F16, false}, like);
    }
    const auto out = dir / "llama-8kv.gguf";
    test::write_llama(out, {});
    for (int n : {1, 2, 3, 4}) check_model(out, n, {512, 64, DType::F16, false}, "llama-8kv");
}

TEST(PlanVsBackend, ShardLoaderHoldsThePlannedWeights) {
    const auto out = test::temp_dir("planner-shard-plan") / "llama-8kv.gguf";
    test::write_llama(out, {});
    auto whole = engine::load_model(out);
    const PlanOptions o{256, 32, DType::F16, false};
    for (int n : {2, 3})
        for (int rank = 0; rank < n; ++rank) {
            const auto shard = engine::ShardSpec::even(whole->hp, rank, n);
            const DevicePlan plan = plan_device(*whole, shard, o, 0);
            ShardLoadStats st;
            auto model = load_shard(out, shard, &st);
            EXPECT_EQ(model->weight_bytes(), plan.weight_bytes);
            expect_plan(plan, run_engine(model, o, "cpu"),
                        "load_shard " + std::to_string(rank) + "/" + std::to_string(n));
        }
}

TEST(PlanVsBackend, HfTinyModelsOnVulkan) {
    if (const std::string why = unavailable("vulkan"); !why.empty()) GTEST_SKIP() << why;
    TANDEM_FIXTURE_OR_SKIP(root, "hf-tiny");
    const auto dir = test::temp_dir("planner-hf-vk");
    for (const char* name :
         {"llama-tiny", "qwen2-tiny", "qwen3-tiny", "qwen3moe-tiny", "gemma3-tiny"}) {
        const auto out = dir / (std::string(name) + ".gguf");
        hf::convert_hf(*root_opt / name, out, {DType::F16, name});
        check_model(out, 1, {128, 8, DType::F16, false}, name, "vulkan");
    }
}

TEST(PlanVsBackend, SynthModelsAndShardsOnVulkan) {
    if (const std::string why = unavailable("vulkan"); !why.empty()) GTEST_SKIP() << why;
    const auto dir = test::temp_dir("planner-synth-vk");
    for (const char* like : {"tiny-llama", "tiny-qwen2", "tiny-qwen3moe"}) {
        const auto out = dir / (std::string(like) + ".gguf");
        engine::write_synthetic_model(like, DType::Q8_0, out);
        check_model(out, 1, {256, 8, DType::F16, false}, like, "vulkan");
        check_model(out, 2, {256, 8, DType::F16, false}, like, "vulkan");
    }
    const auto out = dir / "llama-8kv.gguf";
    test::write_llama(out, {});
    check_model(out, 3, {512, 4, DType::F32, false}, "llama-8kv", "vulkan");
}

}  // namespace
}  // namespace tandem::planner

namespace tandem::planner {
namespace {

// Real-size synth models for the numbers in docs/memory.md (too big for CI):
// TANDEM_PLANNER_MODELS=/tmp/1b.gguf,/tmp/8b.gguf test-planner --gtest_filter='*FromEnv*'
TEST(PlanVsBackend, ModelsFromEnv) {
    const char* env = std::getenv("TANDEM_PLANNER_MODELS");
    if (!env || !*env) GTEST_SKIP() << "TANDEM_PLANNER_MODELS not set (comma-separated GGUF paths)";
    std::string list = env;
    for (size_t start = 0; start < list.size();) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        const std::string path = list.substr(start, comma - start);
        start = comma + 1;
        auto whole = engine::load_model(path);
        const PlanOptions o{4096, 16, DType::F16, false};
        const DevicePlan p = plan_device(*whole, engine::ShardSpec::whole(whole->hp), o, 0);
        std::printf("  %s: scratch peak %.2f%% of weights\n", path.c_str(),
                    100.0 * double(p.scratch_bytes) / double(p.weight_bytes));
        check_model(path, 1, o, path);
    }
}

}  // namespace
}  // namespace tandem::planner

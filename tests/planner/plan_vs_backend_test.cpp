// The planner's per-device figures against what the CPU backend actually allocates when the
// engine runs the same model, shard, context and batch (weight_bytes/kv_bytes/scratch_bytes).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "fixtures.h"
#include "tandem/backend/backend.h"
#include "tandem/engine/engine.h"
#include "tandem/engine/synth.h"
#include "tandem/hf/convert.h"
#include "tandem/planner/memory_plan.h"
#include "tandem/planner/shard_loader.h"
#include "test_models.h"

namespace tandem::planner {
namespace {

struct Measured {
    uint64_t weights = 0, kv = 0, scratch = 0;
};

// Runs a prefill of `batch` tokens and one decode step: the step shapes the plan covers.
Measured run_engine(std::shared_ptr<engine::Model> model, const PlanOptions& o) {
    auto backend = create_backend("cpu", 0, BackendOptions{1});
    engine::Engine eng(model, std::move(backend), {o.n_ctx, o.kv_type, o.n_batch});
    std::vector<int32_t> ids(static_cast<size_t>(o.n_batch));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i % 7 + 1);
    std::vector<float> logits;
    eng.decode(ids, logits, o.all_logits);
    const int32_t one = 3;
    eng.decode({&one, 1}, logits, o.all_logits);
    return {eng.backend().weight_bytes(), eng.backend().kv_bytes(), eng.backend().scratch_bytes()};
}

void expect_close(uint64_t plan, uint64_t measured, const char* what, const std::string& label) {
    const double rel = measured ? std::abs(double(plan) - double(measured)) / double(measured) : 0;
    std::printf("  %-28s %-8s plan %12llu  measured %12llu  (%.3f%%)\n", label.c_str(), what,
                static_cast<unsigned long long>(plan), static_cast<unsigned long long>(measured),
                rel * 100);
    EXPECT_GT(measured, 0u) << label << " " << what;
    EXPECT_LE(rel, 0.02) << label << " " << what;
}

void check_model(const std::filesystem::path& gguf_path, int n_ranks, const PlanOptions& o,
                 const std::string& label) {
    auto whole = engine::load_model(gguf_path);
    for (int rank = 0; rank < n_ranks; ++rank) {
        const auto shard = n_ranks == 1 ? engine::ShardSpec::whole(whole->hp)
                                        : engine::ShardSpec::even(whole->hp, rank, n_ranks);
        const DevicePlan plan = plan_device(*whole, shard, o, 0);
        auto model = n_ranks == 1 ? whole : engine::load_model(whole->file, shard);
        const Measured m = run_engine(model, o);
        const std::string l = label + " " + std::to_string(rank) + "/" + std::to_string(n_ranks);
        expect_close(plan.weight_bytes, m.weights, "weights", l);
        expect_close(plan.kv_bytes, m.kv, "kv", l);
        expect_close(plan.scratch_bytes, m.scratch, "scratch", l);
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
    for (const char* like : {"tiny-llama", "tiny-qwen3moe"}) {
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
            const Measured m = run_engine(model, o);
            const std::string l = "shard " + std::to_string(rank) + "/" + std::to_string(n);
            expect_close(plan.weight_bytes, m.weights, "weights", l);
            expect_close(plan.kv_bytes, m.kv, "kv", l);
            expect_close(plan.scratch_bytes, m.scratch, "scratch", l);
        }
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

// Whole models on the HIP backend: every hf-tiny fixture gives the CPU backend's logits for the
// whole prompt (and stays as close to the transformers logits as the CPU backend does), and the
// fixture's 24-token greedy continuation; half-precision and quantised weights with an f16 cache
// stay close to the CPU backend. Skips without a GPU or without the fixtures.
#include <cstdlib>
#include <string>

#include "../engine/engine_fixture.h"
#include "../engine/hf_reference.h"
#include "hip_test_support.h"
#include "tandem/engine/generate.h"

namespace tandem::test {
namespace {

class HipModels : public ::testing::TestWithParam<std::string> {};

TEST_P(HipModels, LogitsAndGreedyMatchCpuAndFixture) {
    TANDEM_HIP_OR_SKIP(probe);
    probe.reset();
    expect_hf_tiny_matches_cpu_and_fixture("hip", GetParam());
}

INSTANTIATE_TEST_SUITE_P(HfTiny, HipModels, ::testing::ValuesIn(kHfTinyModels), hf_tiny_param_name);

// Half-precision and quantised weights with an f16 cache, as users run them. The CPU backend
// quantises activations to q8 for block types, so those compare looser.
TEST(HipModelsQuantised, HalfAndBlockWeightsWithF16CacheMatchCpu) {
    TANDEM_HIP_OR_SKIP(probe);
    const bool probe_mma = probe->device().f16_prefill_matmul;
    const bool probe_attn_mma = probe->device().f16_prefill_attention;
    const bool probe_decode_mma = probe->device().f16_decode_attention;
    probe.reset();
    TANDEM_FIXTURE_OR_SKIP(dir, "hf-tiny/gemma3-tiny");
    const HfReference ref = load_hf_reference(dir);
    for (DType t : {DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K}) {
        auto model = engine::load_model(*tiny_gguf("gemma3-tiny", t));
        std::vector<float> lh, lc;
        engine_on("hip", model, DType::F16)->decode(ref.prompt, lh, true);
        engine_on("cpu", model, DType::F16)->decode(ref.prompt, lc, true);
        const double e = max_rel_row_error(lh, lc, model->hp.n_vocab);
        std::printf("gemma3-tiny %s: hip vs cpu %.2e\n", std::string(dtype_name(t)).c_str(), e);
        const bool half = t == DType::F16 || t == DType::BF16;
        // A prefill on the matrix units rounds every f16 weight's product's activations to f16
        // (2^-12 relative each, through every layer), and its attention q and softmax weights:
        // 5e-3, as the Vulkan backend's cooperative matrices. Prompts of up to 8 tokens run as
        // a decode step, whose attention may round the same way.
        const bool f16_prefill =
            (((t == DType::F16 && probe_mma) || probe_attn_mma) && ref.prompt.size() >= 9) ||
            probe_decode_mma;
        // Block types: the CPU backend rounds activations to q8 blocks, HIP keeps them in f32.
        // On this random-weight model (near-flat logits) that alone moves logits by a few %
        // (H100, 2026-11-21: q8_0 3.2e-2, q4_k 5.0e-2; docs/engine.md's per-type table shows
        // weight rounding of the same size), so the bound catches wrong kernels (errors ~1), not
        // the rounding difference.
        EXPECT_LT(e, !half ? 8e-2 : f16_prefill ? 5e-3 : 1e-4) << dtype_name(t);
    }
}

// The unified-memory path (APUs: weights registered with the runtime and read in place from the
// file mapping), forced on a discrete GPU too, where the runtime maps host memory over the bus;
// and eager steps (no graph replay). Both must give the CPU backend's logits and greedy tokens.
TEST(HipModelsModes, WeightsInPlaceAndEagerStepsMatchCpu) {
    TANDEM_HIP_OR_SKIP(probe);
    probe.reset();
    TANDEM_FIXTURE_OR_SKIP(dir, "hf-tiny/qwen3moe-tiny");
    const HfReference ref = load_hf_reference(dir);
    auto model = engine::load_model(*tiny_gguf("qwen3moe-tiny", DType::F32));
    auto cpu = engine_on("cpu", model, DType::F32);
    std::vector<float> lc;
    cpu->decode(ref.prompt, lc, true);
    cpu->clear();
    engine::GenerateOptions o;
    o.max_tokens = 12;
    const auto greedy_cpu = engine::generate(*cpu, ref.prompt, nullptr, o).ids;
    for (const char* var : {"TANDEM_HIP_HOST_WEIGHTS", "TANDEM_HIP_GRAPHS"}) {
        ::setenv(var, std::string(var) == "TANDEM_HIP_GRAPHS" ? "0" : "1", 1);
        auto hip = engine_on("hip", model, DType::F32);
        ::unsetenv(var);
        std::vector<float> lh;
        hip->decode(ref.prompt, lh, true);
        const double e = max_rel_row_error(lh, lc, model->hp.n_vocab);
        std::printf("qwen3moe-tiny with %s flipped: hip vs cpu %.2e\n", var, e);
        EXPECT_LT(e, 1e-4) << var;
        hip->clear();
        EXPECT_EQ(engine::generate(*hip, ref.prompt, nullptr, o).ids, greedy_cpu) << var;
    }
}

// TANDEM_HIP_STEP_TIMES=1: when the backend goes away, one line with the host's and the GPU's
// time of the steps that replayed a captured graph (a step's graph is captured the second time
// it is seen, so n one-token steps replay n - 2; a capture's milliseconds would swamp the
// means), and the same logits as without it.
TEST(HipModelsModes, StepTimesCountReplayedStepsOnly) {
    TANDEM_HIP_OR_SKIP(probe);
    probe.reset();
    TANDEM_FIXTURE_OR_SKIP(dir, "hf-tiny/llama-tiny");
    const HfReference ref = load_hf_reference(dir);
    auto model = engine::load_model(*tiny_gguf("llama-tiny", DType::Q8_0));
    std::vector<int32_t> ids = ref.prompt;
    ids.resize(std::min<size_t>(ids.size(), 7));
    const auto plain = decode_step_by_step(*engine_on("hip", model, DType::F16), ids);
    std::vector<float> timed;
    testing::internal::CaptureStderr();
    {
        const ScopedEnv env("TANDEM_HIP_STEP_TIMES", "1");
        auto hip = engine_on("hip", model, DType::F16);
        timed = decode_step_by_step(*hip, ids);
    }
    const std::string log = testing::internal::GetCapturedStderr();
    std::printf("%s", log.c_str());
    EXPECT_EQ(timed, plain);
    const std::string want =
        "hip step times (" + std::to_string(ids.size() - 2) + " replayed steps, us a step)";
    EXPECT_NE(log.find(want), std::string::npos) << log;
    EXPECT_NE(log.find("GPU from the launch to the end"), std::string::npos) << log;
}

// Buffers in host memory mapped for the GPU (BufferHome: where an APU's hipMalloc, limited to
// the VRAM carve-out, has no room): every buffer there (TANDEM_HIP_HOST_BUFFERS=1), and device
// memory until a limit standing in for a small carve-out, then host memory (=auto with
// TANDEM_HIP_DEVICE_LIMIT_MIB). The kernels are the same, so the logits must be the same bits as
// with device memory; with device memory only (=0) the limit is a clear error, not a crash.
TEST(HipModelsModes, BuffersInHostMemoryGiveTheSameBits) {
    TANDEM_HIP_OR_SKIP(probe);
    probe.reset();
    TANDEM_FIXTURE_OR_SKIP(dir, "hf-tiny/qwen3moe-tiny");
    const HfReference ref = load_hf_reference(dir);
    auto model = engine::load_model(*tiny_gguf("qwen3moe-tiny", DType::Q8_0));
    auto run = [&](const char* home, const char* limit, std::string* log) {
        testing::internal::CaptureStderr();
        std::vector<float> l;
        try {
            const ScopedEnv home_env("TANDEM_HIP_HOST_BUFFERS", home);
            const ScopedEnv limit_env("TANDEM_HIP_DEVICE_LIMIT_MIB", limit);  // "0": none
            auto hip = engine_on("hip", model, DType::F16);
            hip->decode(ref.prompt, l, true);
            // Decode steps too (captured graphs on the way).
            const auto steps = decode_step_by_step(*hip, {5, 17, 3});
            l.insert(l.end(), steps.begin(), steps.end());
        } catch (...) {
            *log = testing::internal::GetCapturedStderr();
            throw;
        }
        *log = testing::internal::GetCapturedStderr();
        return l;
    };
    std::string log;
    const auto device = run("0", "0", &log);
    const auto host = run("1", "0", &log);
    EXPECT_EQ(host, device) << "every buffer in host memory";
    const auto mixed = run("auto", "1", &log);
    std::printf("TANDEM_HIP_HOST_BUFFERS=auto, 1 MiB of device memory:\n%s", log.c_str());
    EXPECT_EQ(mixed, device) << "device memory, then host memory";
    EXPECT_NE(log.find("go to host memory mapped for the GPU"), std::string::npos) << log;
    EXPECT_NE(log.find("of the KV cache's"), std::string::npos) << log;
    try {
        run("0", "1", &log);
        ADD_FAILURE() << "1 MiB of device memory only: no error";
    } catch (const Error& e) {
        std::printf("TANDEM_HIP_HOST_BUFFERS=0, 1 MiB of device memory: %s\n", e.what());
        EXPECT_NE(std::string(e.what()).find("device bytes"), std::string::npos) << e.what();
    }
}

// Quantised weights decoded one token per step (the int8-dot matvec, q/k/v roping and storing
// their own rows; normal rope in llama-tiny, NeoX with q/k/v biases in qwen2-tiny; qwen3-tiny
// and qwen3moe-tiny's q/k norms, ropes and stores in one launch, launch_qk_norm_rope) against the
// same device with those fusions off (TANDEM_HIP_QKV_ROPE=0): the whole model graph as the planner
// lays it out must give the same logits at every step, f16 cache. Same bits, not just close: a
// one-ulp difference in q or k flips int8 roundings downstream and moves these logits ~1 %
// (the CPU backend, summing in another order, is 2-3 % away), which a loose bound would hide.
TEST(HipModelsFused, QkvRopeFusionMatchesUnfusedSteps) {
    TANDEM_HIP_OR_SKIP(probe);
    probe.reset();
    expect_switch_changes_no_logits("hip", "TANDEM_HIP_QKV_ROPE", 1e-5,
                                    {"llama-tiny", "qwen2-tiny", "qwen3-tiny", "qwen3moe-tiny"});
}

// The same models with each layer's RMSNorms folded into the matvecs around them (the output and
// down projections leave the sum and its q8 activations, q/k/v, gate/up and the LM head apply
// 1 / rms; hidden size 256) against the norms run on their own (TANDEM_HIP_NORM_FUSE=0): the
// two round differently (the norm's scale after the dot, not before the int8 rounding), so the
// logits agree only to the int8 roundings' spread; a lost or doubled norm scale moves them by
// far more. The exact check of the fused launches: HipSpeedPaths.MatvecAddNorm*.
TEST(HipModelsFused, NormFoldedIntoMatvecsMatchesNormsApart) {
    TANDEM_HIP_OR_SKIP(probe);
    probe.reset();
    expect_switch_changes_no_logits("hip", "TANDEM_HIP_NORM_FUSE", 5e-2);
}

// The step's kernels launched overlapped (each launched while the one before still runs, waiting
// in the kernel for it: programmatic dependent launch, NVIDIA sm_90+; hip_launch_overlap.h)
// against launched one after the other (TANDEM_HIP_OVERLAP=0). The same kernels on the same
// inputs: the same bits, so any kernel reading before its wait, or writing what the kernel before
// it still reads, shows as a difference. Where there is no such launch (AMD, older NVIDIA) both
// runs are the plain one.
TEST(HipModelsFused, OverlappedLaunchesMatchPlainLaunches) {
    TANDEM_HIP_OR_SKIP(probe);
    probe.reset();
    expect_switch_changes_no_logits("hip", "TANDEM_HIP_OVERLAP", 1e-30);
}

// Decode attention's splits merged by the last split block to finish (a ticket per head block)
// against a k_attention_combine launch (TANDEM_HIP_ATTN_MERGE=0). The same partials merged in
// the same order with the same arithmetic: the same bits, so a lost, doubled or stale split (a
// ticket miscounted, a partial read before it was written) shows as a difference. Prompt +
// greedy tokens run past one split's 16 positions (qwen2-tiny, head_dim 64: the split path),
// so both the lone-split path and the ticketed merge run; the op suite checks both against f64.
TEST(HipModelsFused, AttentionMergedInSplitMatchesCombineLaunch) {
    TANDEM_HIP_OR_SKIP(probe);
    probe.reset();
    expect_switch_changes_no_logits("hip", "TANDEM_HIP_ATTN_MERGE", 1e-30);
}

}  // namespace
}  // namespace tandem::test

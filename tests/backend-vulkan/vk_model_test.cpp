// Whole models on the Vulkan backend: every hf-tiny fixture gives the CPU backend's logits for
// the whole prompt (and stays as close to the transformers logits as the CPU backend does), and
// the fixture's 24-token greedy continuation.
#include "../engine/engine_fixture.h"
#include "../engine/hf_reference.h"
#include "tandem/engine/generate.h"
#include "vk_test_support.h"

namespace tandem::test {
namespace {

class VulkanModels : public ::testing::TestWithParam<std::string> {};

TEST_P(VulkanModels, LogitsAndGreedyMatchCpuAndFixture) {
    TANDEM_VULKAN_OR_SKIP(probe);
    probe.reset();
    expect_hf_tiny_matches_cpu_and_fixture("vulkan", GetParam());
}

INSTANTIATE_TEST_SUITE_P(HfTiny, VulkanModels, ::testing::ValuesIn(kHfTinyModels),
                         hf_tiny_param_name);

// Half-precision weights and an f16 cache, as users run them.
TEST(VulkanModelsHalf, F16AndBf16WeightsWithF16CacheMatchCpu) {
    TANDEM_VULKAN_OR_SKIP(probe);
    probe.reset();
    TANDEM_FIXTURE_OR_SKIP(dir, "hf-tiny/gemma3-tiny");
    const HfReference ref = load_hf_reference(dir);
    for (DType t : {DType::F16, DType::BF16}) {
        auto model = engine::load_model(*tiny_gguf("gemma3-tiny", t));
        std::vector<float> lv, lc;
        auto vk = engine_on("vulkan", model, DType::F16);
        vk->decode(ref.prompt, lv, true);
        engine_on("cpu", model, DType::F16)->decode(ref.prompt, lc, true);
        // An f16 cache rounds K/V once per position; a different summation order before the
        // rounding moves a value by one f16 ulp now and then. NVIDIA's driver measured 1.006e-4
        // (H200, 2026-11-21) and lavapipe ~9e-5, so 2e-4 (still 5x below f16's 1e-3 step).
        // A prefill on cooperative matrices rounds every f16 weight's product's activations
        // to f16 too (2^-12 relative each, through every layer), and its attention (session 18)
        // the queries and softmax weights, whatever the weights: 5e-3, as HIP's test. (bf16
        // measured 6.7e-4 on the H200 with the attention there.)
        const auto& dev = vk->backend().device();
        const bool f16_prefill =
            ((t == DType::F16 && dev.f16_prefill_matmul) || dev.f16_prefill_attention) &&
            ref.prompt.size() >= 9;
        const double e = max_rel_row_error(lv, lc, model->hp.n_vocab);
        std::printf("gemma3-tiny %s, f16 cache%s: vulkan vs cpu %.2e\n",
                    std::string(dtype_name(t)).c_str(),
                    f16_prefill ? ", prefill on cooperative matrices" : "", e);
        EXPECT_LT(e, f16_prefill ? 5e-3 : 2e-4) << dtype_name(t);
    }
}

// Quantised weights decoded one token per step (the int8-dot matvec, q/k/v roping and storing
// their own rows; normal rope in llama-tiny, NeoX with q/k/v biases in qwen2-tiny; qwen3-tiny
// and qwen3moe-tiny's q/k norms, ropes and stores in one dispatch, qk_norm_rope.comp) against
// the same device with those fusions off (TANDEM_VK_QKV_ROPE=0): the whole model graph as the
// planner lays it out (the roped q may take the memory of the norm before it) must give the same
// logits at every step, f16 cache. Same bits: a one-ulp difference in q or k flips int8 roundings
// downstream and moves these logits ~1 %, so a loose bound would hide a wrong row.
TEST(VulkanModelsFused, QkvRopeFusionMatchesUnfusedSteps) {
    TANDEM_VULKAN_OR_SKIP(probe);
    probe.reset();
    expect_switch_changes_no_logits("vulkan", "TANDEM_VK_QKV_ROPE", 1e-5,
                                    {"llama-tiny", "qwen2-tiny", "qwen3-tiny", "qwen3moe-tiny"});
}

// The same models with each layer's RMSNorms folded into the matvecs around them (matvec_q8
// RESID for the output and down projections, NORM_EPS for q/k/v, gate/up and the LM head)
// against the norms dispatched on their own (TANDEM_VK_NORM_FUSE=0): the two round differently
// (the norm's scale after the dot, not before the int8 rounding), so the logits agree to the
// int8 roundings' spread, not bit for bit; a lost or doubled norm scale moves them by far more.
// The exact check of the dispatches: VulkanQ8Matvec.MatvecAddNorm*.
TEST(VulkanModelsFused, NormFoldedIntoMatvecsMatchesNormsApart) {
    TANDEM_VULKAN_OR_SKIP(probe);
    probe.reset();
    expect_switch_changes_no_logits("vulkan", "TANDEM_VK_NORM_FUSE", 5e-2);
}

// Split-K attention's splits merged by the last split workgroup to finish (a ticket per head
// block) against the attention_combine dispatch (TANDEM_VK_ATTN_MERGE=0). The two sum the
// splits in other orders (the combine reduces over subgroups), so the logits agree to the int8
// roundings' spread (see QkvRopeFusionMatchesUnfusedSteps), not bit for bit; the exact check of
// both ways is the op suite's attention test against f64 (decode cases on each side of 32
// splits). Prompt + greedy tokens run past one split's 16 positions (qwen2-tiny, head_dim 64).
TEST(VulkanModelsFused, AttentionMergedInSplitMatchesCombineDispatch) {
    TANDEM_VULKAN_OR_SKIP(probe);
    probe.reset();
    expect_switch_changes_no_logits("vulkan", "TANDEM_VK_ATTN_MERGE", 5e-2);
}

}  // namespace
}  // namespace tandem::test

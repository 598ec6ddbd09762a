// config.json -> ModelConfig: the real hf-tiny configs (values straight from their files) and the
// other spellings of rope settings.
#include <gtest/gtest.h>

#include <fstream>

#include "fixtures.h"
#include "tandem/common/error.h"
#include "tandem/hf/config.h"

using namespace tandem;
using namespace tandem::test;

namespace {
hf::ModelConfig from_text(const std::string& json) {
    auto dir = temp_dir("hf-config");
    std::ofstream(dir / "config.json") << json;
    return hf::load_config(dir);
}
std::string error_of(const std::string& json) {
    try {
        from_text(json);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}
const std::string kLlamaBase =
    R"("architectures": ["LlamaForCausalLM"], "vocab_size": 100, "hidden_size": 64,
  "num_hidden_layers": 2, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
  "max_position_embeddings": 2048, "rms_norm_eps": 1e-5)";
}  // namespace

TEST(HfConfig, TinyFixtures) {
    TANDEM_FIXTURE_OR_SKIP(root, "hf-tiny");
    auto llama = hf::load_config(root / "llama-tiny");
    EXPECT_EQ(llama.arch, "llama");
    EXPECT_EQ(llama.n_vocab, 1000u);
    EXPECT_EQ(llama.n_layer, 3u);
    EXPECT_EQ(llama.n_head, 8u);
    EXPECT_EQ(llama.n_head_kv, 2u);
    EXPECT_EQ(llama.head_dim, 32u);
    EXPECT_EQ(llama.n_ff, 640u);
    EXPECT_DOUBLE_EQ(llama.rope_theta, 10000.0);
    EXPECT_DOUBLE_EQ(llama.rms_eps, 1e-5);
    EXPECT_FALSE(llama.tie_embeddings);

    auto qwen3 = hf::load_config(root / "qwen3-tiny");
    EXPECT_EQ(qwen3.arch, "qwen3");
    EXPECT_EQ(qwen3.head_dim, 128u);  // not n_embd / n_head
    EXPECT_DOUBLE_EQ(qwen3.rope_theta, 1000000.0);
    EXPECT_TRUE(qwen3.tie_embeddings);

    auto moe = hf::load_config(root / "qwen3moe-tiny");
    EXPECT_EQ(moe.arch, "qwen3moe");
    EXPECT_EQ(moe.n_expert, 8u);
    EXPECT_EQ(moe.n_expert_used, 2u);
    EXPECT_EQ(moe.n_ff_exp, 128u);

    auto gemma = hf::load_config(root / "gemma3-tiny");
    EXPECT_EQ(gemma.arch, "gemma3");
    EXPECT_DOUBLE_EQ(gemma.rope_theta, 1000000.0);
    ASSERT_TRUE(gemma.rope_theta_swa.has_value());
    EXPECT_DOUBLE_EQ(*gemma.rope_theta_swa, 10000.0);
    EXPECT_EQ(gemma.sliding_window, 16u);
    EXPECT_EQ(gemma.swa_layers, (std::vector<bool>{true, true, true, true, true, false}));
    EXPECT_EQ(gemma.head_dim, 64u);

    EXPECT_EQ(hf::load_config(root / "qwen2-tiny").arch, "qwen2");
}

TEST(HfConfig, RopeSpellings) {
    // Legacy: top-level rope_theta and rope_scaling.
    auto legacy = from_text("{" + kLlamaBase + R"(, "rope_theta": 500000.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192}})");
    EXPECT_DOUBLE_EQ(legacy.rope_theta, 500000.0);
    EXPECT_EQ(legacy.rope_scaling.type, "llama3");
    EXPECT_DOUBLE_EQ(legacy.rope_scaling.factor, 8.0);
    EXPECT_EQ(legacy.rope_scaling.original_context, 8192u);
    EXPECT_EQ(legacy.head_dim, 16u);  // 64 / 4 when head_dim is absent
    EXPECT_FALSE(legacy.head_dim_given);

    // New flat rope_parameters with linear scaling.
    auto flat = from_text("{" + kLlamaBase +
                          R"(, "rope_parameters": {"rope_theta": 1234.0, "rope_type": "linear",
        "factor": 2.0}})");
    EXPECT_DOUBLE_EQ(flat.rope_theta, 1234.0);
    EXPECT_EQ(flat.rope_scaling.type, "linear");

    // Gemma 3 legacy: rope_theta + rope_local_base_freq, no layer_types -> pattern of 6.
    auto g = from_text(
        R"({"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "vocab_size": 10,
        "hidden_size": 32, "num_hidden_layers": 7, "intermediate_size": 64, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 16, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
        "sliding_window": 512, "sliding_window_pattern": 6,
        "rope_scaling": {"rope_type": "linear", "factor": 8.0}})");
    EXPECT_DOUBLE_EQ(g.rope_theta, 1000000.0);
    EXPECT_DOUBLE_EQ(*g.rope_theta_swa, 10000.0);
    EXPECT_EQ(g.swa_layers, (std::vector<bool>{true, true, true, true, true, false, true}));
    EXPECT_EQ(g.rope_scaling.type, "linear");
    EXPECT_DOUBLE_EQ(g.rope_scaling.factor, 8.0);

    // Gemma 3 per-layer-type rope_parameters with scaling on the global layers only.
    auto g2 =
        from_text(R"({"architectures": ["Gemma3ForCausalLM"], "vocab_size": 10, "hidden_size": 32,
        "num_hidden_layers": 2, "intermediate_size": 64, "num_attention_heads": 2, "head_dim": 16,
        "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention"],
        "rope_parameters": {"full_attention": {"rope_theta": 1000000.0, "rope_type": "linear", "factor": 8.0},
                            "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}}})");
    EXPECT_DOUBLE_EQ(g2.rope_theta, 1000000.0);
    EXPECT_DOUBLE_EQ(*g2.rope_theta_swa, 10000.0);
    EXPECT_EQ(g2.rope_scaling.type, "linear");
    EXPECT_EQ(g2.n_head_kv, 2u);  // defaults to num_attention_heads
}

TEST(HfConfig, BadConfigsNameTheProblem) {
    auto has = [](const std::string& msg, const std::string& needle) {
        return msg.find(needle) != std::string::npos &&
               msg.find("config.json") != std::string::npos;
    };
    EXPECT_TRUE(has(error_of(R"({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"})"),
                    "'GPT2LMHeadModel' (model_type 'gpt2') is not supported"));
    EXPECT_TRUE(has(error_of(R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 10})"),
                    "missing field 'hidden_size'"));
    EXPECT_TRUE(
        has(error_of("{" + kLlamaBase + R"(, "num_key_value_heads": 3})"), "not a multiple"));
    EXPECT_TRUE(has(error_of(R"({"architectures": ["LlamaForCausalLM"], "vocab_size": -4})"),
                    "'vocab_size' must be a positive integer"));
    EXPECT_TRUE(has(
        error_of("{" + kLlamaBase + R"(, "rope_scaling": {"rope_type": "dynamic", "factor": 2}})"),
        "rope type 'dynamic' is not supported"));
    EXPECT_TRUE(has(error_of("[]"), "not a JSON object"));
    EXPECT_TRUE(has(error_of("{" + kLlamaBase + R"(, "text_config": {}})"), "multimodal"));
    EXPECT_THROW(hf::load_config(temp_dir("hf-none")), Error);
}

#pragma once
// A Hugging Face config.json read into the hyperparameters llama.cpp's GGUF keys carry, for the
// architectures we convert: llama, qwen2, qwen3, qwen3moe, gemma3. Both rope spellings are read:
// top-level rope_theta / rope_scaling, and the newer rope_parameters object, including gemma3's
// per-layer-type form {"full_attention": {...}, "sliding_attention": {...}}.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tandem::hf {

struct RopeScaling {
    std::string type;  // "" (none), "linear", "yarn", "llama3"
    double factor = 1.0;
    uint64_t original_context = 0;  // yarn, llama3 (original_max_position_embeddings)
    double low_freq_factor = 1.0;   // llama3
    double high_freq_factor = 4.0;  // llama3
};

struct ModelConfig {
    std::string arch;  // GGUF architecture name: "llama", "qwen2", "qwen3", "qwen3moe", "gemma3"
    std::string hf_architecture;  // "LlamaForCausalLM", ...
    uint64_t n_vocab = 0;
    uint64_t n_ctx = 0;  // max_position_embeddings
    uint64_t n_embd = 0;
    uint64_t n_layer = 0;
    uint64_t n_ff = 0;
    uint64_t n_head = 0;
    uint64_t n_head_kv = 0;
    uint64_t head_dim = 0;  // head_dim when given, else n_embd / n_head
    bool head_dim_given = false;
    double rms_eps = 1e-6;
    double rope_theta = 10000.0;
    std::optional<double> rope_theta_swa;  // sliding-window layers' base (gemma3)
    RopeScaling rope_scaling;
    // MoE (qwen3moe)
    uint64_t n_expert = 0;
    uint64_t n_expert_used = 0;
    uint64_t n_ff_exp = 0;
    // Sliding window (gemma3): window size and which layers use it.
    uint64_t sliding_window = 0;
    std::vector<bool> swa_layers;
    bool tie_embeddings = false;
};

// Reads folder/config.json (or a config.json path). Throws tandem::Error naming the file and the
// field when the architecture is unsupported or a needed field is missing or malformed.
ModelConfig load_config(const std::filesystem::path& folder_or_file);

}  // namespace tandem::hf

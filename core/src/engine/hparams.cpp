// Hyper-parameters from GGUF metadata, with llama.cpp's key names and per-architecture rules.
#include <cmath>

#include "tandem/common/error.h"
#include "tandem/engine/model.h"

namespace tandem::engine {

const char* arch_name(Arch a) {
    switch (a) {
        case Arch::Llama:
            return "llama";
        case Arch::Qwen2:
            return "qwen2";
        case Arch::Qwen3:
            return "qwen3";
        case Arch::Qwen3Moe:
            return "qwen3moe";
        case Arch::Gemma3:
            return "gemma3";
    }
    return "?";
}

HParams read_hparams(const gguf::File& f) {
    const std::string name = f.get_string("general.architecture");
    HParams hp;
    if (name == "llama")
        hp.arch = Arch::Llama;
    else if (name == "qwen2")
        hp.arch = Arch::Qwen2;
    else if (name == "qwen3")
        hp.arch = Arch::Qwen3;
    else if (name == "qwen3moe")
        hp.arch = Arch::Qwen3Moe;
    else if (name == "gemma3")
        hp.arch = Arch::Gemma3;
    else
        throw Error(f.path().string() + ": architecture '" + name +
                    "' is not supported (llama, qwen2, qwen3, qwen3moe, gemma3)");
    auto key = [&](const char* k) { return name + "." + k; };
    auto i64 = [&](const char* k) { return static_cast<int64_t>(f.get_u64(key(k))); };
    auto i64_or = [&](const char* k, int64_t d) {
        return static_cast<int64_t>(f.get_u64(key(k), static_cast<uint64_t>(d)));
    };
    hp.n_embd = i64("embedding_length");
    hp.n_layer = i64("block_count");
    hp.n_head = i64("attention.head_count");
    hp.n_kv_head = i64_or("attention.head_count_kv", hp.n_head);
    hp.n_ctx_train = i64_or("context_length", 4096);
    hp.n_ff = i64_or("feed_forward_length", 0);
    if (hp.n_head <= 0 || hp.n_kv_head <= 0 || hp.n_head % hp.n_kv_head != 0)
        throw Error(f.path().string() + ": " + key("attention.head_count") + " " +
                    std::to_string(hp.n_head) + " is not a multiple of head_count_kv " +
                    std::to_string(hp.n_kv_head));
    hp.head_dim = i64_or("attention.key_length", hp.n_embd / hp.n_head);
    if (i64_or("attention.value_length", hp.head_dim) != hp.head_dim)
        throw Error(f.path().string() + ": " + key("attention.value_length") +
                    " differs from key_length; not supported");
    hp.n_rot = i64_or("rope.dimension_count", hp.head_dim);
    if (hp.n_rot <= 0 || hp.n_rot > hp.head_dim || hp.n_rot % 2)
        throw Error(f.path().string() + ": " + key("rope.dimension_count") + " " +
                    std::to_string(hp.n_rot) + " invalid for head size " +
                    std::to_string(hp.head_dim));
    hp.rms_eps = static_cast<float>(f.get_f64(key("attention.layer_norm_rms_epsilon"), 1e-5));
    hp.rope_base = static_cast<float>(f.get_f64(key("rope.freq_base"), 10000.0));
    hp.rope_base_swa = hp.rope_base;
    const std::string scaling = f.get_string(key("rope.scaling.type"), "none");
    const double factor = f.get_f64(key("rope.scaling.factor"), 0.0);
    if (scaling == "linear" && factor > 0)
        hp.rope_scale = static_cast<float>(1.0 / factor);
    else if (scaling != "none" && scaling != "linear" && factor > 1.0)
        throw Error(f.path().string() + ": rope scaling '" + scaling + "' is not supported");
    hp.attn_softcap = static_cast<float>(f.get_f64(key("attn_logit_softcapping"), 0.0));
    hp.final_softcap = static_cast<float>(f.get_f64(key("final_logit_softcapping"), 0.0));
    hp.sliding_window = i64_or("attention.sliding_window", 0);
    hp.attn_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));

    const gguf::TensorInfo* embd = f.tensor("token_embd.weight");
    if (!embd || embd->shape.size() != 2)
        throw Error(f.path().string() + ": tensor 'token_embd.weight' missing or not 2-D");
    hp.n_vocab = static_cast<int64_t>(embd->shape[1]);

    switch (hp.arch) {
        case Arch::Llama:
            hp.rope_mode = RopeMode::Normal;
            break;
        case Arch::Qwen2:
        case Arch::Qwen3:
            hp.rope_mode = RopeMode::Neox;
            break;
        case Arch::Qwen3Moe:
            hp.rope_mode = RopeMode::Neox;
            hp.n_expert = i64("expert_count");
            hp.n_expert_used = i64("expert_used_count");
            hp.n_ff_exp = i64_or("expert_feed_forward_length", 0);
            hp.expert_norm = true;  // llama.cpp normalises qwen3moe's top-k weights
            if (hp.n_expert_used <= 0 || hp.n_expert_used > hp.n_expert)
                throw Error(f.path().string() + ": " + key("expert_used_count") + " " +
                            std::to_string(hp.n_expert_used) + " out of range");
            break;
        case Arch::Gemma3:
            hp.rope_mode = RopeMode::Neox;
            hp.swa_period = 6;
            hp.rope_base_swa = 10000.0f;
            hp.embd_scale = std::sqrt(static_cast<float>(hp.n_embd));
            break;
    }
    if (hp.arch != Arch::Qwen3Moe && hp.n_ff <= 0)
        throw Error(f.path().string() + ": " + key("feed_forward_length") + " missing");
    return hp;
}

}  // namespace tandem::engine

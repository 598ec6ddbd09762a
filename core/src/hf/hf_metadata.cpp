// Keys and value types as convert_hf_to_gguf.py writes them (u32 sizes, f32 rope base and eps).
#include "hf_metadata.h"

namespace tandem::hf::detail {

void write_model_metadata(const ModelConfig& c, const std::string& name, uint32_t file_type,
                          gguf::Writer& w) {
    using gguf::Value;
    const std::string a = c.arch + ".";
    auto u32 = [](uint64_t v) { return Value::u32(uint32_t(v)); };
    w.set("general.architecture", Value::string(c.arch));
    w.set("general.type", Value::string("model"));
    w.set("general.name", Value::string(name));
    w.set(a + "context_length", u32(c.n_ctx));
    w.set(a + "embedding_length", u32(c.n_embd));
    w.set(a + "block_count", u32(c.n_layer));
    w.set(a + "feed_forward_length", u32(c.n_ff));
    w.set(a + "attention.head_count", u32(c.n_head));
    w.set(a + "attention.head_count_kv", u32(c.n_head_kv));
    w.set(a + "rope.freq_base", Value::f32(float(c.rope_theta)));
    if (c.rope_theta_swa) w.set(a + "rope.freq_base_swa", Value::f32(float(*c.rope_theta_swa)));
    w.set(a + "attention.layer_norm_rms_epsilon", Value::f32(float(c.rms_eps)));
    if (c.head_dim_given || c.arch == "gemma3") {
        w.set(a + "attention.key_length", u32(c.head_dim));
        w.set(a + "attention.value_length", u32(c.head_dim));
    }
    if (c.arch == "llama") {
        w.set(a + "vocab_size", u32(c.n_vocab));
        w.set(a + "rope.dimension_count", u32(c.head_dim));
    }
    const auto& rs = c.rope_scaling;
    if (rs.type == "linear" || rs.type == "yarn") {
        w.set(a + "rope.scaling.type", Value::string(rs.type));
        w.set(a + "rope.scaling.factor", Value::f32(float(rs.factor)));
        if (rs.type == "yarn")
            w.set(a + "rope.scaling.original_context_length", u32(rs.original_context));
    }
    if (c.n_expert) {
        w.set(a + "expert_count", u32(c.n_expert));
        w.set(a + "expert_used_count", u32(c.n_expert_used));
        w.set(a + "expert_feed_forward_length", u32(c.n_ff_exp));
    }
    if (c.sliding_window) {
        w.set(a + "attention.sliding_window", u32(c.sliding_window));
        // Which layers slide: llama.cpp hard-codes Gemma 3's 5:1 pattern, the array keeps the
        // config's own layer_types so other patterns survive conversion.
        std::vector<Value> pattern;
        for (bool s : c.swa_layers) pattern.push_back(Value::boolean(s));
        w.set(a + "attention.sliding_window_pattern",
              Value::array(gguf::ValueType::Bool, std::move(pattern)));
    }
    w.set("general.file_type", u32(file_type));
}

}  // namespace tandem::hf::detail

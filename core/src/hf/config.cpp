// config.json -> ModelConfig.
#include "tandem/hf/config.h"

#include <nlohmann/json.hpp>

#include <fstream>

#include "tandem/common/error.h"
#include "tandem/common/log.h"

namespace tandem::hf {
namespace {

using nlohmann::json;

struct Reader {
    const json& j;
    std::string file;

    [[noreturn]] void fail(const std::string& what) const {
        throw Error("hf: " + file + ": " + what);
    }

    const json* find(const char* key) const {
        auto it = j.find(key);
        return it == j.end() || it->is_null() ? nullptr : &*it;
    }
    uint64_t u64(const char* key) const {
        const json* v = find(key);
        if (!v) fail(std::string("missing field '") + key + "'");
        if (!v->is_number_unsigned() || v->get<uint64_t>() == 0)
            fail(std::string("field '") + key + "' must be a positive integer");
        return v->get<uint64_t>();
    }
    uint64_t u64(const char* key, uint64_t def) const { return find(key) ? u64(key) : def; }
    double f64(const json& obj, const char* key, double def) const {
        auto it = obj.find(key);
        if (it == obj.end() || it->is_null()) return def;
        if (!it->is_number()) fail(std::string("field '") + key + "' must be a number");
        return it->get<double>();
    }
    double f64(const char* key, double def) const { return f64(j, key, def); }
};

json read_json(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw Error("hf: cannot open " + p.string());
    auto j = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
        throw Error("hf: " + p.string() + ": not a JSON object");
    return j;
}

std::string arch_of(const std::string& hf_arch, const std::string& model_type) {
    if (hf_arch == "LlamaForCausalLM" || hf_arch == "MistralForCausalLM") return "llama";
    if (hf_arch == "Qwen2ForCausalLM") return "qwen2";
    if (hf_arch == "Qwen3ForCausalLM") return "qwen3";
    if (hf_arch == "Qwen3MoeForCausalLM") return "qwen3moe";
    if (hf_arch == "Gemma3ForCausalLM" || model_type == "gemma3_text") return "gemma3";
    return "";
}

void read_scaling(const Reader& r, const json& p, RopeScaling& s) {
    std::string type;
    if (auto it = p.find("rope_type"); it != p.end() && it->is_string())
        type = it->get<std::string>();
    else if (auto it2 = p.find("type"); it2 != p.end() && it2->is_string())
        type = it2->get<std::string>();
    if (type.empty() || type == "default") return;
    if (type != "linear" && type != "yarn" && type != "llama3")
        r.fail("rope type '" + type + "' is not supported (default, linear, yarn, llama3)");
    s.type = type;
    s.factor = r.f64(p, "factor", 1.0);
    s.original_context = uint64_t(r.f64(p, "original_max_position_embeddings", 0));
    s.low_freq_factor = r.f64(p, "low_freq_factor", 1.0);
    s.high_freq_factor = r.f64(p, "high_freq_factor", 4.0);
    if (type != "linear" && s.original_context == 0)
        r.fail("rope type '" + type + "' needs original_max_position_embeddings");
}

}  // namespace

ModelConfig load_config(const std::filesystem::path& folder_or_file) {
    const auto path = std::filesystem::is_directory(folder_or_file) ? folder_or_file / "config.json"
                                                                    : folder_or_file;
    const json root = read_json(path);
    Reader r{root, path.string()};
    ModelConfig c;

    std::string model_type = root.value("model_type", std::string());
    if (auto a = r.find("architectures"); a && a->is_array() && !a->empty() && (*a)[0].is_string())
        c.hf_architecture = (*a)[0].get<std::string>();
    if (root.contains("text_config"))
        r.fail("multimodal checkpoints (" + c.hf_architecture +
               ") are not supported; convert the text-only model");
    c.arch = arch_of(c.hf_architecture, model_type);
    if (c.arch.empty())
        r.fail("architecture '" + c.hf_architecture + "' (model_type '" + model_type +
               "') is not supported (llama, qwen2, qwen3, qwen3moe, gemma3)");

    c.n_vocab = r.u64("vocab_size");
    c.n_embd = r.u64("hidden_size");
    c.n_layer = r.u64("num_hidden_layers");
    c.n_ff = r.u64("intermediate_size");
    c.n_head = r.u64("num_attention_heads");
    c.n_head_kv = r.u64("num_key_value_heads", c.n_head);
    c.n_ctx = r.u64("max_position_embeddings", c.arch == "gemma3" ? 131072 : 4096);
    if (c.n_head % c.n_head_kv != 0)
        r.fail("num_attention_heads " + std::to_string(c.n_head) +
               " is not a multiple of num_key_value_heads " + std::to_string(c.n_head_kv));
    c.head_dim_given = r.find("head_dim") != nullptr;
    if (c.head_dim_given) {
        c.head_dim = r.u64("head_dim");
    } else {
        if (c.arch == "gemma3")
            c.head_dim = 256;  // Gemma 3's default when the field is left out
        else if (c.n_embd % c.n_head != 0)
            r.fail("hidden_size is not a multiple of num_attention_heads and head_dim is missing");
        else
            c.head_dim = c.n_embd / c.n_head;
    }
    c.rms_eps = r.f64("rms_norm_eps", 1e-6);
    c.tie_embeddings = root.value("tie_word_embeddings", c.arch == "gemma3");

    // Rope: the newer rope_parameters object (flat or per layer type), else the legacy fields.
    double default_theta = c.arch == "gemma3" ? 1000000.0 : 10000.0;
    c.rope_theta = r.f64("rope_theta", default_theta);
    if (const json* rp = r.find("rope_parameters")) {
        if (!rp->is_object()) r.fail("rope_parameters is not an object");
        const json* full = rp;
        if (auto it = rp->find("full_attention"); it != rp->end()) {
            if (!it->is_object()) r.fail("rope_parameters.full_attention is not an object");
            full = &*it;
            if (auto s = rp->find("sliding_attention"); s != rp->end()) {
                if (!s->is_object()) r.fail("rope_parameters.sliding_attention is not an object");
                if (s->contains("rope_theta")) c.rope_theta_swa = r.f64(*s, "rope_theta", 10000.0);
            }
        }
        c.rope_theta = r.f64(*full, "rope_theta", c.rope_theta);
        read_scaling(r, *full, c.rope_scaling);
    } else if (const json* rs = r.find("rope_scaling")) {
        if (!rs->is_object()) r.fail("rope_scaling is not an object");
        read_scaling(r, *rs, c.rope_scaling);
    }
    if (c.arch == "gemma3" && !c.rope_theta_swa)
        c.rope_theta_swa = r.f64("rope_local_base_freq", 10000.0);

    if (c.arch == "qwen3moe") {
        c.n_expert = r.find("num_experts") ? r.u64("num_experts") : r.u64("num_local_experts");
        c.n_expert_used = r.u64("num_experts_per_tok");
        c.n_ff_exp = r.u64("moe_intermediate_size");
        if (c.n_expert_used > c.n_expert)
            r.fail("num_experts_per_tok is larger than the expert count");
        if (r.u64("decoder_sparse_step", 1) != 1)
            r.fail("decoder_sparse_step other than 1 is not supported");
        if (const json* m = r.find("mlp_only_layers"); m && !(m->is_array() && m->empty()))
            r.fail("mlp_only_layers (dense layers in a MoE model) is not supported");
        if (!root.value("norm_topk_prob", true))
            log_warn(
                "hf: " + path.string() +
                ": norm_topk_prob is false, but qwen3moe GGUFs always normalise top-k weights");
    }

    if (c.arch == "gemma3") {
        c.sliding_window = r.u64("sliding_window");
        if (const json* lt = r.find("layer_types")) {
            if (!lt->is_array() || lt->size() != c.n_layer)
                r.fail("layer_types must list one type per layer (" + std::to_string(c.n_layer) +
                       ")");
            for (const auto& t : *lt) {
                if (!t.is_string()) r.fail("layer_types holds a non-string");
                c.swa_layers.push_back(t.get<std::string>() == "sliding_attention");
            }
        } else {
            // Older configs: every sliding_window_pattern-th layer is global.
            const uint64_t pattern =
                r.u64("sliding_window_pattern", r.u64("_sliding_window_pattern", 6));
            for (uint64_t i = 0; i < c.n_layer; ++i) c.swa_layers.push_back((i + 1) % pattern != 0);
        }
    }
    return c;
}

}  // namespace tandem::hf

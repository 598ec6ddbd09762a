// HF tensor names -> GGUF tensor names and shapes (llama.cpp's tensor_mapping.py names).
#include <cmath>
#include <map>
#include <numbers>
#include <regex>
#include <set>

#include "tandem/common/error.h"
#include "tandem/hf/convert.h"
#include "tandem/hf/safetensors.h"

namespace tandem::hf {
namespace {

using Transform = TensorPlan::Transform;

// Per-layer suffixes shared by every architecture here.
const std::map<std::string, std::string>& common_layer_names() {
    static const std::map<std::string, std::string> m = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"self_attn.q_proj.bias", "attn_q.bias"},
        {"self_attn.k_proj.bias", "attn_k.bias"},
        {"self_attn.v_proj.bias", "attn_v.bias"},
        {"self_attn.o_proj.bias", "attn_output.bias"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"},
        {"self_attn.k_norm.weight", "attn_k_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"},
        {"mlp.gate.weight", "ffn_gate_inp.weight"},
    };
    return m;
}

std::optional<std::string> layer_name(const std::string& arch, const std::string& suffix) {
    if (arch == "gemma3") {
        // Gemma norms around both blocks: post_attention_layernorm is *after* attention there.
        if (suffix == "post_attention_layernorm.weight") return "post_attention_norm.weight";
        if (suffix == "pre_feedforward_layernorm.weight") return "ffn_norm.weight";
        if (suffix == "post_feedforward_layernorm.weight") return "post_ffw_norm.weight";
    } else if (suffix == "post_attention_layernorm.weight") {
        return "ffn_norm.weight";
    }
    auto it = common_layer_names().find(suffix);
    if (it == common_layer_names().end()) return std::nullopt;
    return it->second;
}

std::vector<uint64_t> ggml_shape(const std::vector<uint64_t>& hf_shape) {
    return {hf_shape.rbegin(), hf_shape.rend()};
}

// Llama 3's rope scaling as per-dimension frequency factors (llama.cpp's rope_freqs tensor).
std::vector<float> llama3_rope_factors(const ModelConfig& c) {
    const auto& s = c.rope_scaling;
    const double low_wavelen = double(s.original_context) / s.low_freq_factor;
    const double high_wavelen = double(s.original_context) / s.high_freq_factor;
    std::vector<float> f;
    for (uint64_t i = 0; i < c.head_dim; i += 2) {
        const double freq = 1.0 / std::pow(c.rope_theta, double(i) / double(c.head_dim));
        const double wavelen = 2 * std::numbers::pi / freq;
        if (wavelen < high_wavelen) {
            f.push_back(1.0f);
        } else if (wavelen > low_wavelen) {
            f.push_back(float(s.factor));
        } else {
            const double smooth = (double(s.original_context) / wavelen - s.low_freq_factor) /
                                  (s.high_freq_factor - s.low_freq_factor);
            f.push_back(float(1.0 / ((1 - smooth) / s.factor + smooth)));
        }
    }
    return f;
}

[[noreturn]] void fail(const std::string& what) {
    throw Error("hf: " + what);
}

void expect_shape(const SafeTensor& t, const std::vector<uint64_t>& want) {
    if (t.shape != want) {
        auto str = [](const std::vector<uint64_t>& s) {
            std::string r = "[";
            for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
            return r + "]";
        };
        fail("tensor '" + t.name + "' has shape " + str(t.shape) + ", config.json implies " +
             str(want));
    }
}

}  // namespace

std::vector<TensorPlan> plan_tensors(const ModelConfig& c, const SafetensorsModel& model) {
    static const std::regex layer_re(R"(^model\.layers\.(\d+)\.(.+)$)");
    static const std::regex expert_re(
        R"(^mlp\.experts\.(\d+)\.(gate_proj|up_proj|down_proj)\.weight$)");
    const bool gemma = c.arch == "gemma3";
    std::vector<TensorPlan> plans;
    std::set<std::string> stacked;  // "blk.N.ffn_gate_exps.weight" planned already

    for (const auto& t : model.tensors()) {
        const std::string& n = t.name;
        TensorPlan p;
        p.sources = {n};
        p.shape = ggml_shape(t.shape);
        std::smatch m;
        if (n == "model.embed_tokens.weight") {
            p.name = "token_embd.weight";
            if (t.shape.size() != 2 || t.shape[1] != c.n_embd)
                expect_shape(t, {c.n_vocab, c.n_embd});
        } else if (n == "model.norm.weight") {
            p.name = "output_norm.weight";
            expect_shape(t, {c.n_embd});
        } else if (n == "lm_head.weight") {
            if (c.tie_embeddings) continue;  // tied: the output reuses token_embd
            p.name = "output.weight";
            if (t.shape.size() != 2 || t.shape[1] != c.n_embd)
                expect_shape(t, {c.n_vocab, c.n_embd});
        } else if (n.ends_with("rotary_emb.inv_freq")) {
            continue;  // recomputed from rope_theta at run time
        } else if (std::regex_match(n, m, layer_re)) {
            const uint64_t layer = std::stoull(m[1].str());
            const std::string suffix = m[2].str();
            if (layer >= c.n_layer)
                fail("tensor '" + n + "' is for layer " + std::to_string(layer) +
                     " but num_hidden_layers is " + std::to_string(c.n_layer));
            const std::string blk = "blk." + std::to_string(layer) + ".";
            std::smatch e;
            if (c.arch == "qwen3moe" && std::regex_match(suffix, e, expert_re)) {
                const std::string proj = e[2].str();
                const std::string kind = proj == "gate_proj" ? "gate"
                                         : proj == "up_proj" ? "up"
                                                             : "down";
                p.name = blk + "ffn_" + kind + "_exps.weight";
                if (!stacked.insert(p.name).second) continue;
                const std::vector<uint64_t> one = kind == "down"
                                                      ? std::vector<uint64_t>{c.n_embd, c.n_ff_exp}
                                                      : std::vector<uint64_t>{c.n_ff_exp, c.n_embd};
                p.sources.clear();
                for (uint64_t x = 0; x < c.n_expert; ++x) {
                    const std::string src = "model.layers." + std::to_string(layer) +
                                            ".mlp.experts." + std::to_string(x) + "." + proj +
                                            ".weight";
                    const auto* st = model.find(src);
                    if (!st)
                        fail("expert tensor '" + src + "' missing (num_experts is " +
                             std::to_string(c.n_expert) + ")");
                    expect_shape(*st, one);
                    p.sources.push_back(src);
                }
                // [n_expert, rows, cols] stacked -> ggml {cols, rows, n_expert}
                p.shape = {one[1], one[0], c.n_expert};
            } else {
                auto name = layer_name(c.arch, suffix);
                if (!name) fail("tensor '" + n + "' has no GGUF name for " + c.arch);
                p.name = blk + *name;
                const bool is_q = suffix.starts_with("self_attn.q_proj.");
                const bool is_k = suffix.starts_with("self_attn.k_proj.");
                if (is_q && t.shape[0] != c.n_head * c.head_dim)
                    fail("tensor '" + n + "' has " + std::to_string(t.shape[0]) +
                         " rows, expected n_head * head_dim = " +
                         std::to_string(c.n_head * c.head_dim));
                if (is_k && t.shape[0] != c.n_head_kv * c.head_dim)
                    fail("tensor '" + n + "' has " + std::to_string(t.shape[0]) +
                         " rows, expected n_head_kv * head_dim = " +
                         std::to_string(c.n_head_kv * c.head_dim));
                // llama.cpp's llama graph uses the GPT-J rope layout, so HF's rotate-half rows are
                // interleaved per head; qwen and gemma keep the NeoX layout and need nothing.
                if (c.arch == "llama" && (is_q || is_k)) {
                    p.transform = Transform::PermuteRows;
                    p.permute_heads = is_q ? c.n_head : c.n_head_kv;
                    if (c.head_dim % 2 != 0)
                        fail("tensor '" + n + "': odd head_dim cannot be permuted");
                }
                if (gemma && suffix.ends_with("norm.weight")) p.transform = Transform::AddOne;
                if (suffix.ends_with("norm.weight") && t.shape.size() != 1)
                    fail("norm tensor '" + n + "' is not 1-D");
            }
        } else {
            fail("tensor '" + n + "' has no GGUF name for " + c.arch);
        }
        if (gemma && n == "model.norm.weight") p.transform = Transform::AddOne;
        plans.push_back(std::move(p));
    }

    auto has = [&](const std::string& name) {
        for (const auto& p : plans)
            if (p.name == name) return true;
        return false;
    };
    if (!has("token_embd.weight")) fail("model has no model.embed_tokens.weight");
    if (!has("output_norm.weight")) fail("model has no model.norm.weight");
    for (uint64_t l = 0; l < c.n_layer; ++l)
        if (!has("blk." + std::to_string(l) + ".attn_norm.weight"))
            fail("layer " + std::to_string(l) + " has no input_layernorm (num_hidden_layers " +
                 std::to_string(c.n_layer) + ")");
    if (!c.tie_embeddings && !has("output.weight") && !model.find("lm_head.weight"))
        fail("tie_word_embeddings is false but there is no lm_head.weight");

    if (c.rope_scaling.type == "llama3") {
        TensorPlan p;
        p.name = "rope_freqs.weight";
        p.generated = llama3_rope_factors(c);
        p.shape = {p.generated.size()};
        p.transform = Transform::Generated;
        plans.push_back(std::move(p));
    }
    return plans;
}

}  // namespace tandem::hf

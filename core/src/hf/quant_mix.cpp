// llama-quantize's per-tensor type choice for the file types we produce (facts from llama.cpp's
// llama-quant.cpp, restated): which tensors may be quantised at all, which get more bits
// (output / tied embeddings, attn_v and ffn_down of some layers), and the fallbacks for row
// lengths that are not a multiple of the chosen type's block size.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <numeric>

#include "tandem/common/error.h"
#include "tandem/hf/quantize.h"

namespace tandem::hf {
namespace {

struct SchemeInfo {
    QuantScheme scheme;
    std::string_view name;
    uint32_t file_type;
    DType base;
};

constexpr std::array<SchemeInfo, 5> kSchemes = {{
    {QuantScheme::Q8_0, "Q8_0", 7, DType::Q8_0},
    {QuantScheme::Q4_0, "Q4_0", 2, DType::Q4_0},
    {QuantScheme::Q4_K_M, "Q4_K_M", 15, DType::Q4_K},
    {QuantScheme::Q5_K_M, "Q5_K_M", 17, DType::Q5_K},
    {QuantScheme::Q6_K, "Q6_K", 18, DType::Q6_K},
}};

const SchemeInfo& info(QuantScheme s) {
    for (const auto& i : kSchemes)
        if (i.scheme == s) return i;
    throw Error("quantize: unknown scheme");
}

// Substrings of tensors llama.cpp never quantises (small or precision-critical ones), beyond the
// 1-D / norm / non-weight rules.
constexpr std::string_view kKeepSubstrings[] = {
    "ffn_gate_inp.weight",
    "ffn_gate_tid2eid.weight",
    "altup",
    "laurel",
    "per_layer_model_proj",
    "ssm_conv1d",
    "shortconv.conv.weight",
    "indexer.k_proj.weight",
    "indexer.q_proj.weight",
    "time_mix_first.weight",
    "time_mix_w0.weight",
    "time_mix_w1.weight",
    "time_mix_w2.weight",
    "time_mix_v0.weight",
    "time_mix_v1.weight",
    "time_mix_v2.weight",
    "time_mix_a0.weight",
    "time_mix_a1.weight",
    "time_mix_a2.weight",
    "time_mix_g1.weight",
    "time_mix_g2.weight",
    "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight",
    "attn_rel_b.weight",
    ".position_embd",
    "sam.pos_embd",
    "sam.neck.",
    "sam.net_",
    ".rel_pos",
    ".patch_embd",
    ".patch_merger",
    "a.rvq.codebook",
};

bool contains(const std::string& s, std::string_view part) {
    return s.find(part) != std::string::npos;
}

// ggml_n_dims: trailing dimensions of 1 do not count.
size_t n_dims(const std::vector<uint64_t>& shape) {
    size_t n = shape.size();
    while (n > 1 && shape[n - 1] == 1) --n;
    return n;
}

bool may_quantize(const TensorDesc& t) {
    if (n_dims(t.shape) < 2) return false;
    const std::string& n = t.name;
    if (!n.ends_with("weight") || contains(n, "_norm.weight")) return false;
    if (n == "position_embd.weight" || n == "token_types.weight") return false;
    if (contains(n, "mm.a.code_embd")) return false;
    for (auto part : kKeepSubstrings)
        if (contains(n, part)) return false;
    return true;
}

enum class Category {
    TokenEmbd,
    AttnQ,
    AttnV,
    AttnK,
    AttnQkv,
    AttnKvB,
    AttnOut,
    FfnUp,
    FfnGate,
    FfnDown,
    Output,
    Other
};

Category category(const std::string& n) {
    if (n == "output.weight") return Category::Output;
    if (n == "token_embd.weight" || n == "per_layer_token_embd.weight") return Category::TokenEmbd;
    if (contains(n, "attn_qkv.weight")) return Category::AttnQkv;
    if (contains(n, "attn_kv_b.weight")) return Category::AttnKvB;
    if (contains(n, "attn_v.weight")) return Category::AttnV;
    if (contains(n, "attn_k.weight")) return Category::AttnK;
    if (contains(n, "attn_q.weight")) return Category::AttnQ;
    if (contains(n, "attn_output.weight")) return Category::AttnOut;
    if (contains(n, "ffn_up")) return Category::FfnUp;
    if (contains(n, "ffn_gate")) return Category::FfnGate;
    if (contains(n, "ffn_down")) return Category::FfnDown;
    return Category::Other;
}

// attn_v and the fused tensors that contain V get attn_v's treatment.
bool attn_v_like(Category c) {
    return c == Category::AttnV || c == Category::AttnQkv || c == Category::AttnKvB;
}

int layer_of(const std::string& name) {
    int layer = -1;
    std::sscanf(name.c_str(), "blk.%d.", &layer);
    return layer;
}

// The first and last eighth of the layers and every third one in between.
bool use_more_bits(int64_t i, int64_t n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

bool is_70b(const MixFacts& f) {
    if (f.arch == "llama") return f.n_layer == 80 && f.n_head != f.n_head_kv;
    if (f.arch == "qwen2" || f.arch == "deci" || f.arch == "olmo") return f.n_layer == 80;
    if (f.arch == "jais2") return f.n_layer == 68;
    return false;
}

uint32_t block(DType t) {
    return dtype_traits(t).block_elems;
}

struct Counters {
    int64_t n_attn_v = 0, i_attn_v = 0, i_ffn_down = 0;
    bool tied_embeddings = true;
};

DType mix_rule(const TensorDesc& t, Category cat, QuantScheme s, const MixFacts& f, Counters& c) {
    const DType base = info(s).base;
    DType type = base;
    const bool falcon = f.arch == "falcon";
    const bool km = s == QuantScheme::Q4_K_M || s == QuantScheme::Q5_K_M;
    if (cat == Category::Output || (c.tied_embeddings && cat == Category::TokenEmbd)) {
        // The output projection (or the embeddings that double as it) gets Q6_K unless the
        // file is Q8_0; Q8_0 when the rows do not fit the base type's blocks.
        if (falcon || t.shape[0] % block(base) != 0)
            type = DType::Q8_0;
        else if (base != DType::Q8_0)
            type = DType::Q6_K;
    } else if (attn_v_like(cat)) {
        if (km && use_more_bits(c.i_attn_v, c.n_attn_v)) type = DType::Q6_K;
        if (is_70b(f) && type == DType::Q4_K) type = DType::Q5_K;
        if (f.n_expert == 8) type = DType::Q8_0;
        ++c.i_attn_v;
    } else if (cat == Category::AttnK) {
        if (f.n_expert == 8) type = DType::Q8_0;
    } else if (cat == Category::FfnDown) {
        int64_t i_layer = c.i_ffn_down;
        const int64_t n_layer = f.n_layer;
        if (f.n_expert > 1) {
            // MoE expert tensors are not in layer order: the layer comes from the name.
            i_layer = layer_of(t.name);
            if (i_layer < 0 || i_layer >= n_layer)
                throw Error("quantize: cannot tell the layer of tensor '" + t.name + "' (" +
                            std::to_string(n_layer) + " layers)");
        }
        if (s == QuantScheme::Q4_K_M) {
            if (falcon)
                type = i_layer < n_layer / 16            ? DType::Q6_K
                       : use_more_bits(i_layer, n_layer) ? DType::Q5_K
                                                         : DType::Q4_K;
            else if (use_more_bits(i_layer, n_layer))
                type = DType::Q6_K;
        } else if (s == QuantScheme::Q5_K_M && use_more_bits(i_layer, n_layer)) {
            type = DType::Q6_K;
        }
        ++c.i_ffn_down;
    } else if (cat == Category::AttnOut) {
        if (!falcon && f.n_expert == 8 && s == QuantScheme::Q4_K_M) type = DType::Q5_K;
    }
    return type;
}

// A type whose block does not divide the row length falls back to a 32-element type, and to
// F16 when even that does not fit.
DType fallback(DType type, uint64_t ncols, bool& fell_back) {
    if (ncols % block(type) == 0) return type;
    fell_back = true;
    switch (type) {
        case DType::Q4_K:
            type = DType::Q5_0;
            break;
        case DType::Q5_K:
            type = DType::Q5_1;
            break;
        case DType::Q6_K:
            type = DType::Q8_0;
            break;
        default:
            break;  // a 32-element type: only F16 is left
    }
    if (ncols % block(type) != 0) type = DType::F16;
    return type;
}

}  // namespace

std::optional<QuantScheme> quant_scheme_from_name(std::string_view name) {
    for (const auto& i : kSchemes) {
        if (i.name.size() != name.size()) continue;
        bool same = true;
        for (size_t k = 0; k < name.size(); ++k)
            same &= std::toupper(static_cast<unsigned char>(name[k])) == i.name[k];
        if (same) return i.scheme;
    }
    return std::nullopt;
}

std::string_view quant_scheme_name(QuantScheme s) {
    return info(s).name;
}

std::string quant_scheme_names() {
    std::string out;
    for (const auto& i : kSchemes) {
        if (!out.empty()) out += ", ";
        for (char ch : i.name)
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    return out;
}

uint32_t file_type_of(QuantScheme s) {
    return info(s).file_type;
}

DType base_type(QuantScheme s) {
    return info(s).base;
}

std::vector<TypeChoice> plan_quant_types(const std::vector<TensorDesc>& tensors, QuantScheme s,
                                         const MixFacts& facts) {
    // llama-quantize walks tensors ordered by layer (non-layer tensors first), then by name; the
    // attn_v / ffn_down counters follow that order.
    std::vector<size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const int la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
        if (la != lb) return la < lb;
        return tensors[a].name < tensors[b].name;
    });
    Counters c;
    for (const auto& t : tensors) {
        const Category cat = category(t.name);
        if (attn_v_like(cat)) ++c.n_attn_v;
        if (cat == Category::Output) c.tied_embeddings = false;
    }
    std::vector<TypeChoice> out(tensors.size());
    for (size_t i : order) {
        const TensorDesc& t = tensors[i];
        TypeChoice& choice = out[i];
        if (t.shape.empty() || !may_quantize(t)) {
            choice.type = t.type;
            continue;
        }
        choice.quantized = true;
        const DType mixed = mix_rule(t, category(t.name), s, facts, c);
        choice.type = fallback(mixed, t.shape[0], choice.fallback);
    }
    return out;
}

}  // namespace tandem::hf

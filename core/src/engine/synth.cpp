#include "tandem/engine/synth.h"

#include <cstring>
#include <map>
#include <random>

#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"
#include "tandem/quant/quant.h"

namespace tandem::engine {

namespace {

struct Shape {
    std::string arch;
    int64_t n_vocab, n_embd, n_layer, n_head, n_kv_head, head_dim, n_ff;
    float rope_base;
    bool tied;
    int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
    int64_t n_ctx = 131072;
};

// Published configs (config.json of each model on Hugging Face).
const std::map<std::string, Shape>& shapes() {
    static const std::map<std::string, Shape> s = {
        {"llama-3.2-1b", {"llama", 128256, 2048, 16, 32, 8, 64, 8192, 500000.0f, true}},
        {"llama-3.1-8b", {"llama", 128256, 4096, 32, 32, 8, 128, 14336, 500000.0f, false}},
        {"llama-3.1-70b", {"llama", 128256, 8192, 80, 64, 8, 128, 28672, 500000.0f, false}},
        {"qwen2.5-7b", {"qwen2", 152064, 3584, 28, 28, 4, 128, 18944, 1000000.0f, false}},
        {"qwen3-8b", {"qwen3", 151936, 4096, 36, 32, 8, 128, 12288, 1000000.0f, false}},
        {"qwen3-30b-a3b",
         {"qwen3moe", 151936, 2048, 48, 32, 4, 128, 6144, 1000000.0f, false, 128, 8, 768, 40960}},
        {"tiny-llama", {"llama", 512, 256, 2, 4, 2, 64, 512, 10000.0f, false, 0, 0, 0, 2048}},
        {"tiny-qwen2", {"qwen2", 512, 256, 2, 4, 2, 64, 512, 1000000.0f, false, 0, 0, 0, 2048}},
        {"tiny-qwen3moe",
         {"qwen3moe", 512, 256, 2, 4, 2, 64, 512, 1000000.0f, false, 4, 2, 256, 2048}},
    };
    return s;
}

// Rows for a tensor come from a small pool of quantised random rows (std 0.02, the usual init),
// picked pseudo-randomly: writing a 70B model then costs disk bandwidth, not quantisation time.
class RowPool {
  public:
    RowPool(DType type, int64_t n, uint64_t seed, int count = 61)
        : rb_(row_bytes(type, uint64_t(n))) {
        std::mt19937_64 rng(seed);
        std::normal_distribution<float> d(0.0f, 0.02f);
        std::vector<float> f(static_cast<size_t>(n));
        pool_.resize(rb_ * static_cast<size_t>(count));
        for (int r = 0; r < count; ++r) {
            for (auto& v : f) v = d(rng);
            quant::quantize_row(type, f.data(), pool_.data() + rb_ * r, n);
        }
        count_ = count;
    }
    void fill(uint8_t* dst, uint64_t nbytes, uint64_t salt) const {
        for (uint64_t off = 0, r = salt; off < nbytes;
             off += rb_, r = r * 6364136223846793005ull + 1442695040888963407ull)
            std::memcpy(dst + off, pool_.data() + rb_ * ((r >> 33) % count_), rb_);
    }

  private:
    size_t rb_;
    int count_ = 0;
    std::vector<uint8_t> pool_;
};

}  // namespace

std::vector<std::string> synthetic_model_names() {
    std::vector<std::string> n;
    for (const auto& [k, v] : shapes()) n.push_back(k);
    return n;
}

void write_synthetic_model(const std::string& like, DType type, const std::filesystem::path& out,
                           uint64_t seed) {
    auto it = shapes().find(like);
    if (it == shapes().end()) {
        std::string known;
        for (const auto& n : synthetic_model_names()) known += (known.empty() ? "" : ", ") + n;
        throw Error("synth: unknown model '" + like + "' (known: " + known + ")");
    }
    const Shape& s = it->second;
    if (!quant::can_quantize(type))
        throw Error("synth: cannot write weights of type " + std::string(dtype_name(type)));
    const auto& tr = dtype_traits(type);
    for (int64_t n : {s.n_embd, s.n_head * s.head_dim, s.n_ff, s.n_ff_exp})
        if (n > 0 && n % tr.block_elems)
            throw Error("synth: " + like + " has rows of " + std::to_string(n) +
                        ", not a multiple of the " + std::string(tr.name) + " block (" +
                        std::to_string(tr.block_elems) + ")");

    const std::string a = s.arch;
    gguf::Writer w;
    w.set("general.architecture", gguf::Value::string(a));
    w.set("general.name", gguf::Value::string("synthetic " + like));
    w.set("general.file_type", gguf::Value::u32(0));
    w.set(a + ".context_length", gguf::Value::u32(static_cast<uint32_t>(s.n_ctx)));
    w.set(a + ".embedding_length", gguf::Value::u32(static_cast<uint32_t>(s.n_embd)));
    w.set(a + ".block_count", gguf::Value::u32(static_cast<uint32_t>(s.n_layer)));
    w.set(a + ".feed_forward_length", gguf::Value::u32(static_cast<uint32_t>(s.n_ff)));
    w.set(a + ".attention.head_count", gguf::Value::u32(static_cast<uint32_t>(s.n_head)));
    w.set(a + ".attention.head_count_kv", gguf::Value::u32(static_cast<uint32_t>(s.n_kv_head)));
    w.set(a + ".attention.key_length", gguf::Value::u32(static_cast<uint32_t>(s.head_dim)));
    w.set(a + ".attention.value_length", gguf::Value::u32(static_cast<uint32_t>(s.head_dim)));
    w.set(a + ".rope.dimension_count", gguf::Value::u32(static_cast<uint32_t>(s.head_dim)));
    w.set(a + ".rope.freq_base", gguf::Value::f32(s.rope_base));
    w.set(a + ".attention.layer_norm_rms_epsilon", gguf::Value::f32(1e-5f));
    w.set(a + ".vocab_size", gguf::Value::u32(static_cast<uint32_t>(s.n_vocab)));
    // No vocabulary, only its size: llama.cpp then makes vocab_size placeholder tokens, so the
    // same file runs in llama-bench for side-by-side numbers (tests/bench).
    w.set("tokenizer.ggml.model", gguf::Value::string("none"));
    if (s.n_expert) {
        w.set(a + ".expert_count", gguf::Value::u32(static_cast<uint32_t>(s.n_expert)));
        w.set(a + ".expert_used_count", gguf::Value::u32(static_cast<uint32_t>(s.n_expert_used)));
        w.set(a + ".expert_feed_forward_length",
              gguf::Value::u32(static_cast<uint32_t>(s.n_ff_exp)));
    }

    // Pools by row length; shared by every tensor with that row length.
    auto pools = std::make_shared<std::map<int64_t, RowPool>>();
    auto pool = [pools, type, seed](int64_t n) -> const RowPool& {
        auto p = pools->find(n);
        if (p == pools->end()) p = pools->emplace(n, RowPool(type, n, seed + uint64_t(n))).first;
        return p->second;
    };
    uint64_t salt = seed;
    auto matrix = [&](const std::string& name, std::vector<uint64_t> shape) {
        const int64_t n = static_cast<int64_t>(shape[0]);
        const RowPool& p = pool(n);
        const uint64_t my_salt = ++salt * 0x9E3779B97F4A7C15ull;
        w.add_tensor(name, type, std::move(shape), [&p, my_salt](uint8_t* dst, uint64_t nbytes) {
            p.fill(dst, nbytes, my_salt);
        });
    };
    auto ones = [&](const std::string& name, uint64_t n) {
        w.add_tensor(name, DType::F32, {n}, [](uint8_t* dst, uint64_t nbytes) {
            const float one = 1.0f;
            for (uint64_t i = 0; i < nbytes; i += 4) std::memcpy(dst + i, &one, 4);
        });
    };
    // Biases (Qwen2's q/k/v): random, std 0.02 as the matrices, so they move the outputs.
    auto biases = [&](const std::string& name, uint64_t n) {
        const uint64_t my_seed = seed + ++salt;
        w.add_tensor(name, DType::F32, {n}, [my_seed](uint8_t* dst, uint64_t nbytes) {
            std::mt19937 rng(static_cast<uint32_t>(my_seed));
            std::normal_distribution<float> d(0.0f, 0.02f);
            for (uint64_t i = 0; i < nbytes; i += 4) {
                const float v = d(rng);
                std::memcpy(dst + i, &v, 4);
            }
        });
    };
    const auto E = uint64_t(s.n_embd), V = uint64_t(s.n_vocab), HD = uint64_t(s.head_dim);
    matrix("token_embd.weight", {E, V});
    if (a == "llama") ones("rope_freqs.weight", HD / 2);
    for (int64_t il = 0; il < s.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        ones(p + "attn_norm.weight", E);
        matrix(p + "attn_q.weight", {E, uint64_t(s.n_head) * HD});
        matrix(p + "attn_k.weight", {E, uint64_t(s.n_kv_head) * HD});
        matrix(p + "attn_v.weight", {E, uint64_t(s.n_kv_head) * HD});
        if (a == "qwen2") {
            biases(p + "attn_q.bias", uint64_t(s.n_head) * HD);
            biases(p + "attn_k.bias", uint64_t(s.n_kv_head) * HD);
            biases(p + "attn_v.bias", uint64_t(s.n_kv_head) * HD);
        }
        if (a == "qwen3" || a == "qwen3moe") {
            ones(p + "attn_q_norm.weight", HD);
            ones(p + "attn_k_norm.weight", HD);
        }
        matrix(p + "attn_output.weight", {uint64_t(s.n_head) * HD, E});
        ones(p + "ffn_norm.weight", E);
        if (s.n_expert) {
            const auto X = uint64_t(s.n_expert), F = uint64_t(s.n_ff_exp);
            w.add_tensor(p + "ffn_gate_inp.weight", DType::F32, {E, X},
                         [seed, il](uint8_t* dst, uint64_t nbytes) {
                             std::mt19937 rng(static_cast<uint32_t>(seed + uint64_t(il)));
                             std::normal_distribution<float> d(0.0f, 0.02f);
                             for (uint64_t i = 0; i < nbytes; i += 4) {
                                 float v = d(rng);
                                 std::memcpy(dst + i, &v, 4);
                             }
                         });
            matrix(p + "ffn_gate_exps.weight", {E, F, X});
            matrix(p + "ffn_up_exps.weight", {E, F, X});
            matrix(p + "ffn_down_exps.weight", {F, E, X});
        } else {
            matrix(p + "ffn_gate.weight", {E, uint64_t(s.n_ff)});
            matrix(p + "ffn_up.weight", {E, uint64_t(s.n_ff)});
            matrix(p + "ffn_down.weight", {uint64_t(s.n_ff), E});
        }
    }
    ones("output_norm.weight", E);
    if (!s.tied) matrix("output.weight", {E, V});
    w.write(out);
}

}  // namespace tandem::engine

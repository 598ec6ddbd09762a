#pragma once
// Test models for the planner: a llama-shaped GGUF with chosen dimensions (enough KV heads to
// split 2, 3 and 4 ways), q8_0 matrices from a small pool of quantised random rows (written at
// disk speed), and the hf-tiny fixtures converted with tandem's own converter.
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tandem/gguf/gguf.h"
#include "tandem/quant/quant.h"

namespace tandem::test {

struct LlamaShape {
    int64_t n_vocab = 4096, n_embd = 1024, n_layer = 4, n_head = 16, n_kv_head = 8, head_dim = 64,
            n_ff = 3072, n_ctx = 4096;
};

inline void write_llama(const std::filesystem::path& out, const LlamaShape& s,
                        DType type = DType::Q8_0) {
    gguf::Writer w;
    const std::string a = "llama";
    auto u32 = [](int64_t v) { return gguf::Value::u32(static_cast<uint32_t>(v)); };
    w.set("general.architecture", gguf::Value::string(a));
    w.set(a + ".context_length", u32(s.n_ctx));
    w.set(a + ".embedding_length", u32(s.n_embd));
    w.set(a + ".block_count", u32(s.n_layer));
    w.set(a + ".feed_forward_length", u32(s.n_ff));
    w.set(a + ".attention.head_count", u32(s.n_head));
    w.set(a + ".attention.head_count_kv", u32(s.n_kv_head));
    w.set(a + ".attention.key_length", u32(s.head_dim));
    w.set(a + ".attention.value_length", u32(s.head_dim));
    w.set(a + ".rope.dimension_count", u32(s.head_dim));
    w.set(a + ".rope.freq_base", gguf::Value::f32(10000.0f));
    w.set(a + ".attention.layer_norm_rms_epsilon", gguf::Value::f32(1e-5f));
    w.set(a + ".vocab_size", u32(s.n_vocab));
    auto matrix = [&](const std::string& name, int64_t cols, int64_t rows) {
        w.add_tensor(name, type, {uint64_t(cols), uint64_t(rows)},
                     [cols, type](uint8_t* dst, uint64_t nbytes) {
                         std::mt19937 rng(static_cast<uint32_t>(cols));
                         std::normal_distribution<float> d(0.0f, 0.02f);
                         std::vector<float> f(static_cast<size_t>(cols));
                         for (auto& v : f) v = d(rng);
                         const uint64_t rb = row_bytes(type, uint64_t(cols));
                         std::vector<uint8_t> row(rb);
                         quant::quantize_row(type, f.data(), row.data(), cols);
                         for (uint64_t off = 0; off < nbytes; off += rb)
                             std::memcpy(dst + off, row.data(), rb);
                     });
    };
    auto ones = [&](const std::string& name, int64_t n) {
        w.add_tensor(name, DType::F32, {uint64_t(n)}, [](uint8_t* dst, uint64_t nbytes) {
            const float one = 1.0f;
            for (uint64_t i = 0; i < nbytes; i += 4) std::memcpy(dst + i, &one, 4);
        });
    };
    const int64_t E = s.n_embd, Q = s.n_head * s.head_dim, KV = s.n_kv_head * s.head_dim;
    matrix("token_embd.weight", E, s.n_vocab);
    for (int64_t il = 0; il < s.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        ones(p + "attn_norm.weight", E);
        matrix(p + "attn_q.weight", E, Q);
        matrix(p + "attn_k.weight", E, KV);
        matrix(p + "attn_v.weight", E, KV);
        matrix(p + "attn_output.weight", Q, E);
        ones(p + "ffn_norm.weight", E);
        matrix(p + "ffn_gate.weight", E, s.n_ff);
        matrix(p + "ffn_up.weight", E, s.n_ff);
        matrix(p + "ffn_down.weight", s.n_ff, E);
    }
    ones("output_norm.weight", E);
    matrix("output.weight", E, s.n_vocab);
    w.write(out);
}

}  // namespace tandem::test

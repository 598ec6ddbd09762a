#pragma once
// A model as the engine runs it: hyper-parameters read from GGUF metadata (llama.cpp's keys) and a
// plain struct of weights, each a view into the file mapping or, for column slices of a
// tensor-parallel shard, into a buffer the loader assembled. Shapes are given as
// [rows, cols] in comments (ggml shape {cols, rows}).
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tandem/backend/graph.h"
#include "tandem/common/dtype.h"
#include "tandem/gguf/gguf.h"

namespace tandem::engine {

enum class Arch { Llama, Qwen2, Qwen3, Qwen3Moe, Gemma3 };
const char* arch_name(Arch a);  // GGUF general.architecture spelling

struct HParams {
    Arch arch = Arch::Llama;
    int64_t n_vocab = 0, n_embd = 0, n_layer = 0, n_ff = 0, n_ctx_train = 0;
    int64_t n_head = 0, n_kv_head = 0, head_dim = 0;  // head_dim: key_length (== value_length)
    int64_t n_rot = 0;
    float rms_eps = 1e-5f;
    float rope_base = 10000.0f, rope_base_swa = 10000.0f, rope_scale = 1.0f;
    RopeMode rope_mode = RopeMode::Normal;
    int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
    bool expert_norm = false;    // renormalise the top-k routing weights
    int64_t sliding_window = 0;  // 0: none
    int swa_period = 0;          // every swa_period-th layer is global (gemma3: 6); 0: all global
    float attn_scale = 0.0f;     // multiplies q.k; 1/sqrt(head_dim) unless the arch says otherwise
    float attn_softcap = 0.0f, final_softcap = 0.0f;
    float embd_scale = 1.0f;  // gemma: sqrt(n_embd)

    bool is_swa_layer(int64_t il) const {
        return sliding_window > 0 && swa_period > 0 && (il + 1) % swa_period != 0;
    }
};

// Reads the hyper-parameters of a supported architecture; throws tandem::Error naming the file
// and key for an unknown architecture or a missing/inconsistent key.
HParams read_hparams(const gguf::File& file);

// What part of the model one tensor-parallel rank holds. Ranges are half-open and in units of
// heads, FFN columns, experts and vocabulary rows. One rank holds everything.
struct ShardSpec {
    int rank = 0, n_ranks = 1;
    int64_t kv_head_begin = 0, kv_head_end = 0;
    // Q heads; -1: the whole groups of the KV heads above. A split over more ranks than KV heads
    // gives each rank part of one group, and the group's KV head is replicated on those ranks.
    int64_t q_head_begin = -1, q_head_end = -1;
    int64_t ff_begin = 0, ff_end = 0;            // dense FFN columns
    int64_t expert_begin = 0, expert_end = 0;
    int64_t vocab_begin = 0, vocab_end = 0;  // output-head rows

    static ShardSpec whole(const HParams& hp);
    // Even split of rank `rank` of n: kv heads, FFN columns in multiples of `ff_align`
    // (a quant block), experts and vocab rows. Throws when the model cannot be split n ways.
    static ShardSpec even(const HParams& hp, int rank, int n, int64_t ff_align = 256);

    int64_t q_begin(const HParams& hp) const {
        return q_head_begin >= 0 ? q_head_begin : kv_head_begin * (hp.n_head / hp.n_kv_head);
    }
    int64_t q_end(const HParams& hp) const {
        return q_head_end >= 0 ? q_head_end : kv_head_end * (hp.n_head / hp.n_kv_head);
    }
};

// One weight: ggml shape {ne0, ne1, ne2}, bytes on the host, and its slot in the backend.
struct Weight {
    std::string name;
    DType type = DType::F32;
    std::array<int64_t, 3> ne{0, 1, 1};
    const uint8_t* data = nullptr;
    uint64_t nbytes = 0;
    int slot = -1;
    // Named by the loader when the file has it; data may be null in a layout-only model.
    bool present() const { return !name.empty(); }
};

struct Layer {
    Weight attn_norm;           // [n_embd]
    Weight wq, wk, wv;          // [n_head_l*head_dim, n_embd], [n_kv_l*head_dim, n_embd] (x2)
    Weight bq, bk, bv;          // qwen2: [n_head_l*head_dim], [n_kv_l*head_dim] (x2)
    Weight q_norm, k_norm;      // qwen3/gemma3: [head_dim]
    Weight wo;                  // [n_embd, n_head_l*head_dim]
    Weight post_attn_norm;      // gemma3: [n_embd]
    Weight ffn_norm;            // [n_embd]
    Weight ffn_gate, ffn_up;    // [n_ff_l, n_embd]
    Weight ffn_down;            // [n_embd, n_ff_l]
    Weight post_ffn_norm;       // gemma3: [n_embd]
    Weight ffn_router;          // moe: [n_expert, n_embd] (replicated)
    Weight gate_exps, up_exps;  // moe: [n_expert_l][n_ff_exp, n_embd]
    Weight down_exps;           // moe: [n_expert_l][n_embd, n_ff_exp]

    // Every weight field, in the one order that slots, uploads and plans use.
    template <class F>
    void for_each_weight(F f) {
        for (Weight* w : {&attn_norm,
                          &wq,
                          &wk,
                          &wv,
                          &bq,
                          &bk,
                          &bv,
                          &q_norm,
                          &k_norm,
                          &wo,
                          &post_attn_norm,
                          &ffn_norm,
                          &ffn_gate,
                          &ffn_up,
                          &ffn_down,
                          &post_ffn_norm,
                          &ffn_router,
                          &gate_exps,
                          &up_exps,
                          &down_exps})
            f(*w);
    }
    template <class F>
    void for_each_weight(F f) const {
        const_cast<Layer*>(this)->for_each_weight(
            [&](Weight& w) { f(static_cast<const Weight&>(w)); });
    }
};

struct Model {
    HParams hp;
    ShardSpec shard;
    std::shared_ptr<const gguf::File> file;  // keeps the mapping the weights point into
    Weight tok_embd;                         // [n_vocab, n_embd] (replicated)
    Weight rope_freqs;                       // llama 3: [n_rot/2] frequency divisors (optional)
    std::vector<Layer> layers;
    Weight output_norm;                             // [n_embd]
    Weight output;                                  // [vocab_l, n_embd] (tok_embd rows when tied)
    std::vector<std::unique_ptr<uint8_t[]>> owned;  // column slices assembled by the loader

    // Every present weight, in slot order.
    std::vector<const Weight*> weights() const;
    uint64_t weight_bytes() const;
    // Local head counts of this shard.
    int64_t n_kv_head_local() const { return shard.kv_head_end - shard.kv_head_begin; }
    int64_t n_head_local() const { return shard.q_end(hp) - shard.q_begin(hp); }
};

// Loads the weights this shard needs (whole model for ShardSpec::whole). Throws tandem::Error
// naming the tensor when one is missing or has an unexpected shape.
std::shared_ptr<Model> load_model(std::shared_ptr<const gguf::File> file, const ShardSpec& shard);
std::shared_ptr<Model> load_model(const std::filesystem::path& path);
// The same model without data: names, types, this shard's shapes and sizes, slots; every
// Weight::data is null. Reads only the tensor table, so `file` need not be mapped (a planner
// sizes memory from it; a shard loader reads the bytes itself).
std::shared_ptr<Model> load_layout(std::shared_ptr<const gguf::File> file, const ShardSpec& shard);

}  // namespace tandem::engine

#pragma once
// The CPU backend's kernels, one function per graph op, on raw row-major f32 data. Each splits
// its work over the pool; scratch they need comes from CpuWorkspace (grown once, then reused, so a
// decode step allocates nothing).
#include <cstdint>
#include <vector>

#include "tandem/backend/graph.h"
#include "tandem/common/dtype.h"
#include "tandem/quant/quant.h"
#include "thread_pool.h"

namespace tandem::cpu {

struct CpuWorkspace {
    quant::Activations act;                               // activations prepared for one matmul
    std::vector<std::vector<float>> per_thread;           // attention scores, dequantised rows
    std::vector<float> rope_table;                        // cos/sin of the step's positions
    std::vector<float> moe_x, moe_gate, moe_up, moe_out;  // gathered rows of one expert
    std::vector<int32_t> moe_rows;
    std::vector<float> gather;  // all-gather staging
    std::vector<size_t> gather_sizes;
    float* thread_buffer(int thread, size_t n) {
        auto& b = per_thread[static_cast<size_t>(thread)];
        if (b.size() < n) b.resize(n);
        return b.data();
    }
};

struct WeightRef {
    DType type;
    const uint8_t* data;
    int64_t n_in, n_out, n_expert;
    size_t row_bytes() const { return tandem::row_bytes(type, static_cast<uint64_t>(n_in)); }
};

void op_get_rows(ThreadPool& pool, const WeightRef& table, const int32_t* ids, int64_t n,
                 float* out);
void op_rms_norm(ThreadPool& pool, const float* x, const float* w, int64_t group, int64_t n_groups,
                 float eps, float* out);
// y[t, o] = W[o,:] . x[t,:] (+ bias[o]); x [n_tokens, n_in], y [n_tokens, n_out].
void op_mat_mul(ThreadPool& pool, CpuWorkspace& ws, const WeightRef& w, const float* x,
                int64_t n_tokens, const float* bias, float* y);
void op_binary(ThreadPool& pool, Op op, const float* a, const float* b, int64_t n, float* out);
void op_scale(ThreadPool& pool, const float* a, float s, int64_t n, float* out);
void op_softcap(ThreadPool& pool, const float* a, float cap, int64_t n, float* out);
void op_gated(ThreadPool& pool, Activation act, const float* gate, const float* up, int64_t n,
              float* out);

struct RopeParams {
    int64_t head_dim, n_rot;
    RopeMode mode;
    float freq_base, freq_scale;
    const float* freq_factors;  // [n_rot/2] or nullptr
};
void op_rope(ThreadPool& pool, CpuWorkspace& ws, const float* x, const int32_t* pos,
             int64_t n_tokens, int64_t width, const RopeParams& p, float* out);

// Rows [n_past, n_past + n_tokens) of the cache (type F16/F32, width elements a row) = src.
void op_kv_store(ThreadPool& pool, const float* src, int64_t n_tokens, int64_t width, DType type,
                 uint8_t* cache, int32_t n_past);

struct AttentionParams {
    int64_t n_head, n_kv_head, head_dim, window;
    float scale, softcap;
    DType kv_type;
    int64_t n_ctx;  // cache rows: scratch is sized by it so it never grows while decoding
};
// q [n_tokens, n_head*head_dim] at positions n_past..; K/V caches hold rows 0..n_past+n_tokens-1.
void op_attention(ThreadPool& pool, CpuWorkspace& ws, const float* q, int64_t n_tokens,
                  int32_t n_past, const uint8_t* k_cache, const uint8_t* v_cache,
                  const AttentionParams& p, float* out);

// route [n_tokens, 2k]: (expert id, weight) pairs; softmax over n_expert logits, top-k.
void op_moe_route(const float* logits, int64_t n_tokens, int64_t n_expert, int k, bool normalize,
                  float* route);
// out [n_tokens, n_embd] = sum over the chosen experts held here (ids first_expert..+n_local).
void op_moe_ffn(ThreadPool& pool, CpuWorkspace& ws, const float* x, int64_t n_tokens,
                const float* route, int k, const WeightRef& gate, const WeightRef& up,
                const WeightRef& down, int first_expert, Activation act, float* out);

}  // namespace tandem::cpu

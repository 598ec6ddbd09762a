// Causal attention over the KV cache (cache row = position), GQA, optional sliding window and
// logit softcap. One task per (token, head); scores live in a per-thread buffer.
#include <algorithm>
#include <cmath>

#include "cpu_ops.h"
#include "parallel.h"

namespace tandem::cpu {

void op_attention(ThreadPool& pool, CpuWorkspace& ws, const float* q, int64_t n_tokens,
                  int32_t n_past, const uint8_t* k_cache, const uint8_t* v_cache,
                  const AttentionParams& p, float* out) {
    const int64_t hd = p.head_dim;
    const int64_t kv_width = p.n_kv_head * hd;
    const size_t kv_row = row_bytes(p.kv_type, static_cast<uint64_t>(kv_width));
    const size_t head_bytes = row_bytes(p.kv_type, static_cast<uint64_t>(hd));
    const int64_t group = p.n_head / p.n_kv_head;
    const int64_t n_kv = n_past + n_tokens;
    const quant::Kernels& kdot = quant::kernels(p.kv_type);  // f16/f32 row . f32 rows
    // Query heads that share a KV head go in one task when there are enough tasks for every
    // thread: each K row is converted once for all of them (vec_dot_tile) and the V rows pass
    // once (weighted_rows_sum). Decode keeps one head per task, to spread over the threads.
    const int64_t hpt = n_tokens * p.n_kv_head >= 4 * static_cast<int64_t>(pool.size()) ? group : 1;
    const int64_t tasks_per_token = p.n_head / hpt;
    pool.run(n_tokens * tasks_per_token, [&](int64_t task, int thread) {
        const int64_t t = task / tasks_per_token, h0 = (task % tasks_per_token) * hpt;
        const int64_t kvh = h0 / group;
        const int64_t pos = n_past + t;
        const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
        const int64_t n = pos - lo + 1;
        // scores: [hpt][n] (probabilities after the softmax).
        float* scores = ws.thread_buffer(
            thread, static_cast<size_t>(hpt * std::max(n_kv, static_cast<int64_t>(p.n_ctx))));
        const float* qh = q + t * p.n_head * hd + h0 * hd;  // [hpt][hd]
        float dots[quant::kMaxTokenTile];
        for (int64_t j = 0; j < n; ++j) {
            const uint8_t* kr = k_cache + static_cast<size_t>(lo + j) * kv_row + kvh * head_bytes;
            for (int64_t k0 = 0; k0 < hpt; k0 += quant::kMaxTokenTile) {
                const int nk = static_cast<int>(std::min<int64_t>(quant::kMaxTokenTile, hpt - k0));
                kdot.vec_dot_tile(hd, kr, qh + k0 * hd, sizeof(float) * static_cast<size_t>(hd), nk,
                                  dots);
                for (int k = 0; k < nk; ++k) {
                    float s = dots[k] * p.scale;
                    if (p.softcap > 0) s = p.softcap * std::tanh(s / p.softcap);
                    scores[(k0 + k) * n + j] = s;
                }
            }
        }
        for (int64_t k = 0; k < hpt; ++k) {
            float* sk = scores + k * n;
            const float mx = *std::max_element(sk, sk + n);
            const float inv = 1.0f / quant::exp_shifted_sum(sk, n, mx);
            for (int64_t j = 0; j < n; ++j) sk[j] *= inv;
        }
        const uint8_t* v0 = v_cache + static_cast<size_t>(lo) * kv_row + kvh * head_bytes;
        quant::weighted_rows_sum(p.kv_type, v0, kv_row, n, scores, n, static_cast<int>(hpt),
                                 out + t * p.n_head * hd + h0 * hd, hd);
    });
}

}  // namespace tandem::cpu

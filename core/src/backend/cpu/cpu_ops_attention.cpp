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
    const quant::Kernels& kdot = quant::kernels(p.kv_type);  // f16/f32 row . f32 row
    pool.run(n_tokens * p.n_head, [&](int64_t task, int thread) {
        const int64_t t = task / p.n_head, h = task % p.n_head, kvh = h / group;
        const int64_t pos = n_past + t;
        const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
        const int64_t n = pos - lo + 1;
        float* buf =
            ws.thread_buffer(thread, static_cast<size_t>(std::max(n_kv, p.n_ctx) + 2 * hd));
        float* scores = buf;
        float* vrow = buf + n_kv;
        float* acc = vrow + hd;
        const float* qh = q + t * p.n_head * hd + h * hd;
        float mx = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
            const uint8_t* kr = k_cache + static_cast<size_t>(lo + j) * kv_row + kvh * head_bytes;
            float s = kdot.vec_dot(hd, kr, qh) * p.scale;
            if (p.softcap > 0) s = p.softcap * std::tanh(s / p.softcap);
            scores[j] = s;
            mx = std::max(mx, s);
        }
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += (scores[j] = std::exp(scores[j] - mx));
        const float inv = static_cast<float>(1.0 / sum);
        std::fill(acc, acc + hd, 0.0f);
        for (int64_t j = 0; j < n; ++j) {
            const uint8_t* vr = v_cache + static_cast<size_t>(lo + j) * kv_row + kvh * head_bytes;
            const float w = scores[j] * inv;
            if (p.kv_type == DType::F32) {
                const float* v = reinterpret_cast<const float*>(vr);
                for (int64_t i = 0; i < hd; ++i) acc[i] += w * v[i];
            } else {
                quant::dequantize_row(p.kv_type, vr, vrow, hd);
                for (int64_t i = 0; i < hd; ++i) acc[i] += w * vrow[i];
            }
        }
        std::copy(acc, acc + hd, out + t * p.n_head * hd + h * hd);
    });
}

}  // namespace tandem::cpu

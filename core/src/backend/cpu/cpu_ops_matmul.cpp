// Matrix products: dense matmul through the quant kernels (activations prepared once, output rows
// split over the pool) and the MoE expert FFN built from it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "cpu_ops.h"
#include "parallel.h"
#include "tandem/common/error.h"

namespace tandem::cpu {

namespace {

// y[t * y_stride + o] for o < w.n_out; weight rows start at `w_data`.
void mat_mul_prepared(ThreadPool& pool, const quant::Activations& act, DType type,
                      const uint8_t* w_data, int64_t n_in, int64_t n_out, float* y,
                      int64_t y_stride) {
    // About 128K multiply-adds per task: enough to amortise the dispatch, small enough that a
    // decode step's matmuls (one token) still spread over every thread.
    const int64_t work_per_row = std::max<int64_t>(n_in * act.n_tokens(), 1);
    const int64_t grain = std::max<int64_t>(4, (int64_t{1} << 17) / work_per_row);
    if (act.n_tokens() < quant::kGemmMinTokens) {
        parallel_ranges(pool, n_out, grain, [&](int64_t b, int64_t e, int) {
            quant::matmul(type, w_data, n_in, b, e, act, y, y_stride);
        });
        return;
    }
    // Prefill: whole GEMM panels per task (a split panel is repacked by both threads).
    constexpr int64_t P = quant::kGemmRows;
    parallel_ranges(pool, (n_out + P - 1) / P, (grain + P - 1) / P, [&](int64_t b, int64_t e, int) {
        quant::matmul(type, w_data, n_in, b * P, std::min(n_out, e * P), act, y, y_stride);
    });
}

}  // namespace

void op_mat_mul(ThreadPool& pool, CpuWorkspace& ws, const WeightRef& w, const float* x,
                int64_t n_tokens, const float* bias, float* y) {
    ws.act.prepare(w.type, x, w.n_in, n_tokens);
    mat_mul_prepared(pool, ws.act, w.type, w.data, w.n_in, w.n_out, y, w.n_out);
    if (bias)
        for (int64_t t = 0; t < n_tokens; ++t)
            for (int64_t o = 0; o < w.n_out; ++o) y[t * w.n_out + o] += bias[o];
}

void op_moe_route(const float* logits, int64_t n_tokens, int64_t n_expert, int k, bool normalize,
                  float* route) {
    // Reused across steps: decode allocates nothing here after the first token.
    thread_local std::vector<int> order;
    thread_local std::vector<float> p;
    order.resize(static_cast<size_t>(n_expert));
    p.resize(static_cast<size_t>(n_expert));
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float* l = logits + t * n_expert;
        const float mx = *std::max_element(l, l + n_expert);
        double sum = 0;
        for (int64_t e = 0; e < n_expert; ++e) sum += (p[e] = std::exp(l[e] - mx));
        for (auto& v : p) v = static_cast<float>(v / sum);
        std::iota(order.begin(), order.end(), 0);
        // Ties go to the lower expert id, as torch.topk does on CPU for equal values.
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [&](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
        float wsum = 0;
        for (int j = 0; j < k; ++j) wsum += p[order[j]];
        float* r = route + t * 2 * k;
        for (int j = 0; j < k; ++j) {
            r[2 * j] = static_cast<float>(order[j]);
            r[2 * j + 1] = normalize ? p[order[j]] / wsum : p[order[j]];
        }
    }
}

void op_moe_ffn(ThreadPool& pool, CpuWorkspace& ws, const float* x, int64_t n_tokens,
                const float* route, int k, const WeightRef& gate, const WeightRef& up,
                const WeightRef& down, int first_expert, Activation act, float* out) {
    const int64_t n_embd = gate.n_in, n_ff = gate.n_out, n_local = gate.n_expert;
    std::fill(out, out + n_tokens * n_embd, 0.0f);
    const size_t gate_bytes = gate.row_bytes() * static_cast<size_t>(n_ff);
    const size_t up_bytes = up.row_bytes() * static_cast<size_t>(n_ff);
    const size_t down_bytes = down.row_bytes() * static_cast<size_t>(n_embd);
    // Experts one at a time, each over the tokens routed to it: one weight pass per expert.
    for (int64_t le = 0; le < n_local; ++le) {
        const int expert = first_expert + static_cast<int>(le);
        ws.moe_rows.clear();
        for (int64_t t = 0; t < n_tokens; ++t)
            for (int j = 0; j < k; ++j)
                if (static_cast<int>(route[t * 2 * k + 2 * j]) == expert)
                    ws.moe_rows.push_back(static_cast<int32_t>(t * k + j));
        if (ws.moe_rows.empty()) continue;
        const auto m = static_cast<int64_t>(ws.moe_rows.size());
        ws.moe_x.resize(static_cast<size_t>(m * n_embd));
        ws.moe_gate.resize(static_cast<size_t>(m * n_ff));
        ws.moe_up.resize(static_cast<size_t>(m * n_ff));
        ws.moe_out.resize(static_cast<size_t>(m * n_embd));
        for (int64_t r = 0; r < m; ++r)
            std::memcpy(ws.moe_x.data() + r * n_embd, x + (ws.moe_rows[r] / k) * n_embd,
                        sizeof(float) * static_cast<size_t>(n_embd));
        ws.act.prepare(gate.type, ws.moe_x.data(), n_embd, m);
        mat_mul_prepared(pool, ws.act, gate.type, gate.data + le * gate_bytes, n_embd, n_ff,
                         ws.moe_gate.data(), n_ff);
        if (up.type != gate.type) ws.act.prepare(up.type, ws.moe_x.data(), n_embd, m);
        mat_mul_prepared(pool, ws.act, up.type, up.data + le * up_bytes, n_embd, n_ff,
                         ws.moe_up.data(), n_ff);
        op_gated(pool, act, ws.moe_gate.data(), ws.moe_up.data(), m * n_ff, ws.moe_gate.data());
        ws.act.prepare(down.type, ws.moe_gate.data(), n_ff, m);
        mat_mul_prepared(pool, ws.act, down.type, down.data + le * down_bytes, n_ff, n_embd,
                         ws.moe_out.data(), n_embd);
        for (int64_t r = 0; r < m; ++r) {
            const int64_t t = ws.moe_rows[r] / k, j = ws.moe_rows[r] % k;
            const float wgt = route[t * 2 * k + 2 * j + 1];
            float* o = out + t * n_embd;
            const float* src = ws.moe_out.data() + r * n_embd;
            for (int64_t i = 0; i < n_embd; ++i) o[i] += wgt * src[i];
        }
    }
}

}  // namespace tandem::cpu

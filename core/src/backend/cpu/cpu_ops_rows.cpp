// Row-wise and element-wise ops: embedding lookup, RMSNorm, add/mul/scale, activations, RoPE,
// KV store.
#include <cmath>
#include <cstring>

#include "cpu_ops.h"
#include "parallel.h"
#include "tandem/common/error.h"

namespace tandem::cpu {

void op_get_rows(ThreadPool& pool, const WeightRef& table, const int32_t* ids, int64_t n,
                 float* out) {
    for (int64_t t = 0; t < n; ++t)
        if (ids[t] < 0 || ids[t] >= table.n_out)
            throw Error("get_rows: token id " + std::to_string(ids[t]) +
                        " outside the vocabulary (" + std::to_string(table.n_out) + " rows)");
    const size_t rb = table.row_bytes();
    parallel_ranges(pool, n, 4, [&](int64_t b, int64_t e, int) {
        for (int64_t t = b; t < e; ++t)
            quant::dequantize_row(table.type, table.data + static_cast<size_t>(ids[t]) * rb,
                                  out + t * table.n_in, table.n_in);
    });
}

void op_rms_norm(ThreadPool& pool, const float* x, const float* w, int64_t group, int64_t n_groups,
                 float eps, float* out) {
    parallel_ranges(pool, n_groups, 16, [&](int64_t b, int64_t e, int) {
        for (int64_t g = b; g < e; ++g) {
            const float* xr = x + g * group;
            float* o = out + g * group;
            double ss = 0.0;
            for (int64_t i = 0; i < group; ++i) ss += double(xr[i]) * xr[i];
            const float s = static_cast<float>(1.0 / std::sqrt(ss / double(group) + eps));
            if (w)
                for (int64_t i = 0; i < group; ++i) o[i] = xr[i] * s * w[i];
            else
                for (int64_t i = 0; i < group; ++i) o[i] = xr[i] * s;
        }
    });
}

void op_binary(ThreadPool& pool, Op op, const float* a, const float* b, int64_t n, float* out) {
    parallel_ranges(pool, n, 16384, [&](int64_t lo, int64_t hi, int) {
        if (op == Op::Add)
            for (int64_t i = lo; i < hi; ++i) out[i] = a[i] + b[i];
        else
            for (int64_t i = lo; i < hi; ++i) out[i] = a[i] * b[i];
    });
}

void op_scale(ThreadPool& pool, const float* a, float s, int64_t n, float* out) {
    parallel_ranges(pool, n, 16384, [&](int64_t lo, int64_t hi, int) {
        for (int64_t i = lo; i < hi; ++i) out[i] = a[i] * s;
    });
}

void op_softcap(ThreadPool& pool, const float* a, float cap, int64_t n, float* out) {
    parallel_ranges(pool, n, 4096, [&](int64_t lo, int64_t hi, int) {
        for (int64_t i = lo; i < hi; ++i) out[i] = cap * std::tanh(a[i] / cap);
    });
}

namespace {
inline float silu(float x) {
    return x / (1.0f + std::exp(-x));
}
inline float gelu_tanh(float x) {
    constexpr float kSqrt2OverPi = 0.79788456080286535588f;
    return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
}
}  // namespace

void op_gated(ThreadPool& pool, Activation act, const float* gate, const float* up, int64_t n,
              float* out) {
    parallel_ranges(pool, n, 4096, [&](int64_t lo, int64_t hi, int) {
        if (act == Activation::Silu)
            for (int64_t i = lo; i < hi; ++i) out[i] = silu(gate[i]) * up[i];
        else
            for (int64_t i = lo; i < hi; ++i) out[i] = gelu_tanh(gate[i]) * up[i];
    });
}

void op_rope(ThreadPool& pool, CpuWorkspace& ws, const float* x, const int32_t* pos,
             int64_t n_tokens, int64_t width, const RopeParams& p, float* out) {
    const int64_t half = p.n_rot / 2;
    // cos/sin per (token, pair), computed once per node in double: angles grow with position.
    ws.rope_table.resize(static_cast<size_t>(n_tokens * half * 2));
    float* tab = ws.rope_table.data();
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t i = 0; i < half; ++i) {
            double inv = std::pow(double(p.freq_base), -2.0 * double(i) / double(p.n_rot));
            if (p.freq_factors) inv /= p.freq_factors[i];
            const double a = double(pos[t]) * double(p.freq_scale) * inv;
            tab[(t * half + i) * 2] = static_cast<float>(std::cos(a));
            tab[(t * half + i) * 2 + 1] = static_cast<float>(std::sin(a));
        }
    const int64_t n_head = width / p.head_dim;
    parallel_ranges(pool, n_tokens * n_head, 8, [&](int64_t b, int64_t e, int) {
        for (int64_t r = b; r < e; ++r) {
            const int64_t t = r / n_head;
            const float* xr = x + r * p.head_dim;
            float* o = out + r * p.head_dim;
            const float* cs = tab + t * half * 2;
            for (int64_t i = 0; i < half; ++i) {
                // normal: adjacent pairs (2i, 2i+1); neox: (i, i + n_rot/2)
                const int64_t i0 = p.mode == RopeMode::Neox ? i : 2 * i;
                const int64_t i1 = p.mode == RopeMode::Neox ? i + half : 2 * i + 1;
                const float c = cs[2 * i], s = cs[2 * i + 1];
                const float a = xr[i0], bb = xr[i1];
                o[i0] = a * c - bb * s;
                o[i1] = a * s + bb * c;
            }
            for (int64_t i = p.n_rot; i < p.head_dim; ++i) o[i] = xr[i];
        }
    });
}

void op_kv_store(ThreadPool& pool, const float* src, int64_t n_tokens, int64_t width, DType type,
                 uint8_t* cache, int32_t n_past) {
    const size_t rb = row_bytes(type, static_cast<uint64_t>(width));
    parallel_ranges(pool, n_tokens, 8, [&](int64_t b, int64_t e, int) {
        for (int64_t t = b; t < e; ++t) {
            uint8_t* dst = cache + static_cast<size_t>(n_past + t) * rb;
            if (type == DType::F32)
                std::memcpy(dst, src + t * width, rb);
            else
                quant::quantize_row(type, src + t * width, dst, width);
        }
    });
}

}  // namespace tandem::cpu

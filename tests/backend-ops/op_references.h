#pragma once
// Naive double-precision references of the step graph's heavier ops (matmul, attention over a
// cache, MoE routing + expert FFN, RoPE), written from the op definitions in
// core/include/tandem/backend/graph.h and used by the op suite on every backend.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "op_harness.h"
#include "tandem/quant/fp16.h"

namespace tandem::test {

// y[T][n_out] = x[T][n_in] . w[n_out][n_in]^T (+ bias[n_out]), over the dequantised weights;
// x as float, or as double (activations already rounded the way a kernel quantises them).
template <class X>
std::vector<double> ref_matmul(const QuantWeight& w, const std::vector<X>& x, int64_t T,
                               const std::vector<float>* bias = nullptr) {
    const int64_t n_in = w.ne[0], n_out = w.ne[1];
    std::vector<double> y(static_cast<size_t>(T * n_out));
    for (int64_t t = 0; t < T; ++t)
        for (int64_t o = 0; o < n_out; ++o) {
            double s = bias ? (*bias)[o] : 0.0;
            for (int64_t i = 0; i < n_in; ++i)
                s += double(w.values[o * n_in + i]) * double(x[t * n_in + i]);
            y[t * n_out + o] = s;
        }
    return y;
}

// x [T, n_in] as the GPU decode matvecs over int8 activations see it (HIP hip_matvec_q8.hip,
// Vulkan quantize_q8.comp): per 32 values, d = max|x| / 127 (float), value = d * round(x / d).
inline std::vector<double> q8_activations(const std::vector<float>& x) {
    std::vector<double> out(x.size());
    for (size_t b = 0; b < x.size(); b += 32) {
        float amax = 0.0f;
        for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float d = amax / 127.0f;
        for (size_t i = b; i < b + 32; ++i)
            out[i] = amax > 0.0f ? double(d) * std::nearbyint(x[i] / d) : 0.0;
    }
    return out;
}

inline double ref_activation(Activation a, double x) {
    if (a == Activation::Silu) return x / (1 + std::exp(-x));
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

struct AttnCase {
    int64_t n_head, n_kv_head, head_dim, window;
    float softcap;
    DType kv_type;
    int64_t n_past, T;
};

// K and V rows of every position ([n_past + T][n_kv_head * head_dim]) and the new tokens' Q.
struct AttnData {
    std::vector<float> k_all, v_all, q;
    explicit AttnData(const AttnCase& c)
        : k_all(random_floats(size_t((c.n_past + c.T) * c.n_kv_head * c.head_dim), 31, -2, 2)),
          v_all(random_floats(size_t((c.n_past + c.T) * c.n_kv_head * c.head_dim), 32, -2, 2)),
          q(random_floats(size_t(c.T * c.n_head * c.head_dim), 33, -2, 2)) {}
};

// Causal softmax attention in double over the values as the cache stores them (f16-rounded for
// an f16 cache); scale 0.125, optional window and logit softcap; out [T][n_head * head_dim].
inline std::vector<double> ref_attention(const AttnCase& c, const AttnData& d) {
    const int64_t hd = c.head_dim, kvw = c.n_kv_head * hd, qw = c.n_head * hd;
    const int64_t group = c.n_head / c.n_kv_head;
    auto stored = [&](float v) {
        return c.kv_type == DType::F16 ? double(quant::fp16_to_fp32(quant::fp32_to_fp16(v)))
                                       : double(v);
    };
    std::vector<double> out(static_cast<size_t>(c.T * qw), 0.0);
    for (int64_t t = 0; t < c.T; ++t)
        for (int64_t h = 0; h < c.n_head; ++h) {
            const int64_t pos = c.n_past + t, kvh = h / group;
            const int64_t lo = c.window > 0 ? std::max<int64_t>(0, pos - c.window + 1) : 0;
            std::vector<double> s;
            for (int64_t j = lo; j <= pos; ++j) {
                double dot = 0;
                for (int64_t i = 0; i < hd; ++i)
                    dot +=
                        double(d.q[t * qw + h * hd + i]) * stored(d.k_all[j * kvw + kvh * hd + i]);
                dot *= 0.125;
                if (c.softcap > 0) dot = c.softcap * std::tanh(dot / c.softcap);
                s.push_back(dot);
            }
            const double mx = *std::max_element(s.begin(), s.end());
            double sum = 0;
            for (double& v : s) sum += (v = std::exp(v - mx));
            for (int64_t j = lo; j <= pos; ++j)
                for (int64_t i = 0; i < hd; ++i)
                    out[t * qw + h * hd + i] +=
                        s[j - lo] / sum * stored(d.v_all[j * kvw + kvh * hd + i]);
        }
    return out;
}

// MoE routing of one token: softmax over the logits, the top k (ties to the lower id), weights
// renormalised over the k. Returns (expert, weight) pairs.
inline std::vector<std::pair<int, double>> ref_moe_route(const float* logits, int64_t n_expert,
                                                         int k) {
    std::vector<double> p(n_expert);
    const double mx = *std::max_element(logits, logits + n_expert);
    for (int64_t e = 0; e < n_expert; ++e) p[e] = std::exp(logits[e] - mx);
    std::vector<int> order(n_expert);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
    double wsum = 0;
    for (int j = 0; j < k; ++j) wsum += p[order[j]];
    std::vector<std::pair<int, double>> r;
    for (int j = 0; j < k; ++j) r.emplace_back(order[j], p[order[j]] / wsum);
    return r;
}

// One expert's gated FFN of one token row x[n_embd], accumulated into y[n_embd] with weight w.
// gate/up [n_local][n_ff][n_embd], down [n_local][n_embd][n_ff]; le is the local expert index.
inline void ref_expert_ffn(const QuantWeight& gate, const QuantWeight& up, const QuantWeight& down,
                           int64_t le, Activation act, const float* x, double w, double* y) {
    const int64_t n_embd = gate.ne[0], n_ff = gate.ne[1];
    std::vector<double> h(static_cast<size_t>(n_ff));
    for (int64_t f = 0; f < n_ff; ++f) {
        double a = 0, b = 0;
        for (int64_t i = 0; i < n_embd; ++i) {
            a += double(gate.values[(le * n_ff + f) * n_embd + i]) * x[i];
            b += double(up.values[(le * n_ff + f) * n_embd + i]) * x[i];
        }
        h[f] = ref_activation(act, a) * b;
    }
    for (int64_t o = 0; o < n_embd; ++o) {
        double d = 0;
        for (int64_t f = 0; f < n_ff; ++f)
            d += double(down.values[(le * n_embd + o) * n_ff + f]) * h[f];
        y[o] += w * d;
    }
}

// RoPE of x [T][n_head * head_dim] at positions pos: the first n_rot dims of each head rotate by
// pos * scale * base^(-2i/n_rot) (/ factors[i] when given), pairs (2i, 2i+1) in normal mode and
// (i, i + n_rot/2) in neox mode; the other dims pass through.
inline std::vector<double> ref_rope(const std::vector<float>& x, const std::vector<int32_t>& pos,
                                    int64_t head_dim, int64_t n_rot, int64_t n_head, RopeMode mode,
                                    double base, double scale, const std::vector<float>* factors) {
    const int64_t T = static_cast<int64_t>(pos.size()), width = head_dim * n_head;
    std::vector<double> ref(x.begin(), x.end());
    for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < n_head; ++h)
            for (int64_t i = 0; i < n_rot / 2; ++i) {
                double theta = pos[t] * scale * std::pow(base, -2.0 * double(i) / double(n_rot));
                if (factors) theta /= (*factors)[i];
                const int64_t off = t * width + h * head_dim;
                const int64_t a = mode == RopeMode::Neox ? i : 2 * i;
                const int64_t b = mode == RopeMode::Neox ? i + n_rot / 2 : 2 * i + 1;
                ref[off + a] = x[off + a] * std::cos(theta) - x[off + b] * std::sin(theta);
                ref[off + b] = x[off + a] * std::sin(theta) + x[off + b] * std::cos(theta);
            }
    return ref;
}

}  // namespace tandem::test

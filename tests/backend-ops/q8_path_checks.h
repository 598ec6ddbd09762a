#pragma once
// Checks shared by the GPU backends' tests of their decode matvec over int8 activations (HIP
// hip_matvec_q8.hip, Vulkan matvec_q8.comp): the matmuls must see exactly the activations as
// q8_activations() rounds them, whether the matmul quantised its input itself, reused the
// quantisation of an earlier matmul, or the node before it (a gated activation) left it.
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "op_references.h"

namespace tandem::test {

// Two matmuls of one input (quantised once), then the input changes and a third one must
// quantise it again.
inline void expect_q8_input_reused_then_requantised(Backend& b) {
    const int64_t n_in = 512, n_out = 40, T = 2;
    QuantWeight w1(DType::Q4_0, {n_in, n_out, 1}, 1), w2(DType::Q6_K, {n_in, n_out, 1}, 2);
    auto x = random_floats(size_t(n_in * T), 3);
    std::vector<float> y1, y2, doubled, y3;
    OpGraph g;
    const TensorId xt = g.input(x.data(), n_in, T);
    const TensorId wt1 = g.weight(b, w1), wt2 = g.weight(b, w2);
    g.node(Op::MatMul, g.output(y1, n_out, T), {wt1, xt});
    g.node(Op::MatMul, g.output(y2, n_out, T), {wt2, xt});  // the same quantised input
    const TensorId dt = g.output(doubled, n_in, T);
    g.node(Op::Add, dt, {xt, xt});
    g.node(Op::MatMul, g.output(y3, n_out, T), {wt1, dt});  // quantised again
    g.run(b);
    std::vector<float> x2(x.size());
    for (size_t i = 0; i < x.size(); ++i) x2[i] = x[i] + x[i];
    EXPECT_LT(reported_nmse("q4_0 of x", y1, ref_matmul(w1, q8_activations(x), T)), 1e-10);
    EXPECT_LT(reported_nmse("q6_k of x (reused)", y2, ref_matmul(w2, q8_activations(x), T)), 1e-10);
    EXPECT_LT(
        reported_nmse("q4_0 of x + x (requantised)", y3, ref_matmul(w1, q8_activations(x2), T)),
        1e-10);
}

// q/k/v of one input (which the backends run as one launch over all their rows), row counts
// that make blocks of threads straddle two matrices, a bias on k (as Qwen2 has; HIP keeps it in
// the group, Vulkan ends the group there) and a fourth matmul of the input with a bias after
// them; 1-3 tokens, three weight types.
inline void expect_q8_matvecs_sharing_an_input(Backend& b) {
    for (auto [t, T] : {std::pair{DType::Q4_K, int64_t(1)}, {DType::Q4_0, 3}, {DType::Q6_K, 2}}) {
        const int64_t n_in = 512;
        auto x = random_floats(size_t(n_in * T), uint32_t(T + 5), -2, 2);
        QuantWeight wq(t, {n_in, 67, 1}, 1), wk(t, {n_in, 9, 1}, 2), wv(t, {n_in, 10, 1}, 3);
        QuantWeight wb(t, {n_in, 7, 1}, 4), bias(DType::F32, {7, 1, 1}, 5);
        QuantWeight bk(DType::F32, {9, 1, 1}, 6);
        std::vector<float> q, k, v, yb;
        OpGraph g;
        const TensorId xt = g.input(x.data(), n_in, T);
        g.node(Op::MatMul, g.output(q, 67, T), {g.weight(b, wq), xt});
        g.node(Op::MatMul, g.output(k, 9, T), {g.weight(b, wk), xt, g.weight(b, bk)});
        g.node(Op::MatMul, g.output(v, 10, T), {g.weight(b, wv), xt});
        g.node(Op::MatMul, g.output(yb, 7, T), {g.weight(b, wb), xt, g.weight(b, bias)});
        g.run(b);
        const auto xq = q8_activations(x);
        const std::string what = std::string(dtype_name(t)) + " T=" + std::to_string(T);
        EXPECT_LT(reported_nmse(what + " q", q, ref_matmul(wq, xq, T)), 1e-10);
        EXPECT_LT(reported_nmse(what + " k+bias", k, ref_matmul(wk, xq, T, &bk.values)), 1e-10);
        EXPECT_LT(reported_nmse(what + " v", v, ref_matmul(wv, xq, T)), 1e-10);
        EXPECT_LT(reported_nmse(what + " +bias", yb, ref_matmul(wb, xq, T, &bias.values)), 1e-10);
    }
}

// A gated activation (SiLU, GELU) feeding the down projection: an 8B model's FFN width, a
// partial last block of threads (192 x 3; HIP takes Q4_0 rows in pairs of blocks), several
// tokens. Its f32 output is checked against the double
// reference and the matmul against that output's q8 rounding.
inline void expect_gated_act_quantises_for_the_matmul_after_it(Backend& b) {
    const std::tuple<int64_t, int64_t, int32_t> cases[] = {
        {14336, 1, 0}, {14336, 2, 1}, {192, 3, 0}, {2304, 8, 1}};
    for (auto [cols, T, act] : cases) {
        auto gate = random_floats(size_t(cols * T), uint32_t(cols + T), -4, 4);
        auto up = random_floats(size_t(cols * T), uint32_t(cols + T + 1), -2, 2);
        const DType t = cols % 256 == 0 ? DType::Q4_K : DType::Q4_0;
        QuantWeight w(t, {cols, 29, 1}, 6);
        OpGraph g;
        std::vector<float> h, y;
        const TensorId ht = g.g.activation("gated", cols, T);
        g.node(Op::GatedAct, ht, {g.input(gate.data(), cols, T), g.input(up.data(), cols, T)},
               {act, 0, 0, 0});
        g.node(Op::MatMul, g.output(y, 29, T), {g.weight(b, w), ht});
        g.node(Op::Copy, g.output(h, cols, T), {ht});
        g.run(b);
        std::vector<double> ref(h.size());
        for (size_t i = 0; i < ref.size(); ++i)
            ref[i] = ref_activation(Activation(act), gate[i]) * up[i];
        const std::string what = "gated+q8 " + std::to_string(cols) + " T=" + std::to_string(T) +
                                 " act " + std::to_string(act);
        EXPECT_LT(reported_nmse(what + " act", h, ref), 1e-10) << what;
        EXPECT_LT(reported_nmse(what + " matmul", y, ref_matmul(w, q8_activations(h), T)), 1e-10)
            << what;
    }
}

// RMSNorm rows (weights w) as the double reference computes them, eps 1e-5.
inline std::vector<double> ref_rms_norm(const std::vector<float>& x, const std::vector<float>& w,
                                        int64_t cols, int64_t rows) {
    std::vector<double> ref(x.size());
    for (int64_t r = 0; r < rows; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < cols; ++i) ss += double(x[r * cols + i]) * x[r * cols + i];
        const double inv = 1.0 / std::sqrt(ss / double(cols) + 1e-5);
        for (int64_t i = 0; i < cols; ++i) ref[r * cols + i] = x[r * cols + i] * inv * w[i];
    }
    return ref;
}

}  // namespace tandem::test

#pragma once
// Checks shared by the GPU backends' tests of their fused decode paths (HIP, Vulkan): the
// matvec over int8 activations must see exactly the activations as q8_activations() rounds them,
// whether the matmul quantised its input itself, reused the quantisation of an earlier matmul,
// or the node before it (a norm, a gated activation) left it; a residual add fused with the
// norm after it must leave both the sum and the norm right.
#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <memory>
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
// that make blocks of threads straddle two matrices, a bias on k (as Qwen2 has; kept in the
// group) and a fourth matmul of the input with a bias after them; 1-3 tokens, three weight
// types.
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

// With the q8 path switched off (by the caller, when it created b) the decode matmul of each of
// `types` keeps f32 activations: the double product within rounding (`bound`), 3 tokens.
inline void expect_f32_activations(Backend& b, const std::vector<DType>& types, double bound) {
    for (DType t : types) {
        QuantWeight w(t, {512, 21, 1}, 9);
        auto x = random_floats(512 * 3, 4);
        OpGraph g;
        std::vector<float> y;
        g.node(Op::MatMul, g.output(y, 21, 3), {g.weight(b, w), g.input(x.data(), 512, 3)});
        g.run(b);
        EXPECT_LT(
            reported_nmse(std::string(dtype_name(t)) + " f32 activations", y, ref_matmul(w, x, 3)),
            bound);
    }
}

// A gated activation (SiLU, GELU) feeding the down projection: an 8B model's FFN width, a
// partial last block of threads (192 x 3; HIP's q8 path takes rows of multiples of 256), several
// tokens. Its f32 output is checked against the double
// reference and the matmul against that output's q8 rounding where the backend's q8 path takes
// the row length (a multiple of q8_rows), else against the output itself (f32 activations).
inline void expect_gated_act_quantises_for_the_matmul_after_it(Backend& b, int64_t q8_rows = 32) {
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
        const auto ref_y =
            cols % q8_rows == 0 ? ref_matmul(w, q8_activations(h), T) : ref_matmul(w, h, T);
        EXPECT_LT(reported_nmse(what + " matmul", y, ref_y), 1e-10) << what;
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

struct NormQ8Case {
    int64_t cols, tokens;
    DType weight;
    bool add;  // a residual add before the norm (fused with it where the backend can)
};

// (Add then) RMSNorm then a matmul of the norm: the norm against the double reference, the
// matmul against the q8 rounding of the norm's own f32 output, so it must have been quantised
// from exactly that (by the norm itself, or after it).
inline void expect_rms_norm_quantises_for_the_matmul_after_it(
    Backend& b, const std::vector<NormQ8Case>& cases) {
    for (const NormQ8Case& c : cases) {
        const int64_t cols = c.cols, T = c.tokens;
        auto x = random_floats(size_t(cols * T), uint32_t(cols + T), -3, 3);
        auto h = random_floats(size_t(cols * T), uint32_t(cols + T + 1), -1, 1);
        QuantWeight nw(DType::F32, {cols, 1, 1}, 4), w(c.weight, {cols, 37, 1}, 5);
        OpGraph g;
        std::vector<float> normed, y;
        const TensorId nt = g.g.activation("normed", cols, T);
        TensorId in = g.input(x.data(), cols, T);
        if (c.add) {
            const TensorId s = g.g.activation("resid", cols, T);
            g.node(Op::Add, s, {in, g.input(h.data(), cols, T)});
            in = s;
        }
        g.node(Op::RmsNorm, nt, {in, g.weight(b, nw)}, {0, 0, 0, 0}, {1e-5f, 0});
        g.node(Op::MatMul, g.output(y, 37, T), {g.weight(b, w), nt});
        g.node(Op::Copy, g.output(normed, cols, T), {nt});
        g.run(b);
        std::vector<float> xs = x;
        if (c.add)
            for (size_t i = 0; i < xs.size(); ++i) xs[i] += h[i];
        const std::string what = "norm+q8 " + std::to_string(cols) + " T=" + std::to_string(T) +
                                 " " + std::string(dtype_name(c.weight)) + (c.add ? " add" : "");
        EXPECT_LT(reported_nmse(what + " norm", normed, ref_rms_norm(xs, nw.values, cols, T)),
                  1e-11)
            << what;
        EXPECT_LT(reported_nmse(what + " matmul", y, ref_matmul(w, q8_activations(normed), T)),
                  1e-10)
            << what;
    }
}

// A residual add then the RMSNorm of its sum (one kernel where the backend fuses them), decode
// and prefill row counts, a row length that is not a multiple of 4 and one past the fused
// kernel's register rows: both the sum (the residual stream, used again later) and the
// normalised rows against double references.
inline void expect_add_then_rms_norm(Backend& b) {
    for (auto [cols, rows] :
         {std::pair<int64_t, int64_t>{4096, 1}, {4096, 5}, {4096, 20}, {1027, 3}, {12288, 2}}) {
        auto x = random_floats(size_t(cols * rows), 27, -2, 2);
        auto h = random_floats(size_t(cols * rows), 28, -2, 2);
        QuantWeight w(DType::F32, {cols, 1, 1}, 29);
        std::vector<float> normed, sum;
        OpGraph g;
        const TensorId s = g.g.activation("resid", cols, rows);
        const TensorId n = g.g.activation("normed", cols, rows);
        g.node(Op::Add, s, {g.input(x.data(), cols, rows), g.input(h.data(), cols, rows)});
        g.node(Op::RmsNorm, n, {s, g.weight(b, w)}, {0, 0, 0, 0}, {1e-5f, 0});
        g.node(Op::Scale, g.output(normed, cols, rows), {n}, {0, 0, 0, 0}, {1.0f, 0});
        g.node(Op::Copy, g.output(sum, cols, rows), {s});
        g.run(b);
        std::vector<float> xs(x.size());
        std::vector<double> sum_ref(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
            xs[i] = x[i] + h[i];
            sum_ref[i] = xs[i];
        }
        const std::string what = "add+norm " + std::to_string(cols) + " x " + std::to_string(rows);
        EXPECT_LT(reported_nmse(what + " sum", sum, sum_ref), 1e-14) << what;
        EXPECT_LT(reported_nmse(what + " norm", normed, ref_rms_norm(xs, w.values, cols, rows)),
                  1e-11)
            << what;
    }
}

struct MatvecNormCase {
    int64_t n_in, cols, tokens;
    DType first, next;      // the weight types of the matvec before the norm and after it
    bool all_reduce, bias;  // an all-reduce node (one rank) after the first matvec; a bias on it
    bool other_reader;      // a node other than a matmul reads the norm's output too
};

// A matvec whose output the residual stream adds, then the RMSNorm of that sum read by matvecs
// (the output or down projection, then q/k/v, gate/up or the LM head). A backend may fold the
// norm into the matvecs (one launch writes the sum and the q8 activations of sum * w, the
// readers scale their dots by 1 / rms): folds(cols, tokens) says where it does, and then the
// readers must equal that path's own rounding; elsewhere the plain path's (the q8 rounding of
// the norm's output). Both references are rebuilt here from the sum the backend returns, so
// either is exact to float rounding. Rows the backend's q8 path does not take (cols not a
// multiple of q8_rows) against the f32 product. The sum and (other_reader) the norm's output
// against double references.
template <class Folds>
void expect_matvec_add_norm_matvecs(Backend& b, const std::vector<MatvecNormCase>& cases,
                                    Folds folds, int64_t q8_rows = 32) {
    for (const MatvecNormCase& c : cases) {
        const int64_t T = c.tokens, cols = c.cols;
        const uint32_t seed = uint32_t(c.n_in + cols + T);
        auto x = random_floats(size_t(c.n_in * T), seed, -2, 2);
        auto resid = random_floats(size_t(cols * T), seed + 1, -3, 3);
        QuantWeight wo(c.first, {c.n_in, cols, 1}, seed + 2), bo(DType::F32, {cols, 1, 1}, 7);
        QuantWeight nw(DType::F32, {cols, 1, 1}, seed + 3);
        QuantWeight wq(c.next, {cols, 64, 1}, seed + 4), wk(c.next, {cols, 32, 1}, seed + 5);
        QuantWeight bk(DType::F32, {32, 1, 1}, seed + 6);
        OpGraph g;
        std::vector<float> q, k, sum, normed;
        const TensorId o = g.g.activation("o", cols, T), s = g.g.activation("resid", cols, T);
        const TensorId n = g.g.activation("normed", cols, T);
        g.node(
            Op::MatMul, o,
            {g.weight(b, wo), g.input(x.data(), c.n_in, T), c.bias ? g.weight(b, bo) : kNoTensor});
        if (c.all_reduce) g.node(Op::AllReduce, o, {o});
        g.node(Op::Add, s, {g.input(resid.data(), cols, T), o});
        g.node(Op::RmsNorm, n, {s, g.weight(b, nw)}, {0, 0, 0, 0}, {1e-5f, 0});
        g.node(Op::MatMul, g.output(q, 64, T), {g.weight(b, wq), n});
        g.node(Op::MatMul, g.output(k, 32, T), {g.weight(b, wk), n, g.weight(b, bk)});
        if (c.other_reader) g.node(Op::Copy, g.output(normed, cols, T), {n});
        g.node(Op::Copy, g.output(sum, cols, T), {s});
        g.run(b);

        const std::string what = "matvec+add+norm " + std::string(dtype_name(c.first)) + " -> " +
                                 std::string(dtype_name(c.next)) + " " + std::to_string(c.n_in) +
                                 " -> " + std::to_string(cols) + " T=" + std::to_string(T);
        auto sum_ref = ref_matmul(wo, q8_activations(x), T, c.bias ? &bo.values : nullptr);
        for (size_t i = 0; i < sum_ref.size(); ++i) sum_ref[i] += resid[i];
        EXPECT_LT(reported_nmse(what + " sum", sum, sum_ref), 1e-10) << what;
        // From the returned sum: the norm (double), the folded path's input (sum * w in float)
        // and its scales, the plain path's input (the norm in float).
        const auto norm_ref = ref_rms_norm(sum, nw.values, cols, T);
        std::vector<float> sw(sum.size()), nf(sum.size());
        std::vector<double> inv(static_cast<size_t>(T));
        for (int64_t t = 0; t < T; ++t) {
            double ss = 0;
            for (int64_t i = 0; i < cols; ++i) ss += double(sum[t * cols + i]) * sum[t * cols + i];
            inv[t] = 1.0 / std::sqrt(ss / double(cols) + 1e-5);
        }
        for (size_t i = 0; i < sum.size(); ++i) {
            sw[i] = sum[i] * nw.values[i % size_t(cols)];
            nf[i] = float(norm_ref[i]);
        }
        const bool folded = folds(cols, T);
        auto reference = [&](const QuantWeight& w, const std::vector<float>* bias) {
            if (cols % q8_rows != 0) return ref_matmul(w, nf, T, bias);
            if (!folded) return ref_matmul(w, q8_activations(nf), T, bias);
            auto y = ref_matmul(w, q8_activations(sw), T);
            const int64_t n_out = w.ne[1];
            for (int64_t t = 0; t < T; ++t)
                for (int64_t r = 0; r < n_out; ++r)
                    y[t * n_out + r] = y[t * n_out + r] * inv[t] + (bias ? (*bias)[r] : 0.0);
            return y;
        };
        const std::string path = folded ? " (norm folded)" : " (norm apart)";
        EXPECT_LT(reported_nmse(what + " q" + path, q, reference(wq, nullptr)), 1e-10) << what;
        EXPECT_LT(reported_nmse(what + " k+bias" + path, k, reference(wk, &bk.values)), 1e-10)
            << what;
        if (c.other_reader) {
            EXPECT_LT(reported_nmse(what + " norm", normed, norm_ref), 1e-11) << what;
        }
    }
}

struct FfnCase {
    int64_t dim, ffn, tokens;
    DType type;     // the FFN's three matrices
    int32_t act;    // Activation: 0 SiLU, 1 GELU (tanh)
    bool up_first;  // up's matmul before gate's in the graph
};

// An FFN as a decode step runs it: the output projection, the residual add and the RMSNorm of
// the sum (a backend may fold the norm: expect_matvec_add_norm_matvecs), gate and up of the norm,
// the gated activation, the down projection, the residual add again and the next RMSNorm, read
// by a matmul. The activation must be act(gate) * up of the gate and up the backend returns
// (double reference), and the second sum the first plus the product over that activation's q8
// rounding (or the activation itself where the backend's q8 path does not take rows of ffn:
// q8_rows), whichever launch quantised it and into which of its buffers.
inline void expect_ffn_gated_act(Backend& b, const std::vector<FfnCase>& cases,
                                 int64_t q8_rows = 32) {
    for (const FfnCase& c : cases) {
        const int64_t T = c.tokens, dim = c.dim, ffn = c.ffn;
        const uint32_t seed = uint32_t(dim + ffn + T);
        auto x = random_floats(size_t(dim * T), seed, -2, 2);
        auto resid = random_floats(size_t(dim * T), seed + 1, -3, 3);
        QuantWeight wo(c.type, {dim, dim, 1}, seed + 2), nw(DType::F32, {dim, 1, 1}, seed + 3);
        QuantWeight wg(c.type, {dim, ffn, 1}, seed + 4), wu(c.type, {dim, ffn, 1}, seed + 5);
        QuantWeight wd(c.type, {ffn, dim, 1}, seed + 6), wn(c.type, {dim, 64, 1}, seed + 7);
        OpGraph g;
        std::vector<float> gate, up, h, s1, s2, next;
        const TensorId o = g.g.activation("o", dim, T), s = g.g.activation("resid", dim, T);
        const TensorId n = g.g.activation("normed", dim, T);
        const TensorId gt = g.g.activation("gate", ffn, T), ut = g.g.activation("up", ffn, T);
        const TensorId ht = g.g.activation("gated", ffn, T), dt = g.g.activation("down", dim, T);
        const TensorId st = g.g.activation("resid2", dim, T),
                       nt = g.g.activation("normed2", dim, T);
        g.node(Op::MatMul, o, {g.weight(b, wo), g.input(x.data(), dim, T)});
        g.node(Op::Add, s, {g.input(resid.data(), dim, T), o});
        g.node(Op::RmsNorm, n, {s, g.weight(b, nw)}, {0, 0, 0, 0}, {1e-5f, 0});
        const TensorId wgt = g.weight(b, wg), wut = g.weight(b, wu);
        if (c.up_first) g.node(Op::MatMul, ut, {wut, n});
        g.node(Op::MatMul, gt, {wgt, n});
        if (!c.up_first) g.node(Op::MatMul, ut, {wut, n});
        g.node(Op::GatedAct, ht, {gt, ut}, {c.act, 0, 0, 0});
        g.node(Op::MatMul, dt, {g.weight(b, wd), ht});
        g.node(Op::Add, st, {s, dt});
        g.node(Op::RmsNorm, nt, {st, g.weight(b, nw)}, {0, 0, 0, 0}, {1e-5f, 0});
        g.node(Op::MatMul, g.output(next, 64, T), {g.weight(b, wn), nt});
        g.node(Op::Copy, g.output(h, ffn, T), {ht});
        g.node(Op::Copy, g.output(gate, ffn, T), {gt});
        g.node(Op::Copy, g.output(up, ffn, T), {ut});
        g.node(Op::Copy, g.output(s1, dim, T), {s});
        g.node(Op::Copy, g.output(s2, dim, T), {st});
        g.run(b);
        const std::string what = "ffn " + std::string(dtype_name(c.type)) + " " +
                                 std::to_string(dim) + " -> " + std::to_string(ffn) +
                                 " T=" + std::to_string(T) + " act " + std::to_string(c.act) +
                                 (c.up_first ? " up first" : "");
        std::vector<double> ref(h.size());
        for (size_t i = 0; i < ref.size(); ++i)
            ref[i] = ref_activation(Activation(c.act), gate[i]) * up[i];
        EXPECT_LT(reported_nmse(what + " act", h, ref), 1e-10) << what;
        auto ref_s2 =
            ffn % q8_rows == 0 ? ref_matmul(wd, q8_activations(h), T) : ref_matmul(wd, h, T);
        for (size_t i = 0; i < ref_s2.size(); ++i) ref_s2[i] += s1[i];
        EXPECT_LT(reported_nmse(what + " down + resid", s2, ref_s2), 1e-10) << what;
    }
}

// The split decode attention's combine pass quantises the heads' output for the output
// projection after it (GQA 8/2, head_dim 128 and 64, 1 and 3 tokens, f16 and f32 caches); the
// head_dim 40 (no split kernel, or no whole q8 blocks per head) leaves it to the matmul's own
// quantiser. The matmul against the q8 rounding of the attention output as returned (or the
// output itself where the backend's q8 path does not take rows of n_head * head_dim: q8_rows).
inline void expect_attention_quantises_for_the_matmul_after_it(Backend& b, int64_t q8_rows = 32) {
    const std::tuple<int64_t, int64_t, DType> cases[] = {
        {128, 1, DType::F16}, {64, 3, DType::F32}, {128, 2, DType::F32}, {40, 1, DType::F16}};
    for (auto [hd, T, kv_type] : cases) {
        const int64_t n_head = 8, n_kv = 2, kvw = n_kv * hd, qw = n_head * hd, n_past = 45;
        const int64_t n_ctx = n_past + T + 3;
        b.allocate_kv({KvDesc{kv_type, kvw, n_ctx}, KvDesc{kv_type, kvw, n_ctx}});
        auto k_all = random_floats(size_t(n_ctx * kvw), 51, -2, 2);
        auto v_all = random_floats(size_t(n_ctx * kvw), 52, -2, 2);
        auto q = random_floats(size_t(T * qw), 53, -2, 2);
        const DType wt = qw % 256 == 0 ? DType::Q4_K : DType::Q8_0;
        QuantWeight wo(wt, {qw, 24, 1}, 54);
        std::vector<float> attn, y;
        OpGraph g;
        g.io.n_past = static_cast<int32_t>(n_past);
        // The whole context stored by this graph: positions 0..n_past+T-1, then attended.
        OpGraph st;
        TensorId kin = st.input(k_all.data(), kvw, n_past),
                 vin = st.input(v_all.data(), kvw, n_past);
        TensorId kc0 = st.g.kv(0, "k", kv_type, kvw, n_ctx),
                 vc0 = st.g.kv(1, "v", kv_type, kvw, n_ctx);
        st.node(Op::KvStore, kc0, {kin, kc0});
        st.node(Op::KvStore, vc0, {vin, vc0});
        st.run(b);
        TensorId kt = g.input(k_all.data() + n_past * kvw, kvw, T);
        TensorId vt = g.input(v_all.data() + n_past * kvw, kvw, T);
        TensorId kc = g.g.kv(0, "k", kv_type, kvw, n_ctx), vc = g.g.kv(1, "v", kv_type, kvw, n_ctx);
        g.node(Op::KvStore, kc, {kt, kc});
        g.node(Op::KvStore, vc, {vt, vc});
        const TensorId at = g.g.activation("attn", qw, T);
        g.node(Op::Attention, at, {g.input(q.data(), qw, T), kc, vc},
               {int32_t(n_head), int32_t(n_kv), int32_t(hd), 0}, {1.0f / std::sqrt(float(hd)), 0});
        g.node(Op::MatMul, g.output(y, 24, T), {g.weight(b, wo), at});
        g.node(Op::Copy, g.output(attn, qw, T), {at});
        g.run(b);
        const std::string what = "attn+q8 hd " + std::to_string(hd) + " T=" + std::to_string(T) +
                                 " " + std::string(dtype_name(kv_type)) + " cache";
        const auto ref_y =
            qw % q8_rows == 0 ? ref_matmul(wo, q8_activations(attn), T) : ref_matmul(wo, attn, T);
        EXPECT_LT(reported_nmse(what, y, ref_y), 1e-10) << what;
        EXPECT_GT(nmse(attn, std::vector<double>(attn.size(), 0.0)), 0.0) << what;  // not all zero
    }
}

// A Rope whose output the next node stores into the KV cache (which the GPU backends do in the
// rope's own launch): the roped rows and the cache rows n_past.. against the CPU backend, in
// both rope modes, with a partial rotary dimension, into an f32 cache (read back whole rows)
// and an f16 one (read back through attention over it).
inline void expect_rope_writes_the_kv_cache(Backend& gpu) {
    auto cpu = make_backend("cpu", 2);
    struct Case {
        RopeMode mode;
        int64_t hd, n_rot, n_past;
        DType kv;
    };
    for (const Case& c : {Case{RopeMode::Normal, 64, 64, 5, DType::F32},
                          Case{RopeMode::Neox, 128, 64, 5, DType::F32},
                          Case{RopeMode::Neox, 128, 128, 0, DType::F16},
                          Case{RopeMode::Normal, 32, 16, 0, DType::F16}}) {
        const int64_t n_kv = 2, T = 3, width = n_kv * c.hd, n_ctx = c.n_past + T + 2;
        auto x = random_floats(size_t(width * T), uint32_t(c.hd + c.n_rot), -2, 2);
        auto q = random_floats(size_t(2 * width * T), 61, -2, 2);
        std::vector<int32_t> pos;
        for (int64_t t = 0; t < T; ++t) pos.push_back(int32_t(c.n_past + t));
        std::vector<float> roped_v, roped_c, cache_v, cache_c;
        std::vector<float> out_v, out_c;
        auto build = [&](OpGraph& g, Backend& b, bool on_gpu) {
            b.allocate_kv({KvDesc{c.kv, width, n_ctx}});
            g.io.n_past = int32_t(c.n_past);
            const TensorId kr = g.g.activation("k_rope", width, T);
            const TensorId kc = g.g.kv(0, "k", c.kv, width, n_ctx);
            g.node(Op::Rope, kr,
                   {g.input(x.data(), width, T), g.input(pos.data(), T, 1, DType::I32), kNoTensor},
                   {int32_t(c.hd), int32_t(c.n_rot), int32_t(c.mode), 0}, {10000.0f, 1.0f});
            g.node(Op::KvStore, kc, {kr, kc});
            g.node(Op::Copy, g.output(on_gpu ? roped_v : roped_c, width, T), {kr});
            if (c.kv == DType::F32) {
                g.node(Op::Copy, g.output(on_gpu ? cache_v : cache_c, width, n_ctx), {kc});
            } else {  // GQA 4/2 over the stored rows, K as V too
                g.node(Op::Attention, g.output(on_gpu ? out_v : out_c, 2 * width, T),
                       {g.input(q.data(), 2 * width, T), kc, kc},
                       {int32_t(2 * n_kv), int32_t(n_kv), int32_t(c.hd), 0}, {0.125f, 0});
            }
            g.run(b);
        };
        {
            OpGraph gg, gc;
            build(gg, gpu, true);
            build(gc, *cpu, false);
        }
        const std::string what = std::string(c.mode == RopeMode::Neox ? "neox" : "normal") +
                                 " hd " + std::to_string(c.hd) + " n_rot " +
                                 std::to_string(c.n_rot) + " " + std::string(dtype_name(c.kv));
        EXPECT_LT(nmse(roped_v, as_double(roped_c)), 1e-12) << what;
        if (c.kv == DType::F16) {  // decode steps on matrix units round q and P to f16
            EXPECT_LT(nmse(out_v, as_double(out_c)),
                      gpu.device().f16_decode_attention ? 1e-5 : 1e-9)
                << what;
        }
        if (c.kv == DType::F32) {
            // Rows n_past.. were written by this step (the others were never written).
            const size_t from = size_t(c.n_past * width), to = size_t((c.n_past + T) * width);
            const std::vector<float> v(cache_v.begin() + from, cache_v.begin() + to);
            const std::vector<float> cc(cache_c.begin() + from, cache_c.begin() + to);
            EXPECT_LT(nmse(v, as_double(cc)), 1e-12) << what << " cache rows";
            EXPECT_LT(nmse(v, as_double(roped_c)), 1e-12) << what << " cache = roped rows";
        }
    }
}

// q, k, v of one input, the rotary embedding of q and k, both KV stores and attention over the
// caches: what the GPU backends run as the q/k/v matvec roping and storing its own rows. Both
// rope modes, f16 and f32 caches, 1-8 tokens at n_past 0 and later, several weight types, q/k/v
// biases (Qwen2), v in another type (Q4_K_M: q + k fused, v apart), the input made by a node
// (its memory free for the roped q once v has read it), and a partial rotary dimension (not
// fused). Against double references: q/k/v =
// the product over the q8 input, roped; the cache rows (f32: read back) and the attention over them
// (rows before n_past never written: zero).
inline void expect_qkv_rope_and_kv_store(Backend& b) {
    struct Case {
        RopeMode mode;
        int64_t hd, n_rot, n_past, T;
        DType kv, w;
        bool bias = false;
        bool v_q6_k = false;  // v in Q6_K (Q4_K_M's attn_v): q + k grouped, v apart
        bool x_node = false;  // the input made by a node (the planner may reuse its memory)
    };
    for (const Case& c :
         {Case{RopeMode::Normal, 64, 64, 5, 1, DType::F32, DType::Q4_0},
          Case{RopeMode::Neox, 128, 128, 0, 3, DType::F16, DType::Q4_K},
          Case{RopeMode::Neox, 64, 64, 7, 8, DType::F32, DType::Q8_0},
          Case{RopeMode::Normal, 128, 128, 2, 2, DType::F16, DType::Q6_K},
          Case{RopeMode::Neox, 128, 64, 3, 1, DType::F16, DType::Q4_0},
          Case{RopeMode::Neox, 64, 64, 4, 2, DType::F32, DType::Q8_0, true},
          Case{RopeMode::Neox, 128, 128, 1, 1, DType::F16, DType::Q4_0, true},
          Case{RopeMode::Normal, 128, 128, 3, 1, DType::F16, DType::Q4_K, false, true, true},
          Case{RopeMode::Neox, 64, 64, 0, 2, DType::F32, DType::Q4_0, false, true},
          Case{RopeMode::Neox, 64, 64, 1, 1, DType::F16, DType::Q4_K, true, true},
          Case{RopeMode::Neox, 64, 64, 2, 1, DType::F16, DType::Q8_0, false, false, true}}) {
        const int64_t n_head = 4, n_kv = 2, n_in = 512, qw = n_head * c.hd, kvw = n_kv * c.hd;
        const int64_t T = c.T, n_ctx = c.n_past + T + 3;
        auto x = random_floats(size_t(n_in * T), uint32_t(c.hd + T), -0.05f, 0.05f);
        QuantWeight wq(c.w, {n_in, qw, 1}, 71), wk(c.w, {n_in, kvw, 1}, 72),
            wv(c.v_q6_k ? DType::Q6_K : c.w, {n_in, kvw, 1}, 73);
        QuantWeight bq(DType::F32, {qw, 1, 1}, 74), bk(DType::F32, {kvw, 1, 1}, 75),
            bv(DType::F32, {kvw, 1, 1}, 76);
        std::vector<int32_t> pos;
        for (int64_t t = 0; t < T; ++t) pos.push_back(int32_t(c.n_past + t));
        std::vector<float> q_out, k_cache, v_cache, attn;
        b.allocate_kv({KvDesc{c.kv, kvw, n_ctx}, KvDesc{c.kv, kvw, n_ctx}});
        OpGraph g;
        g.io.n_past = int32_t(c.n_past);
        TensorId xt = g.input(x.data(), n_in, T);
        if (c.x_node) {  // x through a node: an activation, dead after v
            const TensorId xa = g.g.activation("x", n_in, T);
            g.node(Op::Scale, xa, {xt}, {0, 0, 0, 0}, {1.0f, 0});
            xt = xa;
        }
        const TensorId pt = g.input(pos.data(), T, 1, DType::I32);
        const TensorId q = g.g.activation("q", qw, T), k = g.g.activation("k", kvw, T);
        const TensorId v = g.g.activation("v", kvw, T);
        const TensorId qr = g.g.activation("q_rope", qw, T);
        const TensorId kr = g.g.activation("k_rope", kvw, T);
        const TensorId kc = g.g.kv(0, "k", c.kv, kvw, n_ctx), vc = g.g.kv(1, "v", c.kv, kvw, n_ctx);
        auto bias = [&](const QuantWeight& w) { return c.bias ? g.weight(b, w) : kNoTensor; };
        g.node(Op::MatMul, q, {g.weight(b, wq), xt, bias(bq)});
        g.node(Op::MatMul, k, {g.weight(b, wk), xt, bias(bk)});
        g.node(Op::MatMul, v, {g.weight(b, wv), xt, bias(bv)});
        const std::array<int32_t, 4> ri{int32_t(c.hd), int32_t(c.n_rot), int32_t(c.mode), 0};
        g.node(Op::Rope, qr, {q, pt, kNoTensor}, ri, {10000.0f, 1.0f});
        g.node(Op::Rope, kr, {k, pt, kNoTensor}, ri, {10000.0f, 1.0f});
        g.node(Op::KvStore, kc, {kr, kc});
        g.node(Op::KvStore, vc, {v, vc});
        g.node(Op::Attention, g.output(attn, qw, T), {qr, kc, vc},
               {int32_t(n_head), int32_t(n_kv), int32_t(c.hd), 0}, {0.125f, 0});
        g.node(Op::Copy, g.output(q_out, qw, T), {qr});
        if (c.kv == DType::F32) {
            g.node(Op::Copy, g.output(k_cache, kvw, n_ctx), {kc});
            g.node(Op::Copy, g.output(v_cache, kvw, n_ctx), {vc});
        }
        g.run(b);

        const auto xq = q8_activations(x);
        auto as_float = [](const std::vector<double>& d) {
            return std::vector<float>(d.begin(), d.end());
        };
        auto bias_of = [&](const QuantWeight& w) { return c.bias ? &w.values : nullptr; };
        const auto q_ref = ref_rope(as_float(ref_matmul(wq, xq, T, bias_of(bq))), pos, c.hd,
                                    c.n_rot, n_head, c.mode, 10000.0, 1.0, nullptr);
        const auto k_ref = ref_rope(as_float(ref_matmul(wk, xq, T, bias_of(bk))), pos, c.hd,
                                    c.n_rot, n_kv, c.mode, 10000.0, 1.0, nullptr);
        const auto v_ref = ref_matmul(wv, xq, T, bias_of(bv));
        AttnCase ac{n_head, n_kv, c.hd, 0, 0.0f, c.kv, c.n_past, T};
        AttnData ad(ac);
        ad.q = as_float(q_ref);
        ad.k_all.assign(size_t((c.n_past + T) * kvw), 0.0f);
        ad.v_all.assign(ad.k_all.size(), 0.0f);
        for (size_t i = 0; i < k_ref.size(); ++i) {
            ad.k_all[size_t(c.n_past * kvw) + i] = float(k_ref[i]);
            ad.v_all[size_t(c.n_past * kvw) + i] = float(v_ref[i]);
        }
        const std::string what =
            std::string(c.mode == RopeMode::Neox ? "neox" : "normal") + " hd " +
            std::to_string(c.hd) + " n_rot " + std::to_string(c.n_rot) + " T=" + std::to_string(T) +
            " " + std::string(dtype_name(c.kv)) + " " + std::string(dtype_name(c.w)) +
            (c.bias ? " bias" : "") + (c.v_q6_k ? " v q6_k" : "") + (c.x_node ? " x node" : "");
        EXPECT_LT(reported_nmse(what + " roped q", q_out, q_ref), 1e-10) << what;
        EXPECT_LT(reported_nmse(what + " attention", attn, ref_attention(ac, ad)),
                  c.kv == DType::F32                ? 1e-10
                  : b.device().f16_decode_attention ? 1e-5
                                                    : 1e-8)
            << what;
        if (c.kv == DType::F32) {
            const auto rows = [&](const std::vector<float>& cache) {
                return std::vector<float>(cache.begin() + c.n_past * kvw,
                                          cache.begin() + (c.n_past + T) * kvw);
            };
            EXPECT_LT(reported_nmse(what + " k cache rows", rows(k_cache), k_ref), 1e-10) << what;
            EXPECT_LT(reported_nmse(what + " v cache rows", rows(v_cache), v_ref), 1e-10) << what;
        }
    }
}

// The expert FFN over q8 activations (HIP hip_moe_q8.hip, Vulkan moe_q8.comp). Every slot's
// sums are made alone, so a token's gate / up rows come out the same in the prefill form
// (slots grouped by expert, 8 at a time) as in the decode form (a block per slot); only the
// down projection adds them in another order (a token's slots inside one block against each
// slot's rows, then a sum). Against the element-wise kernels (a backend made with the q8 path
// off: f32 activations) the q8 rounding shows: near, not equal, which also shows the q8 path
// ran.
inline void expect_moe_q8_paths(Backend& b,
                                const std::function<std::unique_ptr<Backend>()>& q8_off) {
    const int64_t n_embd = 1024, n_ff = 512, n_expert = 16, T = 20, chunk = 4;
    const int k = 8;
    auto off = q8_off();
    ASSERT_TRUE(off) << "no second backend with the q8 expert path off";
    for (auto [gu, dn] : {std::pair{DType::Q4_0, DType::Q4_0}, std::pair{DType::Q4_K, DType::Q6_K},
                          std::pair{DType::Q8_0, DType::Q5_K}}) {
        QuantWeight gate(gu, {n_embd, n_ff, n_expert}, 31), up(gu, {n_embd, n_ff, n_expert}, 32),
            down(dn, {n_ff, n_embd, n_expert}, 33);
        const auto x = random_floats(size_t(n_embd * T), 34, -2.0f, 2.0f);
        const auto logits = random_floats(size_t(n_expert * T), 35, -3.0f, 3.0f);
        auto run = [&](Backend& be, int64_t t0, int64_t n) {
            OpGraph g;
            std::vector<float> out;
            const TensorId wg = g.weight(be, gate), wu = g.weight(be, up), wd = g.weight(be, down);
            const TensorId in = g.input(x.data() + t0 * n_embd, n_embd, n);
            const TensorId lg = g.input(logits.data() + t0 * n_expert, n_expert, n);
            const TensorId rt = g.g.activation("route", 2 * k, n);
            g.node(Op::MoeRoute, rt, {lg}, {k, 1, 0, 0});
            g.node(Op::MoeFfn, g.output(out, n_embd, n), {in, rt, wg, wu, wd},
                   {0, int32_t(Activation::Silu), 0, 0});
            g.run(be);
            return out;
        };
        const std::string what = std::string(dtype_name(gu)) + "/" + std::string(dtype_name(dn));
        const std::vector<float> prefill = run(b, 0, T);
        std::vector<float> decode;
        for (int64_t t0 = 0; t0 < T; t0 += chunk) {
            const auto part = run(b, t0, chunk);
            decode.insert(decode.end(), part.begin(), part.end());
        }
        EXPECT_LT(reported_nmse(what + " prefill vs decode", prefill, as_double(decode)), 1e-11)
            << what;
        const double e =
            reported_nmse(what + " q8 vs element-wise", prefill, as_double(run(*off, 0, T)));
        EXPECT_LT(e, 2e-4) << what;
        EXPECT_GT(e, 1e-12) << what << ": no q8 rounding, so the q8 path did not run";
    }
}

// f32 -> f16 -> f32, saturating at f16's largest finite value (as the GPU kernels pack).
inline float round_f16(float v) {
    return float(static_cast<_Float16>(std::fmax(-65504.0f, std::fmin(65504.0f, v))));
}

// Prefill matmuls on matrix units run by two backends of one kind that compute the same
// arithmetic in different forms, switched by the caller (inputs: `a` with f16 activations made
// once and shared, weights decoded straight to f16, `b` with the f32 forms; tiles: 128 tokens
// against 64): matmuls of one input (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K: repacked or not), then one
// of x + x (the input made again), at each token count (by default 40 and 70), activations
// beyond f16's range. Equal bits, and each within the f32 sums' rounding of a double sum over
// the f16-rounded weights and activations.
inline void expect_prefill_forms_same_bits(Backend& a, Backend& b,
                                           std::initializer_list<int64_t> tokens = {40, 70}) {
    const int64_t n_in = 512;
    for (int64_t T : tokens) {
        auto x = random_floats(size_t(n_in * T), uint32_t(T), -3.0f, 3.0f);
        x[7] = 1e6f, x[size_t(n_in) + 3] = -7e4f;  // saturate at +-65504 in every form
        std::vector<QuantWeight> ws;
        ws.emplace_back(DType::Q4_0, std::array<int64_t, 3>{n_in, 160, 1}, 1);
        ws.emplace_back(DType::Q8_0, std::array<int64_t, 3>{n_in, 130, 1}, 2);
        ws.emplace_back(DType::Q4_K, std::array<int64_t, 3>{n_in, 70, 1}, 3);
        ws.emplace_back(DType::Q5_K, std::array<int64_t, 3>{n_in, 40, 1}, 5);
        ws.emplace_back(DType::Q6_K, std::array<int64_t, 3>{n_in, 136, 1}, 6);
        ws.emplace_back(DType::Q4_0, std::array<int64_t, 3>{n_in, 96, 1}, 4);  // of x + x
        const size_t n_w = ws.size(), last = n_w - 1;
        auto run = [&](Backend& be) {
            std::vector<std::vector<float>> y(n_w);
            std::vector<float> doubled;
            OpGraph g;
            const TensorId xt = g.input(x.data(), n_in, T);
            for (size_t i = 0; i < last; ++i)
                g.node(Op::MatMul, g.output(y[i], ws[i].ne[1], T), {g.weight(be, ws[i]), xt});
            const TensorId dt = g.output(doubled, n_in, T);
            g.node(Op::Add, dt, {xt, xt});
            g.node(Op::MatMul, g.output(y[last], ws[last].ne[1], T), {g.weight(be, ws[last]), dt});
            g.run(be);
            return y;
        };
        const auto ya = run(a), yb = run(b);
        std::vector<float> x16(x.size()), x2(x.size());
        for (size_t i = 0; i < x.size(); ++i)
            x16[i] = round_f16(x[i]), x2[i] = round_f16(x[i] + x[i]);
        for (size_t i = 0; i < n_w; ++i) {
            const std::string what = std::string(dtype_name(ws[i].type)) + " #" +
                                     std::to_string(i) + " T=" + std::to_string(T);
            ASSERT_EQ(ya[i].size(), yb[i].size()) << what;
            for (size_t e = 0; e < ya[i].size(); ++e)
                ASSERT_EQ(std::bit_cast<uint32_t>(ya[i][e]), std::bit_cast<uint32_t>(yb[i][e]))
                    << what << " element " << e << ": " << ya[i][e] << " against " << yb[i][e];
            QuantWeight w16 = ws[i];
            for (float& v : w16.values) v = round_f16(v);
            EXPECT_LT(reported_nmse(what, ya[i], ref_matmul(w16, i < last ? x16 : x2, T)), 1e-9)
                << what;
        }
    }
}

// Short prompts: a prefill matmul splits its inputs where its grid is small (4096 inputs by 192
// rows: a few tiles), the parts summed after with the bias. `split` against `whole` (the same
// backend with its split turned off), at 9, 64 and 100 tokens of Q4_0, Q6_K and Q4_K (repacked
// or not), one with a bias: both within the f32 sums' rounding of a double sum (over f16-rounded
// weights and inputs where the backend multiplies in f16: `f16`), and some element's bits
// differ (the other summation order), so the split ran.
inline void expect_prefill_split_matches_unsplit(Backend& split, Backend& whole, bool f16) {
    const int64_t n_in = 4096, n_out = 192;
    const auto rounded = [f16](std::vector<float> v) {
        if (f16)
            for (float& e : v) e = round_f16(e);
        return v;
    };
    const QuantWeight bias(DType::F32, {n_out, 1, 1}, 9);
    for (const DType type : {DType::Q4_0, DType::Q6_K, DType::Q4_K}) {
        const QuantWeight w(type, {n_in, n_out, 1}, 31);
        QuantWeight w_ref = w;
        w_ref.values = rounded(w.values);
        const bool biased = type == DType::Q6_K;
        for (const int64_t T : {int64_t(9), int64_t(64), int64_t(100)}) {
            auto x = random_floats(size_t(n_in * T), uint32_t(T), -2.0f, 2.0f);
            auto run = [&](Backend& be) {
                OpGraph g;
                std::vector<float> y;
                const TensorId wt = g.weight(be, w), xt = g.input(x.data(), n_in, T);
                if (biased)
                    g.node(Op::MatMul, g.output(y, n_out, T), {wt, xt, g.weight(be, bias)});
                else
                    g.node(Op::MatMul, g.output(y, n_out, T), {wt, xt});
                g.run(be);
                return y;
            };
            const auto ys = run(split), yw = run(whole);
            const std::string what = std::string(dtype_name(type)) + " T=" + std::to_string(T);
            const auto ref = ref_matmul(w_ref, rounded(x), T, biased ? &bias.values : nullptr);
            EXPECT_LT(reported_nmse(what + " split", ys, ref), 1e-9) << what;
            EXPECT_LT(reported_nmse(what + " unsplit", yw, ref), 1e-9) << what;
            size_t differ = 0;
            for (size_t e = 0; e < ys.size(); ++e)
                differ += std::bit_cast<uint32_t>(ys[e]) != std::bit_cast<uint32_t>(yw[e]);
            EXPECT_GT(differ, 0u) << what << ": the same bits as unsplit, so no split ran";
        }
    }
}

// The expert FFN's prefill on matrix units (HIP hip_moe_mma.hip, Vulkan matmul_coopmat.comp
// MOE): against a double reference over the f16 roundings the kernels make (weights, the
// tokens' x, the hidden rows before down), with runs of more than 64 slots an expert (two
// tiles), a rank holding a slice of the experts, and the route of the backend itself; the
// int8-dot result (`int8`, a backend with the f16 prefill off) apart from it shows it ran.
inline void expect_moe_f16_prefill(Backend& f16, Backend& int8) {
    struct Case {
        DType gate_up, down;
        int64_t n_embd, n_ff, n_expert, n_local;
        int first, k;
        int64_t T;
    };
    for (const Case& c : {Case{DType::Q4_0, DType::Q4_0, 512, 256, 16, 16, 0, 4, 40},
                          Case{DType::Q4_K, DType::Q6_K, 512, 512, 4, 4, 0, 2, 200},
                          Case{DType::Q8_0, DType::Q5_K, 256, 256, 16, 8, 4, 8, 33}}) {
        QuantWeight gate(c.gate_up, {c.n_embd, c.n_ff, c.n_local}, 61),
            up(c.gate_up, {c.n_embd, c.n_ff, c.n_local}, 62),
            down(c.down, {c.n_ff, c.n_embd, c.n_local}, 63);
        const auto x = random_floats(size_t(c.n_embd * c.T), 64, -2.0f, 2.0f);
        const auto logits = random_floats(size_t(c.n_expert * c.T), 65, -3.0f, 3.0f);
        auto run = [&](Backend& be, std::vector<float>& route) {
            OpGraph g;
            std::vector<float> out;
            const TensorId wg = g.weight(be, gate), wu = g.weight(be, up), wd = g.weight(be, down);
            const TensorId in = g.input(x.data(), c.n_embd, c.T);
            const TensorId rt = g.g.activation("route", 2 * c.k, c.T);
            g.node(Op::MoeRoute, rt, {g.input(logits.data(), c.n_expert, c.T)}, {c.k, 1, 0, 0});
            g.node(Op::MoeFfn, g.output(out, c.n_embd, c.T), {in, rt, wg, wu, wd},
                   {c.first, int32_t(Activation::Silu), 0, 0});
            g.node(Op::Copy, g.output(route, 2 * c.k, c.T), {rt});
            g.run(be);
            return out;
        };
        std::vector<float> route, route8;
        const std::vector<float> y = run(f16, route), y8 = run(int8, route8);
        std::vector<double> ref(y.size(), 0.0), h(size_t(c.n_ff));
        for (int64_t t = 0; t < c.T; ++t)
            for (int j = 0; j < c.k; ++j) {
                const int le = int(route[size_t(t * 2 * c.k + 2 * j)]) - c.first;
                const double wgt = route[size_t(t * 2 * c.k + 2 * j + 1)];
                if (le < 0 || le >= c.n_local) continue;  // another rank's expert
                for (int64_t f = 0; f < c.n_ff; ++f) {
                    double a = 0, b = 0;
                    for (int64_t i = 0; i < c.n_embd; ++i) {
                        const size_t wi = size_t((le * c.n_ff + f) * c.n_embd + i);
                        const double xi = round_f16(x[size_t(t * c.n_embd + i)]);
                        a += double(round_f16(gate.values[wi])) * xi;
                        b += double(round_f16(up.values[wi])) * xi;
                    }
                    h[size_t(f)] = round_f16(float(ref_activation(Activation::Silu, a) * b));
                }
                for (int64_t o = 0; o < c.n_embd; ++o) {
                    double d = 0;
                    for (int64_t f = 0; f < c.n_ff; ++f)
                        d += double(
                                 round_f16(down.values[size_t((le * c.n_embd + o) * c.n_ff + f)])) *
                             h[size_t(f)];
                    ref[size_t(t * c.n_embd + o)] += wgt * d;
                }
            }
        const std::string what = std::string(dtype_name(c.gate_up)) + "/" +
                                 std::string(dtype_name(c.down)) + " T=" + std::to_string(c.T) +
                                 " experts " + std::to_string(c.first) + "+" +
                                 std::to_string(c.n_local);
        EXPECT_LT(reported_nmse(what + " f16 prefill vs its reference", y, ref), 1e-6) << what;
        const double apart = reported_nmse(what + " f16 prefill vs int8-dot", y, as_double(y8));
        EXPECT_LT(apart, 2e-4) << what;
        EXPECT_GT(apart, 1e-12) << what
                                << ": the same bits as the int8-dot path: the f16 path did not run";
    }
}

}  // namespace tandem::test

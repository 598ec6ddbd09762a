// Matmul with every weight type the engine runs, odd shapes and token counts around the kernels'
// token tile, plus MoE routing and expert FFN, against double-precision references over the
// dequantised weights.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "op_harness.h"

namespace tandem::test {
namespace {

class MatOps : public ::testing::TestWithParam<std::string> {};

// Activations are quantised to q8 for the integer types: that, not the kernel, bounds the error.
double matmul_tolerance(DType t) {
    switch (t) {
        case DType::F32:
            return 1e-10;
        case DType::F16:
        case DType::BF16:
            return 1e-8;
        default:
            return 2e-4;
    }
}

std::vector<double> ref_matmul(const QuantWeight& w, const std::vector<float>& x, int64_t T,
                               const std::vector<float>* bias) {
    const int64_t n_in = w.ne[0], n_out = w.ne[1];
    std::vector<double> y(static_cast<size_t>(T * n_out));
    for (int64_t t = 0; t < T; ++t)
        for (int64_t o = 0; o < n_out; ++o) {
            double s = bias ? (*bias)[o] : 0.0;
            for (int64_t i = 0; i < n_in; ++i)
                s += double(w.values[o * n_in + i]) * x[t * n_in + i];
            y[t * n_out + o] = s;
        }
    return y;
}

TEST_P(MatOps, MatMulTypesAndShapes) {
    auto be = make_backend(GetParam());
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q5_0,
                    DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
        for (auto [n_in, n_out, T] : {std::tuple<int64_t, int64_t, int64_t>{256, 1, 1},
                                      {256, 67, 1},
                                      {512, 33, 3},
                                      {768, 130, 9},
                                      {256, 16, 17}}) {
            QuantWeight w(t, {n_in, n_out, 1}, uint32_t(n_out * 7 + T));
            auto x = random_floats(static_cast<size_t>(n_in * T), uint32_t(T + 99));
            OpGraph g;
            std::vector<float> out;
            TensorId wt = g.weight(*be, w);
            TensorId in = g.input(x.data(), n_in, T);
            g.node(Op::MatMul, g.output(out, n_out, T), {wt, in});
            g.run(*be);
            EXPECT_LT(nmse(out, ref_matmul(w, x, T, nullptr)), matmul_tolerance(t))
                << dtype_name(t) << " " << n_in << "x" << n_out << " T=" << T;
        }
    }
}

TEST_P(MatOps, MatMulWithBias) {
    auto be = make_backend(GetParam());
    QuantWeight w(DType::F16, {64, 48, 1}, 3);
    QuantWeight bias(DType::F32, {48, 1, 1}, 4);
    auto x = random_floats(64 * 2, 5);
    OpGraph g;
    std::vector<float> out;
    TensorId wt = g.weight(*be, w), bt = g.weight(*be, bias);
    TensorId in = g.input(x.data(), 64, 2);
    g.node(Op::MatMul, g.output(out, 48, 2), {wt, in, bt});
    g.run(*be);
    EXPECT_LT(nmse(out, ref_matmul(w, x, 2, &bias.values)), 1e-8);
}

TEST_P(MatOps, MoeRouteAndExperts) {
    auto be = make_backend(GetParam());
    const int64_t n_embd = 256, n_ff = 64, n_expert = 8, T = 5;
    const int k = 2;
    for (DType t : {DType::F32, DType::Q8_0}) {
        QuantWeight gate(t, {n_embd, n_ff, n_expert}, 21), up(t, {n_embd, n_ff, n_expert}, 22);
        QuantWeight down(t, {n_ff, n_embd, n_expert}, 23);
        auto x = random_floats(n_embd * T, 24);
        auto logits = random_floats(n_expert * T, 25, -3, 3);
        OpGraph g;
        std::vector<float> route, out;
        TensorId wg = g.weight(*be, gate), wu = g.weight(*be, up), wd = g.weight(*be, down);
        TensorId in = g.input(x.data(), n_embd, T), lg = g.input(logits.data(), n_expert, T);
        TensorId r = g.g.activation("route", 2 * k, T);
        g.node(Op::MoeRoute, r, {lg}, {k, 1, 0, 0});
        g.node(Op::Copy, g.output(route, 2 * k, T), {r});
        g.node(Op::MoeFfn, g.output(out, n_embd, T), {in, r, wg, wu, wd},
               {0, int32_t(Activation::Silu), 0, 0});
        g.run(*be);
        std::vector<double> ref(static_cast<size_t>(n_embd * T), 0.0);
        for (int64_t tt = 0; tt < T; ++tt) {
            std::vector<double> p(n_expert);
            double mx = *std::max_element(logits.begin() + tt * n_expert,
                                          logits.begin() + (tt + 1) * n_expert);
            double s = 0;
            for (int64_t e = 0; e < n_expert; ++e)
                s += p[e] = std::exp(logits[tt * n_expert + e] - mx);
            std::vector<int> order(n_expert);
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
            const double wsum = p[order[0]] + p[order[1]];
            for (int j = 0; j < k; ++j) {
                const int e = order[j];
                EXPECT_EQ(route[tt * 2 * k + 2 * j], float(e));
                EXPECT_NEAR(route[tt * 2 * k + 2 * j + 1], p[e] / wsum, 1e-6);
                std::vector<double> h(n_ff);
                for (int64_t f = 0; f < n_ff; ++f) {
                    double a = 0, b = 0;
                    for (int64_t i = 0; i < n_embd; ++i) {
                        a += double(gate.values[(e * n_ff + f) * n_embd + i]) * x[tt * n_embd + i];
                        b += double(up.values[(e * n_ff + f) * n_embd + i]) * x[tt * n_embd + i];
                    }
                    h[f] = a / (1 + std::exp(-a)) * b;
                }
                for (int64_t o = 0; o < n_embd; ++o) {
                    double d = 0;
                    for (int64_t f = 0; f < n_ff; ++f)
                        d += double(down.values[(e * n_embd + o) * n_ff + f]) * h[f];
                    ref[tt * n_embd + o] += p[e] / wsum * d;
                }
            }
        }
        EXPECT_LT(nmse(out, ref), matmul_tolerance(t) * 4) << dtype_name(t);
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, MatOps, ::testing::ValuesIn(compute_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tandem::test

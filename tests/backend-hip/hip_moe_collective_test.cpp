// MoE routing and the expert FFN on the HIP backend against a double-precision reference written
// here and against the CPU backend (all experts, and a tensor-parallel rank holding half of
// them); AllReduce/AllGather through a collective (host-staged) against the CPU backend.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "hip_test_support.h"
#include "tandem/backend/collective.h"

namespace tandem::test {
namespace {

double act_ref(Activation a, double x) {
    if (a == Activation::Silu) return x / (1 + std::exp(-x));
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST(HipMoe, RouteAndExpertsMatchReferenceAndCpu) {
    TANDEM_HIP_OR_SKIP(hip);
    const int64_t n_embd = 256, n_ff = 96, n_expert = 8;
    struct Case {
        DType gate_up, down;
        int first_expert;  // a tensor-parallel rank holding experts first..first+n_local-1
        int64_t n_local;
        Activation act;
        int k;
        int64_t T;
    };
    for (Case c : {Case{DType::F32, DType::F32, 0, 8, Activation::Silu, 2, 5},
                   Case{DType::Q8_0, DType::Q5_0, 0, 8, Activation::Silu, 2, 1},
                   Case{DType::Q4_K, DType::Q8_0, 4, 4, Activation::GeluTanh, 3, 7},
                   Case{DType::F16, DType::F32, 2, 3, Activation::Silu, 8, 3}}) {
        QuantWeight gate(c.gate_up, {n_embd, n_ff, c.n_local}, 21);
        QuantWeight up(c.gate_up, {n_embd, n_ff, c.n_local}, 22);
        QuantWeight down(c.down, {n_ff, n_embd, c.n_local}, 23);
        const int64_t T = c.T;
        const int k = c.k;
        auto x = random_floats(size_t(n_embd * T), 24);
        auto logits = random_floats(size_t(n_expert * T), 25, -3, 3);
        std::vector<float> route_h, route_c;
        Backend* hp = hip.get();
        auto r = run_both(*hip, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
            TensorId wg = g.weight(b, gate), wu = g.weight(b, up), wd = g.weight(b, down);
            TensorId in = g.input(x.data(), n_embd, T), lg = g.input(logits.data(), n_expert, T);
            TensorId rt = g.g.activation("route", 2 * k, T);
            g.node(Op::MoeRoute, rt, {lg}, {k, 1, 0, 0});
            g.node(Op::Copy, g.output(&b == hp ? route_h : route_c, 2 * k, T), {rt});
            g.node(Op::MoeFfn, g.output(out, n_embd, T), {in, rt, wg, wu, wd},
                   {c.first_expert, int32_t(c.act), 0, 0});
        });
        // Reference: softmax, top-k (ties to the lower id), renormalised weights, and the FFN
        // of the experts this rank holds, all in double over the dequantised weights.
        std::vector<double> ref(size_t(n_embd * T), 0.0);
        for (int64_t t = 0; t < T; ++t) {
            std::vector<double> p(n_expert);
            const float* l = logits.data() + t * n_expert;
            const double mx = *std::max_element(l, l + n_expert);
            double s = 0;
            for (int64_t e = 0; e < n_expert; ++e) s += p[e] = std::exp(l[e] - mx);
            std::vector<int> order(n_expert);
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
            double wsum = 0;
            for (int j = 0; j < k; ++j) wsum += p[order[j]];
            for (int j = 0; j < k; ++j) {
                const int e = order[j];
                EXPECT_EQ(route_h[t * 2 * k + 2 * j], float(e)) << "token " << t << " slot " << j;
                EXPECT_NEAR(route_h[t * 2 * k + 2 * j + 1], p[e] / wsum, 1e-6);
                const int le = e - c.first_expert;
                if (le < 0 || le >= c.n_local) continue;
                std::vector<double> h(n_ff);
                for (int64_t f = 0; f < n_ff; ++f) {
                    double a = 0, b = 0;
                    for (int64_t i = 0; i < n_embd; ++i) {
                        a += double(gate.values[(le * n_ff + f) * n_embd + i]) * x[t * n_embd + i];
                        b += double(up.values[(le * n_ff + f) * n_embd + i]) * x[t * n_embd + i];
                    }
                    h[f] = act_ref(c.act, a) * b;
                }
                for (int64_t o = 0; o < n_embd; ++o) {
                    double d = 0;
                    for (int64_t f = 0; f < n_ff; ++f)
                        d += double(down.values[(le * n_embd + o) * n_ff + f]) * h[f];
                    ref[t * n_embd + o] += p[e] / wsum * d;
                }
            }
        }
        const std::string what = "moe " + std::string(dtype_name(c.gate_up)) + "/" +
                                 std::string(dtype_name(c.down)) + " k=" + std::to_string(k) +
                                 " experts " + std::to_string(c.first_expert) + "+" +
                                 std::to_string(c.n_local) + " T=" + std::to_string(T);
        EXPECT_LT(reported_nmse(what + " route vs cpu", route_h, as_double(route_c)), 1e-12)
            << what;
        EXPECT_LT(reported_nmse(what + " vs f64", r.hip, ref), 1e-9) << what;
        // The CPU backend quantises activations to q8 for integer weight types.
        EXPECT_LT(reported_nmse(what + " vs cpu", r.hip, as_double(r.cpu)),
                  c.gate_up == DType::F32 ? 1e-10 : 1e-3)
            << what;
    }
}

TEST(HipMoe, RouteTopKOutOfRangeIsAClearError) {
    TANDEM_HIP_OR_SKIP(hip);
    std::vector<float> logits(8, 0.5f), out;
    OpGraph g;
    g.node(Op::MoeRoute, g.output(out, 2 * 9, 1), {g.input(logits.data(), 8, 1)}, {9, 1, 0, 0});
    try {
        g.run(*hip);
        ADD_FAILURE() << "top-9 of 8 experts ran";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("moe_route"), std::string::npos) << e.what();
    }
}

// Rank 0 of two: the other rank adds i to element i (all-reduce) and contributes half as many
// columns, all -1 - i (all-gather).
class FakeTwoRanks : public Collective {
  public:
    int rank() const override { return 0; }
    int n_ranks() const override { return 2; }
    void all_reduce_sum(float* d, size_t n) override {
        for (size_t i = 0; i < n; ++i) d[i] += float(i);
    }
    void all_gather(const float* local, size_t n, std::vector<float>& all,
                    std::vector<size_t>& sizes) override {
        all.assign(local, local + n);
        for (size_t i = 0; i < n / 2; ++i) all.push_back(-1.0f - float(i));
        sizes = {n, n / 2};
    }
};

TEST(HipCollective, AllReduceAndAllGatherMatchCpu) {
    TANDEM_HIP_OR_SKIP(hip);
    auto x = random_floats(2 * 6, 40);
    Backend* hp = hip.get();
    for (bool with_collective : {false, true}) {
        FakeTwoRanks coll;
        std::vector<float> reduced_h, reduced_c;
        auto r = run_both(*hip, [&](OpGraph& g, Backend& b, std::vector<float>& gathered) {
            b.set_collective(with_collective ? &coll : nullptr);
            TensorId in = g.input(x.data(), 6, 2);
            TensorId a = g.g.activation("a", 6, 2);
            g.node(Op::Copy, a, {in});
            g.node(Op::Scale, a, {a}, {0, 0, 0, 0}, {2.0f, 0});
            g.node(Op::AllReduce, a, {a});
            g.node(Op::Copy, g.output(&b == hp ? reduced_h : reduced_c, 6, 2), {a});
            g.node(Op::AllGather, g.output(gathered, with_collective ? 9 : 6, 2), {in});
        });
        EXPECT_EQ(reduced_h, reduced_c);
        EXPECT_EQ(r.hip, r.cpu);
        EXPECT_EQ(reduced_h[7], 2.0f * x[7] + (with_collective ? 7.0f : 0.0f));
        if (with_collective) {
            EXPECT_EQ(r.hip[9], x[6]);          // row 1 starts with this rank's 6 columns
            EXPECT_EQ(r.hip[8], -1.0f - 2.0f);  // row 0, the other rank's third column
        }
    }
    hip->set_collective(nullptr);
}

}  // namespace
}  // namespace tandem::test

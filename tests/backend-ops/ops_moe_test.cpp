// MoE routing (softmax, top-k, renormalised weights) and the expert FFN on every backend: all
// experts on one rank and a tensor-parallel rank holding a slice of them, float and block weight
// types, decode and prefill token counts; against double references and (GPU) the CPU backend.
#include <algorithm>
#include <cmath>

#include "op_references.h"
#include "tandem/common/error.h"

namespace tandem::test {
namespace {

class MoeOps : public BackendOpTest {};

bool is_float(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

bool q8_type(DType t) {
    return t == DType::Q4_0 || t == DType::Q8_0 || t == DType::Q4_K || t == DType::Q5_K ||
           t == DType::Q6_K;
}

TEST_P(MoeOps, RouteAndExperts) {
    struct Case {
        DType gate_up, down;
        int first_expert;  // this rank holds experts first..first+n_local-1
        int64_t n_local;
        Activation act;
        int k;
        int64_t T;
        int64_t n_embd = 256, n_ff = 96, n_expert = 8;
    };
    // Rows of whole 256-value groups in the q8 types take the GPU backends' q8 expert path:
    // decode (1-8 tokens: a block per slot, the down projection summing a token's slots) and
    // prefill (slots grouped by expert, TM at a time); the others the element-wise kernels.
    for (const Case& c :
         {Case{DType::F32, DType::F32, 0, 8, Activation::Silu, 2, 5},
          Case{DType::Q8_0, DType::Q8_0, 0, 8, Activation::Silu, 2, 5},
          Case{DType::Q8_0, DType::Q5_0, 0, 8, Activation::Silu, 2, 5},
          Case{DType::Q8_0, DType::Q5_0, 0, 8, Activation::Silu, 2, 1},
          Case{DType::Q4_K, DType::Q8_0, 4, 4, Activation::GeluTanh, 2, 5},
          Case{DType::Q4_K, DType::Q8_0, 4, 4, Activation::GeluTanh, 3, 7},
          Case{DType::F16, DType::F32, 2, 3, Activation::Silu, 8, 3},
          Case{DType::Q4_0, DType::Q4_0, 0, 16, Activation::Silu, 8, 1, 512, 256, 16},
          Case{DType::Q4_0, DType::Q4_0, 0, 16, Activation::Silu, 8, 5, 512, 256, 16},
          Case{DType::Q8_0, DType::Q6_K, 4, 8, Activation::Silu, 4, 3, 512, 256, 16},
          Case{DType::Q4_K, DType::Q6_K, 0, 16, Activation::GeluTanh, 4, 20, 256, 512, 16},
          Case{DType::Q5_K, DType::Q8_0, 8, 8, Activation::Silu, 2, 12, 512, 256, 16},
          Case{DType::Q4_0, DType::Q4_0, 0, 16, Activation::Silu, 8, 40, 512, 256, 16},
          Case{DType::Q6_K, DType::Q4_K, 0, 4, Activation::Silu, 3, 9, 2048, 256, 4}}) {
        const int64_t n_embd = c.n_embd, n_ff = c.n_ff, n_expert = c.n_expert;
        QuantWeight gate(c.gate_up, {n_embd, n_ff, c.n_local}, 21);
        QuantWeight up(c.gate_up, {n_embd, n_ff, c.n_local}, 22);
        QuantWeight down(c.down, {n_ff, n_embd, c.n_local}, 23);
        const int64_t T = c.T;
        const int k = c.k;
        auto x = random_floats(size_t(n_embd * T), 24);
        auto logits = random_floats(size_t(n_expert * T), 25, -3, 3);
        // Outputs: the route (expert, weight pairs) and the FFN result, in that order.
        auto run = [&](Backend& b, std::vector<float>& route, std::vector<float>& out) {
            OpGraph g;
            TensorId wg = g.weight(b, gate), wu = g.weight(b, up), wd = g.weight(b, down);
            TensorId in = g.input(x.data(), n_embd, T), lg = g.input(logits.data(), n_expert, T);
            TensorId rt = g.g.activation("route", 2 * k, T);
            g.node(Op::MoeRoute, rt, {lg}, {k, 1, 0, 0});
            g.node(Op::Copy, g.output(route, 2 * k, T), {rt});
            g.node(Op::MoeFfn, g.output(out, n_embd, T), {in, rt, wg, wu, wd},
                   {c.first_expert, int32_t(c.act), 0, 0});
            g.run(b);
        };
        std::vector<float> route, out, route_cpu, out_cpu;
        run(*be, route, out);
        if (gpu()) {
            auto cpu = make_backend("cpu", 2);
            run(*cpu, route_cpu, out_cpu);
        }
        std::vector<double> ref(size_t(n_embd * T), 0.0), route_ref(size_t(2 * k * T));
        for (int64_t t = 0; t < T; ++t) {
            const auto r = ref_moe_route(logits.data() + t * n_expert, n_expert, k);
            for (int j = 0; j < k; ++j) {
                const auto [e, w] = r[size_t(j)];
                EXPECT_EQ(route[t * 2 * k + 2 * j], float(e)) << "token " << t << " slot " << j;
                EXPECT_NEAR(route[t * 2 * k + 2 * j + 1], w, 1e-6)
                    << "token " << t << " slot " << j;
                route_ref[t * 2 * k + 2 * j] = e;
                route_ref[t * 2 * k + 2 * j + 1] = w;
                const int le = e - c.first_expert;
                if (le < 0 || le >= c.n_local) continue;  // another rank's expert
                ref_expert_ffn(gate, up, down, le, c.act, x.data() + t * n_embd, w,
                               ref.data() + t * n_embd);
            }
        }
        const std::string what = std::string(dtype_name(c.gate_up)) + "/" +
                                 std::string(dtype_name(c.down)) + " k=" + std::to_string(k) +
                                 " experts " + std::to_string(c.first_expert) + "+" +
                                 std::to_string(c.n_local) + " T=" + std::to_string(T) + " " +
                                 std::to_string(n_embd) + "x" + std::to_string(n_ff);
        check("moe_route", what, route, route_ref, 1e-12, route_cpu, 1e-12);
        // The CPU backend quantises activations to q8 for block types (both matmuls); so do
        // the GPU backends' q8 expert path (see the cases): each within 2e-4 of the double
        // sum, as their q8 matvecs are; apart, two roundings of two chained products (the CPU
        // backend's K-quant activations are blocks of 256: H200, 1.5-2.1e-4).
        const bool floats = is_float(c.gate_up) && is_float(c.down);
        const bool gpu_q8 =
            gpu() && q8_type(c.gate_up) && q8_type(c.down) && n_embd % 256 == 0 && n_ff % 256 == 0;
        const double f64 = gpu_q8                                            ? 2e-4
                           : gpu()                                           ? 1e-9
                           : c.gate_up == DType::F32 && c.down == DType::F32 ? 4e-10
                           : floats                                          ? 4e-8
                                                                             : 8e-4;
        check("moe_ffn", what, out, ref, f64, out_cpu,
              c.gate_up == DType::F32 ? 1e-10
              : gpu_q8                ? 5e-4
                                      : 1e-3);
    }
}

// The router's f32 matmul then the route of its logits, as the graph builder emits them: the GPU
// backends run a decode step's pair as one launch (HIP k_router_route, Vulkan matvec.comp
// ROUTE) where it applies (<= 8 tokens, <= 512 experts), the rest as two. The logits against
// the double dot products; the route against the reference route of the logits the backend
// returned (so a near tie cannot flip the expected experts).
TEST_P(MoeOps, RouterMatmulThenRoute) {
    struct Case {
        int64_t n_embd, n_expert;
        int k;
        int64_t T;
        bool normalize;
    };
    for (const Case& c :
         {Case{2048, 128, 8, 1, true}, Case{2048, 128, 8, 2, true}, Case{256, 8, 2, 1, true},
          Case{96, 60, 4, 3, false}, Case{512, 512, 8, 8, true}, Case{256, 600, 8, 1, true},
          Case{256, 16, 4, 20, true}}) {
        QuantWeight router(DType::F32, {c.n_embd, c.n_expert, 1}, 41, 0.2f);
        const auto x = random_floats(size_t(c.n_embd * c.T), 42, -2.0f, 2.0f);
        auto run = [&](Backend& b, std::vector<float>& logits, std::vector<float>& route) {
            OpGraph g;
            const TensorId w = g.weight(b, router), in = g.input(x.data(), c.n_embd, c.T);
            const TensorId lg = g.output(logits, c.n_expert, c.T);
            const TensorId rt = g.g.activation("route", 2 * c.k, c.T);
            g.node(Op::MatMul, lg, {w, in});
            g.node(Op::MoeRoute, rt, {lg}, {c.k, c.normalize ? 1 : 0, 0, 0});
            g.node(Op::Copy, g.output(route, 2 * c.k, c.T), {rt});
            g.run(b);
        };
        std::vector<float> logits, route, logits_cpu, route_cpu;
        run(*be, logits, route);
        if (gpu()) {  // its logits only: its route is of logits a few bits apart
            auto cpu = make_backend("cpu", 2);
            run(*cpu, logits_cpu, route_cpu);
        }
        const std::string what = std::to_string(c.n_embd) + " -> " + std::to_string(c.n_expert) +
                                 " k=" + std::to_string(c.k) + " T=" + std::to_string(c.T);
        std::vector<double> ref(size_t(c.n_expert * c.T));
        for (int64_t t = 0; t < c.T; ++t)
            for (int64_t e = 0; e < c.n_expert; ++e) {
                double d = 0;
                for (int64_t i = 0; i < c.n_embd; ++i)
                    d += double(router.values[size_t(e * c.n_embd + i)]) *
                         double(x[size_t(t * c.n_embd + i)]);
                ref[size_t(t * c.n_expert + e)] = d;
            }
        check("router_matmul", what, logits, ref, 1e-11, logits_cpu, 1e-11);
        for (int64_t t = 0; t < c.T; ++t) {
            const float* l = logits.data() + t * c.n_expert;
            const auto r = ref_moe_route(l, c.n_expert, c.k);  // weights renormalised over k
            const double mx = *std::max_element(l, l + c.n_expert);
            double sum = 0;  // over every expert: the weights without renormalising
            for (int64_t e = 0; e < c.n_expert; ++e) sum += std::exp(double(l[e]) - mx);
            for (int j = 0; j < c.k; ++j) {
                const auto [e, w] = r[size_t(j)];
                EXPECT_EQ(route[size_t(t * 2 * c.k + 2 * j)], float(e))
                    << what << " token " << t << " slot " << j;
                EXPECT_NEAR(route[size_t(t * 2 * c.k + 2 * j + 1)],
                            c.normalize ? w : std::exp(double(l[e]) - mx) / sum, 1e-6)
                    << what << " token " << t << " slot " << j;
            }
        }
    }
}

TEST_P(MoeOps, RouteTopKOutOfRangeIsAClearError) {
    std::vector<float> logits(8, 0.5f), out;
    OpGraph g;
    g.node(Op::MoeRoute, g.output(out, 2 * 9, 1), {g.input(logits.data(), 8, 1)}, {9, 1, 0, 0});
    try {
        g.run(*be);
        ADD_FAILURE() << "top-9 of 8 experts ran";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("moe_route"), std::string::npos) << e.what();
    }
}

TANDEM_OP_SUITE(MoeOps);

}  // namespace
}  // namespace tandem::test

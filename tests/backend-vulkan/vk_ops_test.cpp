// Every op of the step graph on the Vulkan backend against the CPU backend (NMSE per op, in the
// style of ggml's test-backend-ops): every weight type, odd shapes, several token counts. Matmuls
// are also checked against a double-precision sum over the dequantised weights, which the Vulkan
// kernels match more tightly than the CPU backend does (it quantises activations to q8).
#include <cmath>
#include <cstring>

#include "vk_test_support.h"

namespace tandem::test {
namespace {

const DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,
                              DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                              DType::Q4_K, DType::Q5_K, DType::Q6_K};

double cpu_tolerance(DType t) {
    return t == DType::F32 ? 1e-10 : (t == DType::F16 || t == DType::BF16) ? 1e-8 : 2e-4;
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

TEST(VulkanOps, MatMulEveryTypeAndShape) {
    TANDEM_VULKAN_OR_SKIP(vk);
    for (DType t : kWeightTypes) {
        for (auto [n_in, n_out, T] : {std::tuple<int64_t, int64_t, int64_t>{256, 1, 1},
                                      {256, 67, 1},
                                      {512, 33, 3},
                                      {768, 130, 9},
                                      {256, 16, 17}}) {
            QuantWeight w(t, {n_in, n_out, 1}, uint32_t(n_out * 7 + T));
            auto x = random_floats(static_cast<size_t>(n_in * T), uint32_t(T + 99));
            auto r = run_both(*vk, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
                TensorId wt = g.weight(b, w);
                TensorId in = g.input(x.data(), n_in, T);
                g.node(Op::MatMul, g.output(out, n_out, T), {wt, in});
            });
            const auto exact = ref_matmul(w, x, T, nullptr);
            EXPECT_LT(nmse(r.vulkan, exact), 1e-9)
                << dtype_name(t) << " " << n_in << "x" << n_out << " T=" << T;
            EXPECT_LT(nmse(r.vulkan, as_double(r.cpu)), cpu_tolerance(t))
                << dtype_name(t) << " " << n_in << "x" << n_out << " T=" << T;
        }
    }
}

TEST(VulkanOps, MatMulWithBias) {
    TANDEM_VULKAN_OR_SKIP(vk);
    QuantWeight w(DType::F16, {96, 45, 1}, 3);
    QuantWeight bias(DType::F32, {45, 1, 1}, 4);
    auto x = random_floats(96 * 5, 5);
    auto r = run_both(*vk, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
        TensorId wt = g.weight(b, w), bt = g.weight(b, bias);
        g.node(Op::MatMul, g.output(out, 45, 5), {wt, g.input(x.data(), 96, 5), bt});
    });
    EXPECT_LT(nmse(r.vulkan, ref_matmul(w, x, 5, &bias.values)), 1e-10);
    EXPECT_LT(nmse(r.vulkan, as_double(r.cpu)), 1e-8);
}

TEST(VulkanOps, GetRowsEveryType) {
    TANDEM_VULKAN_OR_SKIP(vk);
    const std::vector<int32_t> ids{0, 12, 3, 36, 36, 7, 1};
    for (DType t : kWeightTypes) {
        QuantWeight table(t, {512, 37, 1}, 11);
        auto r = run_both(*vk, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
            TensorId tt = g.weight(b, table);
            TensorId in = g.input(ids.data(), int64_t(ids.size()), 1, DType::I32);
            g.node(Op::GetRows, g.output(out, 512, int64_t(ids.size())), {tt, in});
        });
        // Dequantisation is exact arithmetic on both sides.
        EXPECT_EQ(r.vulkan, r.cpu) << dtype_name(t);
    }
}

TEST(VulkanOps, GetRowsRejectsTokenOutsideVocabulary) {
    TANDEM_VULKAN_OR_SKIP(vk);
    QuantWeight table(DType::F32, {32, 10, 1}, 1);
    const std::vector<int32_t> ids{3, 10};
    OpGraph g;
    std::vector<float> out;
    TensorId tt = g.weight(*vk, table);
    g.node(Op::GetRows, g.output(out, 32, 2), {tt, g.input(ids.data(), 2, 1, DType::I32)});
    try {
        g.run(*vk);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("token id 10"), std::string::npos) << e.what();
    }
}

TEST(VulkanOps, UnsupportedWeightTypeIsAnError) {
    TANDEM_VULKAN_OR_SKIP(vk);
    std::vector<uint8_t> bytes(row_bytes(DType::IQ4_NL, 32) * 2);
    WeightDesc d{"blk.0.ffn_up.weight", DType::IQ4_NL, {32, 2, 1}, bytes.data(), bytes.size()};
    try {
        vk->upload_weight(0, d, true);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("blk.0.ffn_up.weight"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("iq4_nl"), std::string::npos) << e.what();
    }
}

TEST(VulkanOps, Elementwise) {
    TANDEM_VULKAN_OR_SKIP(vk);
    for (int64_t cols : {1, 7, 1000, 4099}) {
        const int64_t rows = 3;
        auto a = random_floats(size_t(cols * rows), 1, -4, 4);
        auto bv = random_floats(size_t(cols * rows), 2, -4, 4);
        struct Case {
            Op op;
            int32_t i0;
            float f0;
        };
        for (Case c : {Case{Op::Add, 0, 0}, Case{Op::Mul, 0, 0}, Case{Op::Scale, 0, 0.37f},
                       Case{Op::Softcap, 0, 3.0f}, Case{Op::GatedAct, int(Activation::Silu), 0},
                       Case{Op::GatedAct, int(Activation::GeluTanh), 0}, Case{Op::Copy, 0, 0}}) {
            const bool binary = c.op == Op::Add || c.op == Op::Mul || c.op == Op::GatedAct;
            auto r = run_both(*vk, [&](OpGraph& g, Backend&, std::vector<float>& out) {
                TensorId ia = g.input(a.data(), cols, rows);
                TensorId o = g.output(out, cols, rows);
                if (binary)
                    g.node(c.op, o, {ia, g.input(bv.data(), cols, rows)}, {c.i0, 0, 0, 0});
                else
                    g.node(c.op, o, {ia}, {0, 0, 0, 0}, {c.f0, 0});
            });
            EXPECT_LT(nmse(r.vulkan, as_double(r.cpu)), 1e-11) << op_name(c.op) << " " << cols;
        }
    }
}

TEST(VulkanOps, TakeRows) {
    TANDEM_VULKAN_OR_SKIP(vk);
    auto a = random_floats(13 * 9, 3);
    auto r = run_both(*vk, [&](OpGraph& g, Backend&, std::vector<float>& out) {
        g.node(Op::TakeRows, g.output(out, 13, 2), {g.input(a.data(), 13, 9)}, {6, 0, 0, 0});
    });
    EXPECT_EQ(r.vulkan, r.cpu);
    EXPECT_EQ(r.vulkan[0], a[6 * 13]);
}

TEST(VulkanOps, RmsNorm) {
    TANDEM_VULKAN_OR_SKIP(vk);
    for (auto [cols, group, with_w] : {std::tuple<int64_t, int32_t, bool>{1000, 0, true},
                                       {64, 0, false},
                                       {6 * 48, 48, true},
                                       {4099, 0, true}}) {
        const int64_t rows = 5;
        const int64_t wn = group > 0 ? group : cols;
        auto x = random_floats(size_t(cols * rows), 7, -3, 3);
        QuantWeight w(DType::F32, {wn, 1, 1}, 8);
        auto r = run_both(*vk, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
            TensorId ix = g.input(x.data(), cols, rows);
            TensorId o = g.output(out, cols, rows);
            if (with_w)
                g.node(Op::RmsNorm, o, {ix, g.weight(b, w)}, {group, 0, 0, 0}, {1e-6f, 0});
            else
                g.node(Op::RmsNorm, o, {ix}, {group, 0, 0, 0}, {1e-6f, 0});
        });
        EXPECT_LT(nmse(r.vulkan, as_double(r.cpu)), 1e-11) << cols << " group " << group;
    }
}

TEST(VulkanOps, Rope) {
    TANDEM_VULKAN_OR_SKIP(vk);
    const std::vector<int32_t> pos{0, 1, 17, 300, 4095};
    const int64_t T = int64_t(pos.size());
    for (auto [head_dim, n_rot, mode, factors] :
         {std::tuple<int32_t, int32_t, RopeMode, bool>{64, 64, RopeMode::Normal, false},
          {64, 64, RopeMode::Neox, false},
          {128, 64, RopeMode::Neox, true},
          {32, 16, RopeMode::Normal, false}}) {
        const int64_t cols = 3 * head_dim;
        auto x = random_floats(size_t(cols * T), 9);
        // Frequency factors >= 1 (as Llama 3 long-context models have), uploaded as an f32 weight.
        QuantWeight ff(DType::F32, {n_rot / 2, 1, 1}, 10);
        for (auto& v : ff.values) v = 1.0f + std::abs(v) * 4.0f;
        std::memcpy(ff.bytes.data(), ff.values.data(), ff.bytes.size());
        auto r = run_both(*vk, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
            TensorId ix = g.input(x.data(), cols, T);
            TensorId ip = g.input(pos.data(), T, 1, DType::I32);
            TensorId o = g.output(out, cols, T);
            const std::array<int32_t, 4> i{head_dim, n_rot, int32_t(mode), 0};
            if (factors) {
                g.node(Op::Rope, o, {ix, ip, g.weight(b, ff)}, i, {10000.0f, 1.0f});
            } else {
                g.node(Op::Rope, o, {ix, ip}, i, {500000.0f, 0.5f});
            }
        });
        // Angles up to 4095 rad in float on the GPU vs double on the CPU: ~1e-4 absolute.
        EXPECT_LT(nmse(r.vulkan, as_double(r.cpu)), 1e-7) << head_dim << "/" << n_rot;
    }
}

}  // namespace
}  // namespace tandem::test

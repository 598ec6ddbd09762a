// Matmul, get_rows, element-wise ops and RMSNorm on the HIP backend, each as a one-node graph
// against a double-precision reference written here and against the CPU backend (NMSE, ggml
// test-backend-ops style, printed per case).
// Skips with a message where the plugin is not built or no GPU exists (this build machine).
#include <algorithm>
#include <cmath>
#include <tuple>

#include "hip_test_support.h"

namespace tandem::test {
namespace {

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

const DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,
                              DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                              DType::Q4_K, DType::Q5_K, DType::Q6_K};

bool is_float(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}
bool is_k_quant(DType t) {
    return t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K;
}
// Weights per block of the type (1 for plain floats).
int64_t block_of(DType t) {
    return is_float(t) ? 1 : is_k_quant(t) ? 256 : 32;
}

// The CPU backend quantises activations to q8 for block types, so it is a looser reference
// there; the double sum over the dequantised weights is the tight one.
double cpu_tolerance(DType t) {
    return is_float(t) ? 1e-8 : 2e-4;
}

// Shapes cover every kernel path: the decode matvec (1..8 tokens, rows not a multiple of the
// rows per block), the tiled prefill matmul (9+ tokens; partial token and output tiles, several
// k-steps) and the generic kernel (n_in not a multiple of 64 or of the matvec's unit).
TEST(HipOps, MatMulEveryTypeAndShape) {
    TANDEM_HIP_OR_SKIP(hip);
    for (DType t : kWeightTypes)
        for (auto [n_in, n_out, T] : {std::tuple<int64_t, int64_t, int64_t>{256, 1, 1},
                                      {256, 67, 1},
                                      {512, 33, 2},
                                      {512, 33, 3},
                                      {1024, 45, 5},
                                      {768, 17, 8},
                                      {768, 130, 9},
                                      {512, 130, 70},
                                      {256, 64, 64},
                                      {1280, 70, 130},
                                      {513, 20, 2},
                                      {96, 20, 12}}) {
            if (n_in % block_of(t) != 0) continue;
            QuantWeight w(t, {n_in, n_out, 1}, uint32_t(n_out * 7 + T));
            auto x = random_floats(static_cast<size_t>(n_in * T), uint32_t(T + 99));
            auto r = run_both(*hip, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
                TensorId wt = g.weight(b, w);
                g.node(Op::MatMul, g.output(out, n_out, T), {wt, g.input(x.data(), n_in, T)});
            });
            const std::string what = "mat_mul " + std::string(dtype_name(t)) + " " +
                                     std::to_string(n_in) + "x" + std::to_string(n_out) +
                                     " T=" + std::to_string(T);
            EXPECT_LT(reported_nmse(what + " vs f64", r.hip, ref_matmul(w, x, T, nullptr)), 1e-10)
                << what;
            EXPECT_LT(reported_nmse(what + " vs cpu", r.hip, as_double(r.cpu)), cpu_tolerance(t))
                << what;
        }
}

// Bad shapes are errors before anything runs, not out-of-bounds kernels.
TEST(HipOps, MatMulShapeErrorsAreClear) {
    TANDEM_HIP_OR_SKIP(hip);
    auto x = random_floats(512, 2);
    for (DType bad : {DType::Q2_K, DType::IQ4_NL}) {
        QuantWeight wb(DType::F32, {512, 8, 1}, 1);
        WeightDesc d = wb.desc("bad");
        d.type = bad;
        d.nbytes = row_bytes(bad, 512) * 8;
        hip->upload_weight(0, d, true);
        OpGraph g;
        std::vector<float> out;
        TensorId wt = g.g.weight(0, "bad", bad, {512, 8, 1});
        g.node(Op::MatMul, g.output(out, 8, 1), {wt, g.input(x.data(), 512, 1)});
        try {
            g.run(*hip);
            ADD_FAILURE() << "mat_mul on " << dtype_name(bad) << " ran";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(std::string(dtype_name(bad))), std::string::npos)
                << e.what();
        }
    }
}

TEST(HipOps, MatMulWithBias) {
    TANDEM_HIP_OR_SKIP(hip);
    QuantWeight w(DType::F16, {96, 45, 1}, 3);
    QuantWeight bias(DType::F32, {45, 1, 1}, 4);
    auto x = random_floats(96 * 5, 5);
    auto r = run_both(*hip, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
        TensorId wt = g.weight(b, w), bt = g.weight(b, bias);
        g.node(Op::MatMul, g.output(out, 45, 5), {wt, g.input(x.data(), 96, 5), bt});
    });
    EXPECT_LT(reported_nmse("mat_mul f16 + bias", r.hip, ref_matmul(w, x, 5, &bias.values)), 1e-10);
    // The tiled prefill path adds the bias too.
    QuantWeight w64(DType::Q8_0, {128, 45, 1}, 7);
    auto x64 = random_floats(128 * 20, 8);
    auto r2 = run_both(*hip, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
        TensorId wt = g.weight(b, w64), bt = g.weight(b, bias);
        g.node(Op::MatMul, g.output(out, 45, 20), {wt, g.input(x64.data(), 128, 20), bt});
    });
    EXPECT_LT(
        reported_nmse("mat_mul q8_0 + bias T=20", r2.hip, ref_matmul(w64, x64, 20, &bias.values)),
        1e-10);
}

TEST(HipOps, GetRowsEveryType) {
    TANDEM_HIP_OR_SKIP(hip);
    const std::vector<int32_t> ids{0, 12, 3, 36, 36, 7, 1};
    for (DType t : kWeightTypes) {
        QuantWeight table(t, {512, 37, 1}, 11);
        auto r = run_both(*hip, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
            TensorId tt = g.weight(b, table);
            TensorId in = g.input(ids.data(), int64_t(ids.size()), 1, DType::I32);
            g.node(Op::GetRows, g.output(out, 512, int64_t(ids.size())), {tt, in});
        });
        // A lookup only decodes stored values (d * q (+ m)); an fma may round the last bit.
        for (size_t k = 0; k < ids.size(); ++k)
            for (int64_t i = 0; i < 512; ++i) {
                const float v = table.values[ids[k] * 512 + i];
                ASSERT_NEAR(r.hip[k * 512 + i], v, 1e-6f * std::max(1.0f, std::fabs(v)))
                    << dtype_name(t);
            }
        EXPECT_LT(reported_nmse("get_rows " + std::string(dtype_name(t)) + " vs cpu", r.hip,
                                as_double(r.cpu)),
                  1e-12)
            << dtype_name(t);
    }
}

TEST(HipOps, GetRowsRejectsIdOutsideVocabulary) {
    TANDEM_HIP_OR_SKIP(hip);
    QuantWeight table(DType::F32, {16, 5, 1}, 1);
    const std::vector<int32_t> ids{2, 5};
    OpGraph g;
    std::vector<float> out;
    TensorId tt = g.weight(*hip, table);
    g.node(Op::GetRows, g.output(out, 16, 2), {tt, g.input(ids.data(), 2, 1, DType::I32)});
    EXPECT_THROW(g.run(*hip), Error);
}

TEST(HipOps, ElementwiseOps) {
    TANDEM_HIP_OR_SKIP(hip);
    const int64_t cols = 1000, rows = 3, n = cols * rows;  // not a multiple of the block
    auto a = random_floats(size_t(n), 1, -3, 3), b = random_floats(size_t(n), 2, -3, 3);
    struct Case {
        Op op;
        int32_t i0;
        float f0;
        std::function<double(double, double)> ref;
    };
    const Case cases[] = {
        {Op::Add, 0, 0, [](double x, double y) { return x + y; }},
        {Op::Mul, 0, 0, [](double x, double y) { return x * y; }},
        {Op::Scale, 0, 0.37f, [](double x, double) { return x * double(0.37f); }},
        {Op::Softcap, 0, 2.5f, [](double x, double) { return 2.5 * std::tanh(x / 2.5); }},
        {Op::GatedAct, 0, 0, [](double x, double y) { return x / (1 + std::exp(-x)) * y; }},
        {Op::GatedAct, 1, 0,
         [](double x, double y) {
             return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))) * y;
         }},
    };
    for (const Case& c : cases) {
        const bool binary = c.op == Op::Add || c.op == Op::Mul || c.op == Op::GatedAct;
        auto r = run_both(*hip, [&](OpGraph& g, Backend&, std::vector<float>& out) {
            TensorId x = g.input(a.data(), cols, rows);
            TensorId out_id = g.output(out, cols, rows);
            if (binary)
                g.node(c.op, out_id, {x, g.input(b.data(), cols, rows)}, {c.i0, 0, 0, 0});
            else
                g.node(c.op, out_id, {x}, {0, 0, 0, 0}, {c.f0, 0});
        });
        std::vector<double> ref(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) ref[i] = c.ref(a[i], b[i]);
        const std::string what = std::string(op_name(c.op)) + " i0=" + std::to_string(c.i0);
        EXPECT_LT(reported_nmse(what + " vs f64", r.hip, ref), 1e-12) << what;
        EXPECT_LT(reported_nmse(what + " vs cpu", r.hip, as_double(r.cpu)), 1e-12) << what;
    }
}

TEST(HipOps, RmsNormRowsAndHeads) {
    TANDEM_HIP_OR_SKIP(hip);
    const int64_t cols = 384, rows = 5;
    auto x = random_floats(size_t(cols * rows), 7, -2, 2);
    for (int64_t group : {cols, int64_t(64)}) {
        QuantWeight w(DType::F32, {group, 1, 1}, 8);
        auto r = run_both(*hip, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
            TensorId wt = g.weight(b, w);
            g.node(Op::RmsNorm, g.output(out, cols, rows), {g.input(x.data(), cols, rows), wt},
                   {int32_t(group), 0, 0, 0}, {1e-5f, 0});
        });
        std::vector<double> ref(x.size());
        for (size_t g0 = 0; g0 < x.size(); g0 += size_t(group)) {
            double ss = 0;
            for (int64_t i = 0; i < group; ++i) ss += double(x[g0 + i]) * x[g0 + i];
            const double s = 1 / std::sqrt(ss / double(group) + 1e-5);
            for (int64_t i = 0; i < group; ++i) ref[g0 + i] = x[g0 + i] * s * w.values[i];
        }
        const std::string what = "rms_norm group " + std::to_string(group);
        EXPECT_LT(reported_nmse(what + " vs f64", r.hip, ref), 1e-12) << what;
        EXPECT_LT(reported_nmse(what + " vs cpu", r.hip, as_double(r.cpu)), 1e-12) << what;
    }
}

TEST(HipOps, ComputesEveryOpOfTheForwardPass) {
    TANDEM_HIP_OR_SKIP(hip);
    EXPECT_TRUE(hip->can_compute());  // the engine may run whole models here
}

}  // namespace
}  // namespace tandem::test

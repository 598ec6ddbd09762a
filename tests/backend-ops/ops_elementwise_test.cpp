// Row and element ops against naive double-precision references.
#include <cmath>
#include <cstring>
#include <functional>
#include <tuple>

#include "op_harness.h"
#include "tandem/common/error.h"

namespace tandem::test {
namespace {

class ElementOps : public ::testing::TestWithParam<std::string> {};

TEST_P(ElementOps, GetRowsAllTypes) {
    auto be = make_backend(GetParam());
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q5_0,
                    DType::Q4_K, DType::Q6_K}) {
        const int64_t n_embd = 256, n_vocab = 37;
        QuantWeight table(t, {n_embd, n_vocab, 1}, 11);
        std::vector<int32_t> ids = {0, 36, 5, 5, 17};
        OpGraph g;
        std::vector<float> out;
        TensorId w = g.weight(*be, table);
        TensorId in = g.input(ids.data(), 5, 1, DType::I32);
        TensorId o = g.output(out, n_embd, 5);
        g.node(Op::GetRows, o, {w, in});
        g.run(*be);
        std::vector<double> ref;
        for (int32_t id : ids)
            for (int64_t i = 0; i < n_embd; ++i) ref.push_back(table.values[id * n_embd + i]);
        EXPECT_EQ(nmse(out, ref), 0.0) << dtype_name(t);
    }
}

TEST_P(ElementOps, GetRowsRejectsIdOutsideVocabulary) {
    auto be = make_backend(GetParam());
    QuantWeight table(DType::F32, {32, 4, 1}, 1);
    std::vector<int32_t> ids = {4};
    OpGraph g;
    std::vector<float> out;
    TensorId w = g.weight(*be, table);
    TensorId in = g.input(ids.data(), 1, 1, DType::I32);
    g.node(Op::GetRows, g.output(out, 32, 1), {w, in});
    EXPECT_THROW(g.run(*be), Error);
}

TEST_P(ElementOps, RmsNormRowsAndHeads) {
    auto be = make_backend(GetParam());
    for (auto [cols, rows, group] : {std::tuple<int64_t, int64_t, int64_t>{256, 3, 0},
                                     {7, 5, 0},
                                     {512, 2, 128},
                                     {96, 1, 32}}) {
        const int64_t g_len = group ? group : cols;
        auto x = random_floats(cols * rows, 3, -3, 3);
        QuantWeight w(DType::F32, {g_len, 1, 1}, 4);
        const float eps = 1e-6f;
        OpGraph g;
        std::vector<float> out;
        TensorId wt = g.weight(*be, w);
        TensorId in = g.input(x.data(), cols, rows);
        g.node(Op::RmsNorm, g.output(out, cols, rows), {in, wt}, {int32_t(group), 0, 0, 0},
               {eps, 0});
        g.run(*be);
        std::vector<double> ref(x.size());
        for (int64_t s = 0; s < cols * rows / g_len; ++s) {
            double ss = 0;
            for (int64_t i = 0; i < g_len; ++i) ss += double(x[s * g_len + i]) * x[s * g_len + i];
            const double inv = 1.0 / std::sqrt(ss / g_len + eps);
            for (int64_t i = 0; i < g_len; ++i)
                ref[s * g_len + i] = x[s * g_len + i] * inv * w.values[i];
        }
        EXPECT_LT(nmse(out, ref), 1e-12) << cols << "x" << rows << " group " << group;
    }
}

TEST_P(ElementOps, BinaryScaleSoftcapGated) {
    auto be = make_backend(GetParam());
    const int64_t cols = 129, rows = 3, n = cols * rows;
    auto a = random_floats(n, 5, -4, 4), b = random_floats(n, 6, -4, 4);
    struct Case {
        Op op;
        int32_t i0;
        float f0;
        std::function<double(double, double)> ref;
    };
    const double k = std::sqrt(2.0 / M_PI);
    std::vector<Case> cases = {
        {Op::Add, 0, 0, [](double x, double y) { return x + y; }},
        {Op::Mul, 0, 0, [](double x, double y) { return x * y; }},
        {Op::Scale, 0, 0.37f, [](double x, double) { return x * double(0.37f); }},
        {Op::Softcap, 0, 2.5f, [](double x, double) { return 2.5 * std::tanh(x / 2.5); }},
        {Op::GatedAct, int32_t(Activation::Silu), 0,
         [](double x, double y) { return x / (1 + std::exp(-x)) * y; }},
        {Op::GatedAct, int32_t(Activation::GeluTanh), 0,
         [k](double x, double y) {
             return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x))) * y;
         }},
    };
    for (const auto& c : cases) {
        OpGraph g;
        std::vector<float> out;
        TensorId ta = g.input(a.data(), cols, rows), tb = g.input(b.data(), cols, rows);
        TensorId o = g.output(out, cols, rows);
        if (c.op == Op::Scale || c.op == Op::Softcap)
            g.node(c.op, o, {ta}, {0, 0, 0, 0}, {c.f0, 0});
        else
            g.node(c.op, o, {ta, tb}, {c.i0, 0, 0, 0});
        g.run(*be);
        std::vector<double> ref(n);
        for (int64_t i = 0; i < n; ++i) ref[i] = c.ref(a[i], b[i]);
        EXPECT_LT(nmse(out, ref), 1e-12) << op_name(c.op) << " " << c.i0;
    }
}

TEST_P(ElementOps, RopeNormalAndNeox) {
    auto be = make_backend(GetParam());
    struct Case {
        int64_t head_dim, n_rot, n_head;
        RopeMode mode;
        bool factors;
    };
    for (const Case& c :
         {Case{64, 64, 4, RopeMode::Normal, false}, Case{64, 64, 3, RopeMode::Neox, false},
          Case{128, 64, 2, RopeMode::Neox, false}, Case{32, 32, 2, RopeMode::Normal, true},
          Case{256, 256, 1, RopeMode::Neox, false}}) {
        std::vector<int32_t> pos = {0, 1, 7, 1000, 32767};
        const int64_t T = static_cast<int64_t>(pos.size()), width = c.head_dim * c.n_head;
        auto x = random_floats(T * width, 8);
        QuantWeight ff(DType::F32, {c.n_rot / 2, 1, 1}, 9, 1.0f);
        for (auto& v : ff.values) v = 1.0f + std::fabs(v) * 4;  // divisors >= 1, as llama 3's
        for (size_t i = 0; i < ff.values.size(); ++i)
            std::memcpy(ff.bytes.data() + 4 * i, &ff.values[i], 4);
        const float base = 10000.0f, scale = 0.5f;
        OpGraph g;
        std::vector<float> out;
        TensorId in = g.input(x.data(), width, T);
        TensorId p = g.input(pos.data(), T, 1, DType::I32);
        TensorId f = c.factors ? g.weight(*be, ff) : kNoTensor;
        g.node(Op::Rope, g.output(out, width, T), {in, p, f},
               {int32_t(c.head_dim), int32_t(c.n_rot), int32_t(c.mode), 0}, {base, scale});
        g.run(*be);
        std::vector<double> ref(x.begin(), x.end());
        for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < c.n_head; ++h)
                for (int64_t i = 0; i < c.n_rot / 2; ++i) {
                    double theta = pos[t] * scale * std::pow(double(base), -2.0 * i / c.n_rot);
                    if (c.factors) theta /= ff.values[i];
                    const int64_t off = t * width + h * c.head_dim;
                    const int64_t a = c.mode == RopeMode::Neox ? i : 2 * i;
                    const int64_t b = c.mode == RopeMode::Neox ? i + c.n_rot / 2 : 2 * i + 1;
                    ref[off + a] = x[off + a] * std::cos(theta) - x[off + b] * std::sin(theta);
                    ref[off + b] = x[off + a] * std::sin(theta) + x[off + b] * std::cos(theta);
                }
        EXPECT_LT(nmse(out, ref), 1e-11) << "head_dim " << c.head_dim << " n_rot " << c.n_rot;
    }
}

TEST_P(ElementOps, TakeRowsAndCopy) {
    auto be = make_backend(GetParam());
    auto x = random_floats(5 * 33, 10);
    OpGraph g;
    std::vector<float> last, all;
    TensorId in = g.input(x.data(), 33, 5);
    g.node(Op::TakeRows, g.output(last, 33, 2), {in}, {3, 0, 0, 0});
    g.node(Op::Copy, g.output(all, 33, 5), {in});
    g.run(*be);
    EXPECT_EQ(last, std::vector<float>(x.begin() + 3 * 33, x.end()));
    EXPECT_EQ(all, x);
}

INSTANTIATE_TEST_SUITE_P(Backends, ElementOps, ::testing::ValuesIn(compute_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tandem::test

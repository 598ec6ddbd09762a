// Row and element ops on every backend (get_rows of every weight type, RMSNorm over rows and
// heads, add/mul/scale/softcap/gated activations/copy, RoPE, take_rows) against naive
// double-precision references and (GPU backends) the CPU backend.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <tuple>

#include "op_references.h"
#include "tandem/common/error.h"

namespace tandem::test {
namespace {

class ElementOps : public BackendOpTest {};

// An NMSE bound that only 0 passes.
constexpr double kExact = 1e-300;

TEST_P(ElementOps, CanCompute) {
    EXPECT_TRUE(be->can_compute());  // the engine may run whole models on every backend here
}

TEST_P(ElementOps, GetRowsEveryType) {
    const std::vector<int32_t> ids{0, 12, 3, 36, 36, 7, 1, 5, 17};
    const int64_t n_embd = 512, n = int64_t(ids.size());
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                    DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
        QuantWeight table(t, {n_embd, 37, 1}, 11);
        const GraphBuilder build = [&](OpGraph& g, Backend& b, std::vector<float>& out) {
            TensorId in = g.input(ids.data(), n, 1, DType::I32);
            g.node(Op::GetRows, g.output(out, n_embd, n), {g.weight(b, table), in});
        };
        const auto out = run_graph(*be, build);
        std::vector<double> ref;
        for (int32_t id : ids)
            for (int64_t i = 0; i < n_embd; ++i) ref.push_back(table.values[id * n_embd + i]);
        // A lookup only decodes stored values (d * q (+ m)): exact, except that HIP's compilers
        // contract that into an fma, which may round the last bit.
        const bool exact = GetParam() != "hip";
        check("get_rows", std::string(dtype_name(t)), out, ref, exact ? kExact : 1e-12,
              cpu_output(build), exact ? kExact : 1e-12);
        if (exact) {
            EXPECT_EQ(nmse(out, ref), 0.0) << dtype_name(t);
        }
    }
}

TEST_P(ElementOps, GetRowsRejectsIdOutsideVocabulary) {
    QuantWeight table(DType::F32, {32, 10, 1}, 1);
    const std::vector<int32_t> ids{3, 10};
    OpGraph g;
    std::vector<float> out;
    TensorId tt = g.weight(*be, table);
    g.node(Op::GetRows, g.output(out, 32, 2), {tt, g.input(ids.data(), 2, 1, DType::I32)});
    try {
        g.run(*be);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("token id 10"), std::string::npos) << e.what();
    }
}

TEST_P(ElementOps, RmsNormRowsAndHeads) {
    struct Case {
        int64_t cols, rows;
        int32_t group;  // 0: the whole row
        bool weight;
        float eps;
    };
    for (const Case& c :
         {Case{256, 3, 0, true, 1e-6f}, Case{7, 5, 0, true, 1e-6f}, Case{512, 2, 128, true, 1e-6f},
          Case{96, 1, 32, true, 1e-6f}, Case{1000, 5, 0, true, 1e-6f}, Case{64, 5, 0, false, 1e-6f},
          Case{6 * 48, 5, 48, true, 1e-6f}, Case{4099, 5, 0, true, 1e-6f},
          Case{384, 5, 384, true, 1e-5f}, Case{384, 5, 64, true, 1e-5f}}) {
        const int64_t g_len = c.group ? c.group : c.cols;
        auto x = random_floats(size_t(c.cols * c.rows), 3, -3, 3);
        QuantWeight w(DType::F32, {g_len, 1, 1}, 4);
        const GraphBuilder build = [&](OpGraph& g, Backend& b, std::vector<float>& out) {
            TensorId in = g.input(x.data(), c.cols, c.rows), o = g.output(out, c.cols, c.rows);
            if (c.weight)
                g.node(Op::RmsNorm, o, {in, g.weight(b, w)}, {c.group, 0, 0, 0}, {c.eps, 0});
            else
                g.node(Op::RmsNorm, o, {in}, {c.group, 0, 0, 0}, {c.eps, 0});
        };
        std::vector<double> ref(x.size());
        for (int64_t s = 0; s < c.cols * c.rows / g_len; ++s) {
            double ss = 0;
            for (int64_t i = 0; i < g_len; ++i) ss += double(x[s * g_len + i]) * x[s * g_len + i];
            const double inv = 1.0 / std::sqrt(ss / double(g_len) + double(c.eps));
            for (int64_t i = 0; i < g_len; ++i)
                ref[s * g_len + i] = x[s * g_len + i] * inv * (c.weight ? w.values[i] : 1.0f);
        }
        check("rms_norm",
              std::to_string(c.cols) + "x" + std::to_string(c.rows) + " group " +
                  std::to_string(c.group) + (c.weight ? "" : " no weight"),
              run_graph(*be, build), ref, 1e-12, cpu_output(build), 1e-11);
    }
}

TEST_P(ElementOps, BinaryScaleSoftcapGatedCopy) {
    struct Case {
        Op op;
        int32_t i0;
        float f0;
        std::function<double(double, double)> ref;
    };
    const std::vector<Case> cases = {
        {Op::Add, 0, 0, [](double x, double y) { return x + y; }},
        {Op::Mul, 0, 0, [](double x, double y) { return x * y; }},
        {Op::Scale, 0, 0.37f, [](double x, double) { return x * double(0.37f); }},
        {Op::Softcap, 0, 2.5f, [](double x, double) { return 2.5 * std::tanh(x / 2.5); }},
        {Op::Softcap, 0, 3.0f, [](double x, double) { return 3.0 * std::tanh(x / 3.0); }},
        {Op::GatedAct, int32_t(Activation::Silu), 0,
         [](double x, double y) { return ref_activation(Activation::Silu, x) * y; }},
        {Op::GatedAct, int32_t(Activation::GeluTanh), 0,
         [](double x, double y) { return ref_activation(Activation::GeluTanh, x) * y; }},
        {Op::Copy, 0, 0, [](double x, double) { return x; }},
    };
    // Lengths around the kernels' blocks: 1, odd, not a multiple of the block, > one block.
    for (int64_t cols : {1, 7, 129, 1000, 4099}) {
        const int64_t rows = 3, n = cols * rows;
        auto a = random_floats(size_t(n), 5, -4, 4), bv = random_floats(size_t(n), 6, -4, 4);
        for (const auto& c : cases) {
            const bool binary = c.op == Op::Add || c.op == Op::Mul || c.op == Op::GatedAct;
            const GraphBuilder build = [&](OpGraph& g, Backend&, std::vector<float>& out) {
                TensorId ta = g.input(a.data(), cols, rows), o = g.output(out, cols, rows);
                if (binary)
                    g.node(c.op, o, {ta, g.input(bv.data(), cols, rows)}, {c.i0, 0, 0, 0});
                else
                    g.node(c.op, o, {ta}, {0, 0, 0, 0}, {c.f0, 0});
            };
            std::vector<double> ref(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i) ref[i] = c.ref(a[i], bv[i]);
            check(std::string(op_name(c.op)),
                  "i0=" + std::to_string(c.i0) + " f0=" + std::to_string(c.f0).substr(0, 4) +
                      " cols " + std::to_string(cols),
                  run_graph(*be, build), ref, 1e-12, cpu_output(build), 1e-11);
        }
    }
}

TEST_P(ElementOps, RopeNormalNeoxAndFactors) {
    struct Case {
        int64_t head_dim, n_rot, n_head;
        RopeMode mode;
        bool factors;
        float base, scale;
    };
    for (const Case& c : {Case{64, 64, 4, RopeMode::Normal, false, 10000.0f, 0.5f},
                          Case{64, 64, 3, RopeMode::Neox, false, 10000.0f, 0.5f},
                          Case{128, 64, 2, RopeMode::Neox, false, 10000.0f, 0.5f},
                          Case{32, 32, 2, RopeMode::Normal, true, 10000.0f, 0.5f},
                          Case{256, 256, 1, RopeMode::Neox, false, 10000.0f, 0.5f},
                          Case{64, 64, 3, RopeMode::Normal, false, 500000.0f, 0.5f},
                          Case{64, 64, 3, RopeMode::Neox, false, 500000.0f, 0.5f},
                          Case{128, 64, 3, RopeMode::Neox, true, 10000.0f, 1.0f},
                          Case{32, 16, 3, RopeMode::Normal, false, 500000.0f, 0.5f},
                          Case{64, 32, 3, RopeMode::Neox, true, 10000.0f, 0.5f}}) {
        // A prefill's run of consecutive positions past Vulkan's re-anchoring (64), then jumps.
        std::vector<int32_t> run(150);
        for (int32_t i = 0; i < 150; ++i) run[size_t(i)] = 4000 + i;
        run.insert(run.end(), {9000, 9001, 9002, 20});
        for (const std::vector<int32_t>& pos : {std::vector<int32_t>{0, 1, 7, 17, 300, 4095},
                                                std::vector<int32_t>{1000, 32767}, run}) {
            const int64_t T = int64_t(pos.size()), width = c.head_dim * c.n_head;
            auto x = random_floats(size_t(T * width), 8);
            // Frequency factors >= 1 (as Llama 3's long-context models have), an f32 weight.
            QuantWeight ff(DType::F32, {c.n_rot / 2, 1, 1}, 9, 1.0f);
            for (auto& v : ff.values) v = 1.0f + std::fabs(v) * 4;
            std::memcpy(ff.bytes.data(), ff.values.data(), ff.bytes.size());
            const GraphBuilder build = [&](OpGraph& g, Backend& b, std::vector<float>& out) {
                TensorId in = g.input(x.data(), width, T);
                TensorId p = g.input(pos.data(), T, 1, DType::I32);
                TensorId f = c.factors ? g.weight(b, ff) : kNoTensor;
                g.node(Op::Rope, g.output(out, width, T), {in, p, f},
                       {int32_t(c.head_dim), int32_t(c.n_rot), int32_t(c.mode), 0},
                       {c.base, c.scale});
            };
            // Every backend takes cos/sin of double angles for positions given as step inputs
            // (Vulkan from a host-computed table; its float-angle fallback is not reached here).
            const double bound = 1e-11;
            check("rope",
                  std::string(c.mode == RopeMode::Neox ? "neox" : "normal") + " hd " +
                      std::to_string(c.head_dim) + " n_rot " + std::to_string(c.n_rot) +
                      (c.factors ? " factors" : "") + " base " + std::to_string(int(c.base)) +
                      " pos<=" + std::to_string(*std::max_element(pos.begin(), pos.end())) +
                      " T=" + std::to_string(T),
                  run_graph(*be, build),
                  ref_rope(x, pos, c.head_dim, c.n_rot, c.n_head, c.mode, c.base, c.scale,
                           c.factors ? &ff.values : nullptr),
                  bound, cpu_output(build), bound);
        }
    }
}

// Three ropes of one input in one graph, as a model's layers have them: two with the same
// frequency factors named by two tensors of one weight slot (the graph builder names the weight
// again in each layer), one with other factors. Backends that build a table per distinct
// parameters (Vulkan) must share the first two and keep the third apart.
TEST_P(ElementOps, RopeFactorsSharedByLayersAndApart) {
    const int64_t hd = 64, n_head = 2, width = hd * n_head, T = 90;
    std::vector<int32_t> pos(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) pos[size_t(t)] = int32_t(100 + t);
    const auto x = random_floats(size_t(T * width), 21);
    QuantWeight fa(DType::F32, {hd / 2, 1, 1}, 22, 1.0f), fb(DType::F32, {hd / 2, 1, 1}, 23, 1.0f);
    for (QuantWeight* f : {&fa, &fb}) {
        for (auto& v : f->values) v = 1.0f + std::fabs(v) * 8;
        std::memcpy(f->bytes.data(), f->values.data(), f->bytes.size());
    }
    const std::array<int32_t, 4> ri{int32_t(hd), int32_t(hd), int32_t(RopeMode::Neox), 0};
    std::array<std::vector<float>, 3> others;
    for (int k = 0; k < 3; ++k) {
        const GraphBuilder build = [&](OpGraph& g, Backend& b, std::vector<float>& out) {
            const TensorId in = g.input(x.data(), width, T);
            const TensorId p = g.input(pos.data(), T, 1, DType::I32);
            const TensorId a1 = g.weight(b, fa);
            const GraphTensor a1t = g.g.tensor(a1);  // a copy: weight() may move the list
            const TensorId a2 = g.g.weight(a1t.slot, "w-again", a1t.type, a1t.ne);
            const TensorId f = g.weight(b, fb);
            const TensorId factors[3] = {a1, a2, f};
            for (int j = 0; j < 3; ++j)
                g.node(Op::Rope, g.output(j == k ? out : others[size_t(j)], width, T),
                       {in, p, factors[j]}, ri, {10000.0f, 1.0f});
        };
        const double bound = 1e-11;
        check("rope", "node " + std::to_string(k) + (k == 2 ? " (other factors)" : " (shared)"),
              run_graph(*be, build),
              ref_rope(x, pos, hd, hd, n_head, RopeMode::Neox, 10000.0f, 1.0f,
                       k == 2 ? &fb.values : &fa.values),
              bound, cpu_output(build), bound);
    }
}

TEST_P(ElementOps, TakeRowsAndCopy) {
    for (auto [cols, rows, first] :
         {std::tuple{int64_t(33), int64_t(5), 3}, std::tuple{int64_t(13), int64_t(9), 6}}) {
        auto x = random_floats(size_t(cols * rows), 10);
        OpGraph g;
        std::vector<float> last, all;
        TensorId in = g.input(x.data(), cols, rows);
        g.node(Op::TakeRows, g.output(last, cols, 2), {in}, {first, 0, 0, 0});
        g.node(Op::Copy, g.output(all, cols, rows), {in});
        g.run(*be);
        EXPECT_EQ(last,
                  std::vector<float>(x.begin() + first * cols, x.begin() + (first + 2) * cols));
        EXPECT_EQ(all, x);
    }
}

TANDEM_OP_SUITE(ElementOps);

}  // namespace
}  // namespace tandem::test

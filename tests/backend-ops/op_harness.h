#pragma once
// Runs single-op graphs on every backend that can compute and compares them with naive
// double-precision references written in the tests (ggml test-backend-ops style: NMSE per op).
// TANDEM_TEST_BACKENDS=cpu,vulkan limits the backends. BackendOpTest is the fixture of the one
// suite: it runs on every registered backend (an unavailable one skips with the registry's
// reason), checks against the double reference and, on GPU backends, against the CPU backend
// running the same graph; every check lands in the NMSE table printed at the end.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "op_nmse_table.h"
#include "tandem/backend/backend.h"
#include "tandem/backend/graph.h"
#include "tandem/backend/registry.h"
#include "tandem/common/dtype.h"
#include "tandem/quant/quant.h"

namespace tandem::test {

inline std::vector<std::string> compute_backends() {
    std::vector<std::string> names;
    const char* only = std::getenv("TANDEM_TEST_BACKENDS");
    for (const auto& st : BackendRegistry::instance().backends()) {
        if (!st.available) continue;
        if (only && std::string(only).find(st.name) == std::string::npos) continue;
        auto b = BackendRegistry::instance().factory(st.name)->create(0, {});
        if (b->can_compute()) names.push_back(st.name);
    }
    return names;
}

inline std::unique_ptr<Backend> make_backend(const std::string& name, int threads = 2) {
    BackendOptions o;
    o.threads = threads;
    return create_backend(name, 0, o);
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

// Sets an environment variable (the GPU backends read their switches when created) and removes
// it when the scope ends.
struct ScopedEnv {
    std::string name;
    ScopedEnv(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
    ~ScopedEnv() { unsetenv(name.c_str()); }
};

// Normalised mean squared error of out against ref: sum (o-r)^2 / sum r^2.
inline double nmse(const std::vector<float>& out, const std::vector<double>& ref) {
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        num += (out[i] - ref[i]) * (out[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

inline std::vector<double> as_double(const std::vector<float>& v) {
    return {v.begin(), v.end()};
}

// nmse() that also prints "<what>: nmse <value>" for the GPU run's log.
inline double reported_nmse(const std::string& what, const std::vector<float>& out,
                            const std::vector<double>& ref) {
    const double e = nmse(out, ref);
    std::printf("  %-44s nmse %.3e\n", what.c_str(), e);
    return e;
}

// A weight stored in type t: f32 values quantised by the reference quantiser, and the values
// the backend actually sees (dequantised back), which the reference uses.
struct QuantWeight {
    DType type;
    std::array<int64_t, 3> ne;
    std::vector<uint8_t> bytes;
    std::vector<float> values;  // dequantised, [rows][ne0]

    QuantWeight(DType t, std::array<int64_t, 3> shape, uint32_t seed, float scale = 1.0f)
        : type(t), ne(shape) {
        const int64_t rows = ne[1] * ne[2];
        auto f = random_floats(static_cast<size_t>(rows * ne[0]), seed, -scale, scale);
        const size_t rb = row_bytes(t, static_cast<uint64_t>(ne[0]));
        bytes.resize(rb * static_cast<size_t>(rows));
        values.resize(f.size());
        for (int64_t r = 0; r < rows; ++r) {
            quant::quantize_row(t, f.data() + r * ne[0], bytes.data() + r * rb, ne[0]);
            quant::dequantize_row(t, bytes.data() + r * rb, values.data() + r * ne[0], ne[0]);
        }
    }
    WeightDesc desc(const std::string& name) const {
        return WeightDesc{name, type, ne, bytes.data(), bytes.size()};
    }
};

// Builds tensors of a one-node graph and runs it on a backend.
class OpGraph {
  public:
    TensorId weight(Backend& b, const QuantWeight& w) {
        int slot = n_weights_++;
        b.upload_weight(slot, w.desc("w" + std::to_string(slot)), true);
        return g.weight(slot, "w" + std::to_string(slot), w.type, w.ne);
    }
    // A host f32 (or i32) matrix [rows, cols] fed as a step input.
    TensorId input(const void* data, int64_t cols, int64_t rows, DType type = DType::F32) {
        GraphTensor t;
        t.name = "in" + std::to_string(io.inputs.size());
        t.role = TensorRole::Input;
        t.type = type;
        t.ne = {cols, rows, 1};
        t.slot = static_cast<int>(io.inputs.size());
        io.inputs.push_back(data);
        return g.add_tensor(t);
    }
    TensorId output(std::vector<float>& host, int64_t cols, int64_t rows) {
        host.assign(static_cast<size_t>(cols * rows), 0.0f);
        TensorId id = g.output(static_cast<int>(io.outputs.size()), "out", cols, rows);
        io.outputs.push_back(host.data());
        return id;
    }
    void node(Op op, TensorId out, std::initializer_list<TensorId> src,
              std::array<int32_t, 4> i = {0, 0, 0, 0}, std::array<float, 2> f = {0, 0}) {
        g.add_node(make_node(op, out, src, i, f));
    }
    void run(Backend& b) {
        g.validate();
        b.reserve_scratch(g.plan_scratch());
        b.compute(g, io);
    }

    Graph g;
    StepIO io;

  private:
    int n_weights_ = 0;
};

// Every registered backend that TANDEM_TEST_BACKENDS names (all when unset), available or not:
// the fixture skips the unavailable ones with the reason, so a run shows what it did not test.
inline std::vector<std::string> op_backends() {
    std::vector<std::string> names;
    const char* only = std::getenv("TANDEM_TEST_BACKENDS");
    for (const auto& st : BackendRegistry::instance().backends()) {
        if (only && std::string(only).find(st.name) == std::string::npos) continue;
        names.push_back(st.name);
    }
    return names;
}

// Fills a graph for backend b (weights are uploaded through g) and names the output it fills.
using GraphBuilder = std::function<void(OpGraph& g, Backend& b, std::vector<float>& out)>;

// Builds a fresh graph with `build` and runs it on b; returns its output.
inline std::vector<float> run_graph(Backend& b, const GraphBuilder& build, int32_t n_past = 0) {
    OpGraph g;
    g.io.n_past = n_past;
    std::vector<float> out;
    build(g, b, out);
    g.run(b);
    return out;
}

// One MatMul of weight w ([ne0 inputs, ne1 rows]) over the T rows of x on b; returns y [T, ne1].
inline std::vector<float> run_matmul(Backend& b, const QuantWeight& w, const std::vector<float>& x,
                                     int64_t T) {
    return run_graph(b, [&](OpGraph& g, Backend& be, std::vector<float>& out) {
        g.node(Op::MatMul, g.output(out, w.ne[1], T),
               {g.weight(be, w), g.input(x.data(), w.ne[0], T)});
    });
}

// The fixture of the one op suite; the parameter is the backend's name.
class BackendOpTest : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        for (const auto& st : BackendRegistry::instance().backends()) {
            if (st.name != GetParam()) continue;
            if (!st.available) GTEST_SKIP() << st.name << " backend unavailable: " << st.reason;
        }
        be = make_backend(GetParam());
        if (!be->can_compute()) GTEST_SKIP() << GetParam() << " backend does not compute graphs";
    }
    bool gpu() const { return GetParam() != "cpu"; }

    // The same graph on the CPU backend, for the GPU-vs-CPU check; empty on the CPU backend.
    std::vector<float> cpu_output(const GraphBuilder& build, int32_t n_past = 0) const {
        if (!gpu()) return {};
        auto cpu = make_backend("cpu", 2);
        return run_graph(*cpu, build, n_past);
    }

    // Records and checks one case: out vs the double reference (bound_f64) and, where cpu is
    // not empty, vs the CPU backend's output (bound_cpu).
    void check(const std::string& op, const std::string& what, const std::vector<float>& out,
               const std::vector<double>& ref, double bound_f64, const std::vector<float>& cpu = {},
               double bound_cpu = 0) const {
        ASSERT_EQ(out.size(), ref.size()) << op << " " << what;
        const double e = nmse(out, ref);
        double ec = -1;
        if (!cpu.empty()) {
            ASSERT_EQ(out.size(), cpu.size()) << op << " " << what;
            ec = nmse(out, std::vector<double>(cpu.begin(), cpu.end()));
        }
        NmseTable::instance().add(op, GetParam(), what, e, ec);
        EXPECT_LT(e, bound_f64) << GetParam() << " " << op << " " << what << " vs f64";
        if (ec >= 0) {
            EXPECT_LT(ec, bound_cpu) << GetParam() << " " << op << " " << what << " vs cpu";
        }
    }

    std::unique_ptr<Backend> be;
};

#define TANDEM_OP_SUITE(Fixture)                                                 \
    INSTANTIATE_TEST_SUITE_P(Backends, Fixture,                                  \
                             ::testing::ValuesIn(::tandem::test::op_backends()), \
                             [](const auto& info) { return info.param; })

}  // namespace tandem::test

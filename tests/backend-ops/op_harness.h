#pragma once
// Runs single-op graphs on every backend that can compute and compares them with naive
// double-precision references written in the tests (ggml test-backend-ops style: NMSE per op).
// TANDEM_TEST_BACKENDS=cpu,vulkan limits the backends.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

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

// Normalised mean squared error of out against ref: sum (o-r)^2 / sum r^2.
inline double nmse(const std::vector<float>& out, const std::vector<double>& ref) {
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        num += (out[i] - ref[i]) * (out[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
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
        Node n;
        n.op = op;
        n.out = out;
        size_t k = 0;
        for (TensorId s : src) n.src[k++] = s;
        n.i = i;
        n.f = f;
        g.add_node(n);
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

}  // namespace tandem::test

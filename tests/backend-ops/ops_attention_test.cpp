// KV store + causal attention (GQA, sliding window, softcap, f16/f32 cache, a cached prefix)
// and the tensor-parallel hooks, against naive references.
#include <cmath>

#include "op_harness.h"
#include "tandem/backend/collective.h"
#include "tandem/common/error.h"
#include "tandem/quant/fp16.h"

namespace tandem::test {
namespace {

class AttnOps : public ::testing::TestWithParam<std::string> {};

struct AttnCase {
    int64_t n_head, n_kv_head, head_dim, window;
    float softcap;
    DType kv_type;
    int64_t n_past, T;
};

TEST_P(AttnOps, CausalAttentionOverCache) {
    for (const AttnCase& c :
         {AttnCase{4, 4, 64, 0, 0, DType::F32, 0, 7}, AttnCase{8, 2, 32, 0, 0, DType::F16, 5, 3},
          AttnCase{4, 1, 256, 4, 0, DType::F16, 9, 6},
          AttnCase{6, 3, 16, 0, 30.0f, DType::F32, 2, 1},
          AttnCase{2, 1, 128, 3, 0, DType::F32, 20, 1}}) {
        auto be = make_backend(GetParam());
        const int64_t hd = c.head_dim, kvw = c.n_kv_head * hd, qw = c.n_head * hd;
        const int64_t n_ctx = c.n_past + c.T + 3, n_all = c.n_past + c.T;
        be->allocate_kv({KvDesc{c.kv_type, kvw, n_ctx}, KvDesc{c.kv_type, kvw, n_ctx}});
        auto k_all = random_floats(n_all * kvw, 31, -2, 2),
             v_all = random_floats(n_all * kvw, 32, -2, 2);
        auto q = random_floats(c.T * qw, 33, -2, 2);
        // Step 1 fills the prefix, step 2 stores the new rows and attends.
        std::vector<float> out;
        auto step = [&](int64_t n_past, int64_t T, bool attend) {
            OpGraph g;
            g.io.n_past = static_cast<int32_t>(n_past);
            TensorId kin = g.input(k_all.data() + n_past * kvw, kvw, T);
            TensorId vin = g.input(v_all.data() + n_past * kvw, kvw, T);
            TensorId kc = g.g.kv(0, "k", c.kv_type, kvw, n_ctx),
                     vc = g.g.kv(1, "v", c.kv_type, kvw, n_ctx);
            g.node(Op::KvStore, kc, {kin, kc});
            g.node(Op::KvStore, vc, {vin, vc});
            if (attend) {
                TensorId qin = g.input(q.data(), qw, T);
                g.node(Op::Attention, g.output(out, qw, T), {qin, kc, vc},
                       {int32_t(c.n_head), int32_t(c.n_kv_head), int32_t(hd), int32_t(c.window)},
                       {0.125f, c.softcap});
            }
            g.run(*be);
        };
        if (c.n_past > 0) step(0, c.n_past, false);
        step(c.n_past, c.T, true);

        auto stored = [&](float v) {
            return c.kv_type == DType::F16 ? double(quant::fp16_to_fp32(quant::fp32_to_fp16(v)))
                                           : double(v);
        };
        std::vector<double> ref(static_cast<size_t>(c.T * qw));
        for (int64_t t = 0; t < c.T; ++t)
            for (int64_t h = 0; h < c.n_head; ++h) {
                const int64_t pos = c.n_past + t, kvh = h / (c.n_head / c.n_kv_head);
                std::vector<double> s;
                std::vector<int64_t> js;
                for (int64_t j = 0; j <= pos; ++j) {
                    if (c.window > 0 && pos - j >= c.window) continue;
                    double d = 0;
                    for (int64_t i = 0; i < hd; ++i)
                        d += double(q[t * qw + h * hd + i]) * stored(k_all[j * kvw + kvh * hd + i]);
                    d *= 0.125;
                    if (c.softcap > 0) d = c.softcap * std::tanh(d / c.softcap);
                    s.push_back(d);
                    js.push_back(j);
                }
                double mx = *std::max_element(s.begin(), s.end()), sum = 0;
                for (auto& v : s) sum += v = std::exp(v - mx);
                for (int64_t i = 0; i < hd; ++i) {
                    double a = 0;
                    for (size_t n = 0; n < s.size(); ++n)
                        a += s[n] / sum * stored(v_all[js[n] * kvw + kvh * hd + i]);
                    ref[t * qw + h * hd + i] = a;
                }
            }
        EXPECT_LT(nmse(out, ref), 1e-10) << "heads " << c.n_head << "/" << c.n_kv_head << " hd "
                                         << hd << " window " << c.window << " n_past " << c.n_past;
    }
}

TEST_P(AttnOps, KvStorePastContextIsAnError) {
    auto be = make_backend(GetParam());
    be->allocate_kv({KvDesc{DType::F16, 8, 4}});
    auto k = random_floats(8 * 2, 1);
    OpGraph g;
    g.io.n_past = 3;  // rows 3 and 4 of a 4-row cache
    TensorId kin = g.input(k.data(), 8, 2);
    TensorId kc = g.g.kv(0, "k", DType::F16, 8, 4);
    g.node(Op::KvStore, kc, {kin, kc});
    try {
        g.run(*be);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("context full"), std::string::npos) << e.what();
    }
}

// Stands in for the other ranks: adds rank 1's contribution (a known vector) and appends its
// logits columns.
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
        for (size_t i = 0; i < n / 2; ++i) all.push_back(-1.0f - float(i));  // rank 1: half as many
        sizes = {n, n / 2};
    }
};

TEST_P(AttnOps, CollectiveHooks) {
    auto be = make_backend(GetParam());
    auto x = random_floats(2 * 6, 40);
    for (bool with_collective : {false, true}) {
        FakeTwoRanks coll;
        be->set_collective(with_collective ? &coll : nullptr);
        OpGraph g;
        std::vector<float> reduced, gathered;
        TensorId in = g.input(x.data(), 6, 2);
        TensorId a = g.g.activation("a", 6, 2);
        g.node(Op::Copy, a, {in});
        g.node(Op::AllReduce, a, {a});
        g.node(Op::Copy, g.output(reduced, 6, 2), {a});
        g.node(Op::AllGather, g.output(gathered, with_collective ? 9 : 6, 2), {in});
        g.run(*be);
        for (int r = 0; r < 2; ++r)
            for (int c = 0; c < 6; ++c) {
                EXPECT_EQ(reduced[r * 6 + c],
                          x[r * 6 + c] + (with_collective ? float(r * 6 + c) : 0.0f));
                EXPECT_EQ(gathered[r * (with_collective ? 9 : 6) + c], x[r * 6 + c]);
            }
        if (with_collective) {
            for (int r = 0; r < 2; ++r)
                for (int c = 0; c < 3; ++c) {
                    EXPECT_EQ(gathered[r * 9 + 6 + c], -1.0f - float(r * 3 + c));
                }
        }
    }
    be->set_collective(nullptr);
}

INSTANTIATE_TEST_SUITE_P(Backends, AttnOps, ::testing::ValuesIn(compute_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tandem::test

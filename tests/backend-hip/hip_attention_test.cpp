// RoPE, KV store and fused attention on the HIP backend: against double-precision references
// written here (f32 cache) and against the CPU backend running the same graphs (f16 and f32
// cache, GQA, sliding window, softcap, prefill and decode after a cached prefix, contexts longer
// than one tile of keys). Skips where no GPU exists.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "hip_test_support.h"

namespace tandem::test {
namespace {

struct AttnCase {
    int64_t n_head, n_kv_head, head_dim, window;
    float softcap;
    DType kv_type;
    int64_t n_past, T;
};

struct AttnData {
    std::vector<float> k_all, v_all, q;
};

AttnData attn_data(const AttnCase& c) {
    const int64_t kvw = c.n_kv_head * c.head_dim, n_all = c.n_past + c.T;
    return {random_floats(size_t(n_all * kvw), 31, -2, 2),
            random_floats(size_t(n_all * kvw), 32, -2, 2),
            random_floats(size_t(c.T * c.n_head * c.head_dim), 33, -2, 2)};
}

// Stores K/V of the prefix in one step, then the new tokens and attention in a second one.
std::vector<float> run_attention(Backend& b, const AttnCase& c, const AttnData& d) {
    const int64_t hd = c.head_dim, kvw = c.n_kv_head * hd, qw = c.n_head * hd;
    const int64_t n_ctx = c.n_past + c.T + 3;
    b.allocate_kv({KvDesc{c.kv_type, kvw, n_ctx}, KvDesc{c.kv_type, kvw, n_ctx}});
    std::vector<float> out;
    auto step = [&](int64_t n_past, int64_t T, bool attend) {
        OpGraph g;
        g.io.n_past = static_cast<int32_t>(n_past);
        TensorId kin = g.input(d.k_all.data() + n_past * kvw, kvw, T);
        TensorId vin = g.input(d.v_all.data() + n_past * kvw, kvw, T);
        TensorId kc = g.g.kv(0, "k", c.kv_type, kvw, n_ctx),
                 vc = g.g.kv(1, "v", c.kv_type, kvw, n_ctx);
        g.node(Op::KvStore, kc, {kin, kc});
        g.node(Op::KvStore, vc, {vin, vc});
        if (attend)
            g.node(Op::Attention, g.output(out, qw, T), {g.input(d.q.data(), qw, T), kc, vc},
                   {int32_t(c.n_head), int32_t(c.n_kv_head), int32_t(hd), int32_t(c.window)},
                   {0.125f, c.softcap});
        g.run(b);
    };
    if (c.n_past > 0) step(0, c.n_past, false);
    step(c.n_past, c.T, true);
    return out;
}

// Softmax attention in double over the f32 values stored (f32 cache only).
std::vector<double> ref_attention(const AttnCase& c, const AttnData& d) {
    const int64_t hd = c.head_dim, kvw = c.n_kv_head * hd, group = c.n_head / c.n_kv_head;
    std::vector<double> out(size_t(c.T * c.n_head * hd), 0.0);
    for (int64_t t = 0; t < c.T; ++t)
        for (int64_t h = 0; h < c.n_head; ++h) {
            const int64_t pos = c.n_past + t, kvh = h / group;
            const int64_t lo = c.window > 0 ? std::max<int64_t>(0, pos - c.window + 1) : 0;
            std::vector<double> s;
            for (int64_t j = lo; j <= pos; ++j) {
                double dot = 0;
                for (int64_t i = 0; i < hd; ++i)
                    dot +=
                        double(d.k_all[j * kvw + kvh * hd + i]) * d.q[(t * c.n_head + h) * hd + i];
                dot *= 0.125;
                if (c.softcap > 0) dot = c.softcap * std::tanh(dot / c.softcap);
                s.push_back(dot);
            }
            const double mx = *std::max_element(s.begin(), s.end());
            double sum = 0;
            for (double& x : s) sum += (x = std::exp(x - mx));
            for (int64_t j = lo; j <= pos; ++j)
                for (int64_t i = 0; i < hd; ++i)
                    out[(t * c.n_head + h) * hd + i] +=
                        s[j - lo] / sum * d.v_all[j * kvw + kvh * hd + i];
        }
    return out;
}

TEST(HipAttention, AttentionOverCache) {
    TANDEM_HIP_OR_SKIP(hip);
    auto cpu = make_backend("cpu", 2);
    for (const AttnCase& c :
         {AttnCase{4, 4, 64, 0, 0, DType::F32, 0, 7}, AttnCase{8, 2, 32, 0, 0, DType::F16, 5, 3},
          AttnCase{4, 1, 256, 4, 0, DType::F16, 9, 6},
          AttnCase{6, 3, 16, 0, 30.0f, DType::F32, 2, 1},
          AttnCase{2, 1, 128, 3, 0, DType::F32, 20, 1},
          // more positions than one tile of 128 keys: the online softmax across tiles
          AttnCase{2, 2, 64, 0, 0, DType::F16, 600, 2},
          AttnCase{4, 2, 80, 300, 0, DType::F32, 700, 1},
          // more than 8 tokens: one block per (token, head), no key split
          AttnCase{4, 2, 64, 0, 0, DType::F16, 30, 12},
          AttnCase{2, 1, 128, 5, 0, DType::F32, 140, 20},
          // decode steps split their keys over 8 blocks: fewer keys than blocks, odd head_dim
          AttnCase{2, 2, 36, 0, 0, DType::F16, 0, 2},
          AttnCase{3, 1, 20, 0, 0, DType::F32, 333, 3}}) {
        const AttnData d = attn_data(c);
        auto h = run_attention(*hip, c, d), r = run_attention(*cpu, c, d);
        const std::string what = std::string(dtype_name(c.kv_type)) + " heads " +
                                 std::to_string(c.n_head) + "/" + std::to_string(c.n_kv_head) +
                                 " hd " + std::to_string(c.head_dim) + " past " +
                                 std::to_string(c.n_past);
        // The CPU backend's f16 dot rounds q to f16; the f32 cache is compared exactly in double.
        EXPECT_LT(reported_nmse("attention vs cpu " + what, h, as_double(r)),
                  c.kv_type == DType::F32 ? 1e-10 : 1e-5)
            << what;
        if (c.kv_type == DType::F32) {
            EXPECT_LT(reported_nmse("attention vs f64 " + what, h, ref_attention(c, d)), 1e-10)
                << what;
        }
    }
}

TEST(HipAttention, KvStoreRoundsToF16LikeTheCpuBackend) {
    TANDEM_HIP_OR_SKIP(hip);
    // Attention over one key and one value returns the stored value: the f16 cache as written.
    const AttnCase c{1, 1, 64, 0, 0, DType::F16, 0, 1};
    AttnData d = attn_data(c);
    d.v_all[0] = 65519.0f;  // rounds down to 65504
    d.v_all[1] = 1e-7f;     // an f16 subnormal
    d.v_all[2] = -0.0f;
    auto cpu = make_backend("cpu", 2);
    auto h = run_attention(*hip, c, d), r = run_attention(*cpu, c, d);
    EXPECT_EQ(h, r);
    EXPECT_EQ(h[0], 65504.0f);
}

TEST(HipAttention, KvStorePastTheContextIsAClearError) {
    TANDEM_HIP_OR_SKIP(hip);
    hip->allocate_kv({KvDesc{DType::F16, 8, 4}});
    std::vector<float> x(8 * 3, 1.0f);
    OpGraph g;
    g.io.n_past = 2;
    TensorId kc = g.g.kv(0, "k", DType::F16, 8, 4);
    g.node(Op::KvStore, kc, {g.input(x.data(), 8, 3), kc});
    EXPECT_THROW(g.run(*hip), Error);
}

TEST(HipAttention, RopeNormalNeoxAndFactors) {
    TANDEM_HIP_OR_SKIP(hip);
    const int64_t hd = 64, n_head = 3, T = 4, width = hd * n_head;
    auto x = random_floats(size_t(width * T), 5, -2, 2);
    const std::vector<int32_t> pos{0, 7, 300, 4095};
    auto factors = random_floats(16, 6, 1.0f, 8.0f);
    auto cpu = make_backend("cpu", 2);
    for (auto [mode, n_rot, with_factors] : {std::tuple{RopeMode::Normal, int64_t(64), false},
                                             std::tuple{RopeMode::Neox, int64_t(64), false},
                                             std::tuple{RopeMode::Neox, int64_t(32), true}}) {
        QuantWeight fw(DType::F32, {n_rot / 2, 1, 1}, 9, 1.0f);
        for (int64_t i = 0; i < n_rot / 2; ++i) fw.values[i] = factors[i];
        std::memcpy(fw.bytes.data(), factors.data(), sizeof(float) * size_t(n_rot / 2));
        auto run = [&](Backend& b) {
            OpGraph g;
            std::vector<float> out;
            TensorId f = with_factors ? g.weight(b, fw) : kNoTensor;
            Node n;
            n.op = Op::Rope;
            n.out = g.output(out, width, T);
            n.src = {g.input(x.data(), width, T), g.input(pos.data(), T, 1, DType::I32), f,
                     kNoTensor, kNoTensor};
            n.i = {int32_t(hd), int32_t(n_rot), int32_t(mode), 0};
            n.f = {10000.0f, 0.5f};
            g.g.add_node(n);
            g.run(b);
            return out;
        };
        const auto h = run(*hip), r = run(*cpu);
        std::vector<double> ref(x.size());
        for (int64_t t = 0; t < T; ++t)
            for (int64_t hh = 0; hh < n_head; ++hh) {
                const float* xr = x.data() + (t * n_head + hh) * hd;
                double* o = ref.data() + (t * n_head + hh) * hd;
                for (int64_t i = 0; i < hd; ++i) o[i] = xr[i];
                for (int64_t i = 0; i < n_rot / 2; ++i) {
                    double inv = std::pow(10000.0, -2.0 * double(i) / double(n_rot));
                    if (with_factors) inv /= factors[i];
                    const double a = pos[t] * 0.5 * inv;
                    const int64_t i0 = mode == RopeMode::Neox ? i : 2 * i;
                    const int64_t i1 = mode == RopeMode::Neox ? i + n_rot / 2 : 2 * i + 1;
                    o[i0] = xr[i0] * std::cos(a) - xr[i1] * std::sin(a);
                    o[i1] = xr[i0] * std::sin(a) + xr[i1] * std::cos(a);
                }
            }
        const std::string what = "rope mode " + std::to_string(int(mode)) + " n_rot " +
                                 std::to_string(n_rot) + (with_factors ? " factors" : "");
        EXPECT_LT(reported_nmse(what + " vs f64", h, ref), 1e-12) << what;
        EXPECT_LT(reported_nmse(what + " vs cpu", h, as_double(r)), 1e-12) << what;
    }
}

}  // namespace
}  // namespace tandem::test

// The Vulkan backend's decode speed paths against the CPU backend: RMSNorm on model-width rows
// (registers + vector loads, and the strided fallback past 8192), decode steps replayed from
// cached command buffers while n_past grows (and with other graphs in between), split-K decode
// attention (many chunks, odd lengths, GQA, sliding window, softcap, f16/f32 cache).
#include <tuple>

#include "vk_test_support.h"

namespace tandem::test {
namespace {

TEST(VulkanSpeedPaths, RmsNormWideRows) {
    TANDEM_VULKAN_OR_SKIP(vk);
    for (auto [cols, group, with_w] : {std::tuple<int64_t, int32_t, bool>{4096, 0, true},
                                       {2048, 0, false},
                                       {8192, 0, true},
                                       {12288, 0, true},  // past the register path
                                       {1028, 0, true},
                                       {32 * 128, 128, true}}) {
        const int64_t rows = 3;
        const int64_t wn = group > 0 ? group : cols;
        auto x = random_floats(size_t(cols * rows), 17, -3, 3);
        QuantWeight w(DType::F32, {wn, 1, 1}, 18);
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

struct DecodeCase {
    int64_t n_head, n_kv_head, head_dim, window;
    float softcap;
    DType kv_type;
    int64_t prefix, steps, T;  // prefix tokens stored in one step, then `steps` decode steps
};

// One decode graph (KV store + attention, T tokens) built once and run for every step, as the
// engine does, so the Vulkan backend replays its recorded commands while n_past grows; a
// prefix-store graph runs first and again in the middle (another graph between replays).
// Returns every step's attention output, concatenated.
std::vector<float> run_decode(Backend& b, const DecodeCase& c) {
    const int64_t hd = c.head_dim, kvw = c.n_kv_head * hd, qw = c.n_head * hd;
    const int64_t n_ctx = c.prefix + c.steps * c.T + 8, n_all = n_ctx;
    b.allocate_kv({KvDesc{c.kv_type, kvw, n_ctx}, KvDesc{c.kv_type, kvw, n_ctx}});
    auto k_all = random_floats(size_t(n_all * kvw), 41, -2, 2);
    auto v_all = random_floats(size_t(n_all * kvw), 42, -2, 2);
    auto q_all = random_floats(size_t(c.steps * c.T * qw), 43, -2, 2);
    std::vector<float> out, all;
    // The inputs' host pointers change per step (as the engine's may): graphs hold slots only.
    OpGraph dec;
    {
        TensorId kin = dec.input(k_all.data(), kvw, c.T);
        TensorId vin = dec.input(v_all.data(), kvw, c.T);
        TensorId qin = dec.input(q_all.data(), qw, c.T);
        TensorId kc = dec.g.kv(0, "k", c.kv_type, kvw, n_ctx),
                 vc = dec.g.kv(1, "v", c.kv_type, kvw, n_ctx);
        dec.node(Op::KvStore, kc, {kin, kc});
        dec.node(Op::KvStore, vc, {vin, vc});
        dec.node(Op::Attention, dec.output(out, qw, c.T), {qin, kc, vc},
                 {int32_t(c.n_head), int32_t(c.n_kv_head), int32_t(hd), int32_t(c.window)},
                 {0.125f, c.softcap});
        dec.g.validate();
        b.reserve_scratch(dec.g.plan_scratch());
    }
    auto store = [&](int64_t n_past, int64_t T) {
        OpGraph g;
        g.io.n_past = static_cast<int32_t>(n_past);
        TensorId kin = g.input(k_all.data() + n_past * kvw, kvw, T);
        TensorId vin = g.input(v_all.data() + n_past * kvw, kvw, T);
        TensorId kc = g.g.kv(0, "k", c.kv_type, kvw, n_ctx),
                 vc = g.g.kv(1, "v", c.kv_type, kvw, n_ctx);
        g.node(Op::KvStore, kc, {kin, kc});
        g.node(Op::KvStore, vc, {vin, vc});
        g.run(b);
    };
    if (c.prefix > 0) store(0, c.prefix);
    int64_t n_past = c.prefix;
    for (int64_t s = 0; s < c.steps; ++s) {
        if (s == c.steps / 2) {  // another graph in between: a 1-token store at n_past
            store(n_past, 1);
            ++n_past;
        }
        dec.io.n_past = static_cast<int32_t>(n_past);
        dec.io.inputs[0] = k_all.data() + n_past * kvw;
        dec.io.inputs[1] = v_all.data() + n_past * kvw;
        dec.io.inputs[2] = q_all.data() + s * c.T * qw;
        b.compute(dec.g, dec.io);
        all.insert(all.end(), out.begin(), out.end());
        n_past += c.T;
    }
    return all;
}

void expect_decode_matches(const DecodeCase& c, Backend& vk) {
    auto cpu = make_backend("cpu", 2);
    auto v = run_decode(vk, c), r = run_decode(*cpu, c);
    ASSERT_EQ(v.size(), r.size());
    EXPECT_LT(nmse(v, as_double(r)), c.kv_type == DType::F16 ? 1e-9 : 1e-10)
        << "heads " << c.n_head << "/" << c.n_kv_head << " hd " << c.head_dim << " window "
        << c.window << " softcap " << c.softcap << " prefix " << c.prefix << " T " << c.T;
}

TEST(VulkanSpeedPaths, ReplayedDecodeStepsFollowNPast) {
    TANDEM_VULKAN_OR_SKIP(vk);
    expect_decode_matches({8, 2, 64, 0, 0, DType::F16, 5, 12, 1}, *vk);
    expect_decode_matches({4, 4, 32, 0, 0, DType::F32, 0, 9, 2}, *vk);
}

}  // namespace
}  // namespace tandem::test

// KV store + attention (GQA, sliding window, softcap, f16/f32 cache, prefill and decode after a
// cached prefix), MoE routing and expert FFN, and the tensor-parallel hooks on the Vulkan backend,
// each against the CPU backend running the same graph.
#include "tandem/backend/collective.h"
#include "vk_test_support.h"

namespace tandem::test {
namespace {

struct AttnCase {
    int64_t n_head, n_kv_head, head_dim, window;
    float softcap;
    DType kv_type;
    int64_t n_past, T;
};

// Stores K/V of the prefix in one step, then the new tokens and attention in a second one.
std::vector<float> run_attention(Backend& b, const AttnCase& c) {
    const int64_t hd = c.head_dim, kvw = c.n_kv_head * hd, qw = c.n_head * hd;
    const int64_t n_ctx = c.n_past + c.T + 3, n_all = c.n_past + c.T;
    b.allocate_kv({KvDesc{c.kv_type, kvw, n_ctx}, KvDesc{c.kv_type, kvw, n_ctx}});
    auto k_all = random_floats(size_t(n_all * kvw), 31, -2, 2);
    auto v_all = random_floats(size_t(n_all * kvw), 32, -2, 2);
    auto q = random_floats(size_t(c.T * qw), 33, -2, 2);
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
        g.run(b);
    };
    if (c.n_past > 0) step(0, c.n_past, false);
    step(c.n_past, c.T, true);
    return out;
}

TEST(VulkanOps, AttentionOverCache) {
    TANDEM_VULKAN_OR_SKIP(vk);
    auto cpu = make_backend("cpu", 2);
    for (const AttnCase& c :
         {AttnCase{4, 4, 64, 0, 0, DType::F32, 0, 7}, AttnCase{8, 2, 32, 0, 0, DType::F16, 5, 3},
          AttnCase{4, 1, 256, 4, 0, DType::F16, 9, 6},
          AttnCase{6, 3, 16, 0, 30.0f, DType::F32, 2, 1},
          AttnCase{2, 1, 128, 3, 0, DType::F32, 20, 1},
          // more positions than the shader's chunk of 256: the online softmax across chunks
          AttnCase{2, 2, 64, 0, 0, DType::F16, 600, 2},
          AttnCase{4, 2, 80, 300, 0, DType::F32, 700, 1},
          // Llama-shaped decode: GQA 4:1, head_dim 128, f16 cache (16-byte K loads)
          AttnCase{8, 2, 128, 0, 0, DType::F16, 300, 1}}) {
        auto v = run_attention(*vk, c), r = run_attention(*cpu, c);
        EXPECT_LT(nmse(v, as_double(r)), 1e-10)
            << "heads " << c.n_head << "/" << c.n_kv_head << " hd " << c.head_dim << " window "
            << c.window << " n_past " << c.n_past << " T " << c.T;
    }
}

TEST(VulkanOps, KvStorePastContextIsAnError) {
    TANDEM_VULKAN_OR_SKIP(vk);
    vk->allocate_kv({KvDesc{DType::F16, 8, 4}});
    auto k = random_floats(8 * 2, 1);
    OpGraph g;
    g.io.n_past = 3;  // rows 3 and 4 of a 4-row cache
    TensorId kin = g.input(k.data(), 8, 2);
    TensorId kc = g.g.kv(0, "k", DType::F16, 8, 4);
    g.node(Op::KvStore, kc, {kin, kc});
    try {
        g.run(*vk);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("context full"), std::string::npos) << e.what();
    }
}

TEST(VulkanOps, MoeRouteAndExperts) {
    TANDEM_VULKAN_OR_SKIP(vk);
    const int64_t n_embd = 256, n_ff = 96, n_expert = 8, T = 5;
    const int k = 2;
    struct Case {
        DType gate_up, down;
        int first_expert;  // a tensor-parallel rank holding experts 4..7 only
        int64_t n_local;
        Activation act;
    };
    for (Case c : {Case{DType::F32, DType::F32, 0, 8, Activation::Silu},
                   Case{DType::Q8_0, DType::Q5_0, 0, 8, Activation::Silu},
                   Case{DType::Q4_K, DType::Q8_0, 4, 4, Activation::GeluTanh}}) {
        QuantWeight gate(c.gate_up, {n_embd, n_ff, c.n_local}, 21);
        QuantWeight up(c.gate_up, {n_embd, n_ff, c.n_local}, 22);
        QuantWeight down(c.down, {n_ff, n_embd, c.n_local}, 23);
        auto x = random_floats(size_t(n_embd * T), 24);
        auto logits = random_floats(size_t(n_expert * T), 25, -3, 3);
        std::vector<float> route_v, route_c;
        auto r = run_both(*vk, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
            TensorId wg = g.weight(b, gate), wu = g.weight(b, up), wd = g.weight(b, down);
            TensorId in = g.input(x.data(), n_embd, T), lg = g.input(logits.data(), n_expert, T);
            TensorId rt = g.g.activation("route", 2 * k, T);
            g.node(Op::MoeRoute, rt, {lg}, {k, 1, 0, 0});
            g.node(Op::Copy, g.output(&b == vk.get() ? route_v : route_c, 2 * k, T), {rt});
            g.node(Op::MoeFfn, g.output(out, n_embd, T), {in, rt, wg, wu, wd},
                   {c.first_expert, int32_t(c.act), 0, 0});
        });
        EXPECT_LT(nmse(route_v, as_double(route_c)), 1e-12) << dtype_name(c.gate_up);
        // The CPU backend quantises activations to q8 for integer weight types.
        EXPECT_LT(nmse(r.vulkan, as_double(r.cpu)), c.gate_up == DType::F32 ? 1e-10 : 1e-3)
            << dtype_name(c.gate_up);
    }
}

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

TEST(VulkanOps, CollectiveHooksMatchCpu) {
    TANDEM_VULKAN_OR_SKIP(vk);
    auto x = random_floats(2 * 6, 40);
    for (bool with_collective : {false, true}) {
        FakeTwoRanks coll;
        std::vector<float> reduced_v, reduced_c;
        auto r = run_both(*vk, [&](OpGraph& g, Backend& b, std::vector<float>& gathered) {
            b.set_collective(with_collective ? &coll : nullptr);
            TensorId in = g.input(x.data(), 6, 2);
            TensorId a = g.g.activation("a", 6, 2);
            g.node(Op::Copy, a, {in});
            g.node(Op::AllReduce, a, {a});
            g.node(Op::Copy, g.output(&b == vk.get() ? reduced_v : reduced_c, 6, 2), {a});
            g.node(Op::AllGather, g.output(gathered, with_collective ? 9 : 6, 2), {in});
        });
        EXPECT_EQ(reduced_v, reduced_c);
        EXPECT_EQ(r.vulkan, r.cpu);
        EXPECT_EQ(reduced_v[7], x[7] + (with_collective ? 7.0f : 0.0f));
    }
    vk->set_collective(nullptr);
}

}  // namespace
}  // namespace tandem::test

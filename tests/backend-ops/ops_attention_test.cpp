// KV store + causal attention on every backend (GQA up to 8:1, sliding window, softcap, f16/f32
// cache, prefill and decode after a cached prefix, contexts longer than the GPU kernels' key
// tiles/chunks, odd head sizes) against a double reference over the values the cache stores, and
// (GPU backends) against the CPU backend; the f16 store's rounding; a full cache as an error.
#include "op_references.h"
#include "tandem/common/error.h"

namespace tandem::test {
namespace {

class AttnOps : public BackendOpTest {};

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

TEST_P(AttnOps, CausalAttentionOverCache) {
    for (const AttnCase& c : {
             AttnCase{4, 4, 64, 0, 0, DType::F32, 0, 7},
             AttnCase{8, 2, 32, 0, 0, DType::F16, 5, 3},
             AttnCase{4, 1, 256, 4, 0, DType::F16, 9, 6},
             AttnCase{6, 3, 16, 0, 30.0f, DType::F32, 2, 1},
             AttnCase{2, 1, 128, 3, 0, DType::F32, 20, 1},
             // more positions than Vulkan's chunk of 256 / HIP's tile of 128 keys: the online
             // softmax across chunks
             AttnCase{2, 2, 64, 0, 0, DType::F16, 600, 2},
             AttnCase{4, 2, 80, 300, 0, DType::F32, 700, 1},
             // Llama-shaped decode: GQA 4:1, head_dim 128, f16 cache (16-byte K loads)
             AttnCase{8, 2, 128, 0, 0, DType::F16, 300, 1},
             // decode steps whose keys span several of HIP's splits, merged by the last split
             // block: a window, head_dim 256, a GQA group of 3 in blocks of 4 heads
             AttnCase{8, 2, 128, 100, 0, DType::F16, 250, 3},
             AttnCase{4, 2, 256, 0, 0, DType::F32, 200, 2},
             AttnCase{6, 2, 64, 0, 0, DType::F16, 90, 4},
             // long decode contexts: several positions for each of a split's clusters, an odd
             // count (HIP's clusters take two a trip)
             AttnCase{8, 2, 128, 0, 0, DType::F16, 2999, 2},
             AttnCase{4, 1, 64, 0, 0, DType::F32, 1501, 1},
             // decode with GQA groups over HIP's blocks of 16 heads on the matrix units (20: two,
             // the second part empty; 34: three), softcap, a window
             AttnCase{40, 2, 128, 0, 20.0f, DType::F16, 400, 1},
             AttnCase{34, 1, 64, 50, 0, DType::F16, 120, 3},
             // more than 8 tokens: HIP runs one block per (token, head), no key split
             AttnCase{4, 2, 64, 0, 0, DType::F16, 30, 12},
             AttnCase{2, 1, 128, 5, 0, DType::F32, 140, 20},
             // decode steps that split their keys: fewer keys than splits, odd head_dim
             AttnCase{2, 2, 36, 0, 0, DType::F16, 0, 2},
             AttnCase{3, 1, 20, 0, 0, DType::F32, 333, 3},
             // prefill chunks over Vulkan's flash tiles (32 query rows of a KV head, 32 or 16
             // positions a K/V tile): rows over several workgroups, GQA groups that do not
             // divide 32 (3, 7), head_dim 96 and 256, a window cutting through the tiles,
             // softcap, no prefix
             AttnCase{8, 2, 128, 0, 0, DType::F16, 100, 70},
             AttnCase{21, 3, 96, 0, 0, DType::F32, 37, 45},
             AttnCase{4, 2, 256, 40, 0, DType::F16, 50, 33},
             AttnCase{6, 2, 64, 0, 30.0f, DType::F16, 0, 64},
             AttnCase{4, 4, 32, 17, 0, DType::F32, 5, 40},
         }) {
        const AttnData d(c);
        const auto out = run_attention(*be, c, d);
        std::vector<float> cpu;
        if (gpu()) {
            auto cb = make_backend("cpu", 2);
            cpu = run_attention(*cb, c, d);
        }
        const std::string what = std::string(dtype_name(c.kv_type)) + " heads " +
                                 std::to_string(c.n_head) + "/" + std::to_string(c.n_kv_head) +
                                 " hd " + std::to_string(c.head_dim) + " window " +
                                 std::to_string(c.window) + (c.softcap > 0 ? " softcap" : "") +
                                 " past " + std::to_string(c.n_past) + " T=" + std::to_string(c.T);
        // A GPU run vs the CPU backend with an f16 cache: the CPU's f16 dot may round q to f16
        // (the HIP suite allowed 1e-5 there), so the double reference is the tight check.
        // Prefill on cooperative matrices rounds q and the softmax weights to f16, and decode
        // steps do where the device says so.
        const DeviceInfo& dev = be->device();
        const bool f16 = ((dev.f16_prefill_attention && c.T > 4) || dev.f16_decode_attention) &&
                         c.kv_type == DType::F16;
        check("attention", what, out, ref_attention(c, d), f16 ? 1e-5 : 1e-10, cpu,
              c.kv_type == DType::F32 ? 1e-10 : 1e-5);
    }
}

TEST_P(AttnOps, KvStoreRoundsToF16) {
    // Attention over one key and one value returns the stored value: the f16 cache as written.
    const AttnCase c{1, 1, 64, 0, 0, DType::F16, 0, 1};
    AttnData d(c);
    d.v_all[0] = 65519.0f;  // rounds down to 65504
    d.v_all[1] = 1e-7f;     // an f16 subnormal
    d.v_all[2] = -0.0f;
    const auto out = run_attention(*be, c, d);
    ASSERT_EQ(out.size(), d.v_all.size());
    for (size_t i = 0; i < out.size(); ++i)
        EXPECT_EQ(out[i], quant::fp16_to_fp32(quant::fp32_to_fp16(d.v_all[i]))) << i;
    EXPECT_EQ(out[0], 65504.0f);
}

TEST_P(AttnOps, KvStorePastContextIsAnError) {
    for (auto [n_past, T] : {std::pair{3, 2}, std::pair{2, 3}}) {  // rows up to 4 and 5 of 4
        be->allocate_kv({KvDesc{DType::F16, 8, 4}});
        auto k = random_floats(size_t(8 * T), 1);
        OpGraph g;
        g.io.n_past = n_past;
        TensorId kc = g.g.kv(0, "k", DType::F16, 8, 4);
        g.node(Op::KvStore, kc, {g.input(k.data(), 8, T), kc});
        try {
            g.run(*be);
            ADD_FAILURE() << "no error at n_past " << n_past << " T " << T;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("context full"), std::string::npos) << e.what();
        }
    }
}

// One decode graph (KV store + attention) run step after step, as the engine runs it (the GPU
// backends keep what they found of it the first time: HIP its plan and graph, Vulkan its
// recorded commands): each step's own inputs are still checked. The step past the cache's rows
// and a step without its output are errors that change nothing, and the next good step gives
// what a fresh backend gives.
TEST_P(AttnOps, ReplayedStepsStillCheckTheirInputs) {
    const AttnCase c{4, 2, 64, 0, 0, DType::F16, 0, 6};
    const AttnData d(c);
    const int64_t hd = c.head_dim, kvw = c.n_kv_head * hd, qw = c.n_head * hd, n_ctx = 4;
    auto steps = [&](Backend& b, bool bad) {
        b.allocate_kv({KvDesc{c.kv_type, kvw, n_ctx}, KvDesc{c.kv_type, kvw, n_ctx}});
        OpGraph g;
        std::vector<float> out, all;
        TensorId kin = g.input(d.k_all.data(), kvw, 1), vin = g.input(d.v_all.data(), kvw, 1);
        TensorId qin = g.input(d.q.data(), qw, 1);
        TensorId kc = g.g.kv(0, "k", c.kv_type, kvw, n_ctx),
                 vc = g.g.kv(1, "v", c.kv_type, kvw, n_ctx);
        g.node(Op::KvStore, kc, {kin, kc});
        g.node(Op::KvStore, vc, {vin, vc});
        g.node(Op::Attention, g.output(out, qw, 1), {qin, kc, vc},
               {int32_t(c.n_head), int32_t(c.n_kv_head), int32_t(hd), 0}, {0.125f, 0.0f});
        g.g.validate();
        b.reserve_scratch(g.g.plan_scratch());
        auto step = [&](int32_t n_past) {
            g.io.n_past = n_past;
            g.io.inputs[0] = d.k_all.data() + n_past * kvw;
            g.io.inputs[1] = d.v_all.data() + n_past * kvw;
            g.io.inputs[2] = d.q.data() + n_past * qw;
            b.compute(g.g, g.io);
            all.insert(all.end(), out.begin(), out.end());
        };
        for (int32_t p = 0; p < 3; ++p) step(p);
        if (bad) {
            try {
                step(4);  // row 4 of a 4-row cache
                ADD_FAILURE() << "no error past the cache";
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find("context full"), std::string::npos)
                    << e.what();
            }
            void* kept = g.io.outputs[0];
            g.io.outputs[0] = nullptr;
            try {
                step(3);
                ADD_FAILURE() << "no error without the output";
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find("not given"), std::string::npos) << e.what();
            }
            g.io.outputs[0] = kept;
        }
        step(3);
        return all;
    };
    const auto fresh = steps(*be, false);
    auto other = make_backend(GetParam(), 2);
    const auto checked = steps(*other, true);
    EXPECT_EQ(checked, fresh);
    // The 4 steps' rows, one token each: the first 4 tokens' attention.
    const AttnCase four{c.n_head, c.n_kv_head, hd, 0, 0, c.kv_type, 0, 4};
    EXPECT_LT(nmse(fresh, ref_attention(four, d)),
              be->device().f16_decode_attention ? 1e-5 : 1e-10);
}

TANDEM_OP_SUITE(AttnOps);

}  // namespace
}  // namespace tandem::test

// The Vulkan backend's decode speed paths against the CPU backend: RMSNorm on model-width rows
// (registers + vector loads, and the strided fallback past 8192), decode steps replayed from
// cached command buffers while n_past grows (and with other graphs in between), split-K decode
// attention (many chunks, odd lengths, GQA, sliding window, softcap, f16/f32 cache), and the
// direct matvec (activations read from memory, no shared staging) for every weight type,
// Q4_0 / Q8_0 weights repacked at upload (TANDEM_VK_REPACK=1) through every kernel reading them,
// and consecutive matvecs of one input fused into one dispatch.
#include <array>
#include <cstdlib>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "../backend-ops/fused_path_checks.h"
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

// Add then RmsNorm of its sum (a residual add and the next norm): recorded as one dispatch; both
// the sum (the residual stream, used again later) and the normalised rows must be right, on the
// register path (16-byte loads), an odd row length and the strided fallback past 8192.
TEST(VulkanSpeedPaths, AddThenRmsNormFused) {
    TANDEM_VULKAN_OR_SKIP(vk);
    expect_add_then_rms_norm(*vk);
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

// bound: the NMSE allowed (0: 1e-9 with an f16 cache, 1e-10 with f32).
void expect_decode_matches(const DecodeCase& c, Backend& vk, double bound = 0) {
    auto cpu = make_backend("cpu", 2);
    auto v = run_decode(vk, c), r = run_decode(*cpu, c);
    ASSERT_EQ(v.size(), r.size());
    if (bound == 0) bound = c.kv_type == DType::F16 ? 1e-9 : 1e-10;
    EXPECT_LT(nmse(v, as_double(r)), bound)
        << "heads " << c.n_head << "/" << c.n_kv_head << " hd " << c.head_dim << " window "
        << c.window << " softcap " << c.softcap << " prefix " << c.prefix << " T " << c.T;
}

TEST(VulkanSpeedPaths, ReplayedDecodeStepsFollowNPast) {
    TANDEM_VULKAN_OR_SKIP(vk);
    expect_decode_matches({8, 2, 64, 0, 0, DType::F16, 5, 12, 1}, *vk);
    expect_decode_matches({4, 4, 32, 0, 0, DType::F32, 0, 9, 2}, *vk);
}

// The Vulkan backend with TANDEM_VK_SPLITK set while it is created (read at construction).
std::unique_ptr<Backend> vulkan_with_splits(const char* splits) {
    setenv("TANDEM_VK_SPLITK", splits, 1);
    auto b = vulkan_backend();
    unsetenv("TANDEM_VK_SPLITK");
    return b;
}

const DecodeCase kSplitCases[] = {
    // Llama-shaped GQA 4:1, f16 cache (16-byte K loads), a prefix longer than a tile (128)
    {32, 8, 128, 0, 0, DType::F16, 601, 3, 1},
    // GQA 8:1 and 16:1 (two head blocks of 8 per KV head), f32 cache
    {8, 1, 64, 0, 0, DType::F32, 333, 2, 1},
    {16, 1, 32, 0, 0, DType::F16, 150, 2, 2},
    // sliding window shorter than the context, softcap (Gemma), f16 head_dim 36 (no 16-byte K)
    {4, 2, 36, 100, 30.0f, DType::F16, 257, 3, 1},
    {6, 3, 80, 64, 0, DType::F32, 129, 2, 3},
    // 4 query tokens (the largest split-K step), head_dim 256, MHA
    {2, 2, 256, 0, 0, DType::F16, 77, 2, 4},
    // no prefix: the first positions, most splits empty
    {4, 1, 64, 0, 0, DType::F16, 0, 4, 1},
};

TEST(VulkanSpeedPaths, SplitKAttentionPlannedSplits) {
    TANDEM_VULKAN_OR_SKIP(vk);
    for (const DecodeCase& c : kSplitCases) expect_decode_matches(c, *vk);
}

// Few splits: each covers several 128-position tiles (the online softmax across tiles).
TEST(VulkanSpeedPaths, SplitKAttentionFewLongSplits) {
    TANDEM_VULKAN_OR_SKIP(probe);
    for (const char* splits : {"1", "2", "7"}) {
        auto vk = vulkan_with_splits(splits);
        for (const DecodeCase& c : kSplitCases) {
            SCOPED_TRACE(std::string("TANDEM_VK_SPLITK=") + splits);
            expect_decode_matches(c, *vk);
        }
    }
}

// Prefill chunks (more tokens than split-K takes) replayed while n_past moves, against the CPU
// backend: on attention_flash_coopmat.comp where the device has cooperative matrices
// (TANDEM_VK_FLASH unset), on attention_flash.comp (=1) and on the one-row-per-workgroup kernel
// (=0). The profile's label says which kernel ran.
TEST(VulkanSpeedPaths, FlashAttentionPrefillChunks) {
    const DecodeCase cases[] = {
        {32, 8, 128, 0, 0, DType::F16, 40, 3, 37},     // Llama-shaped, 5 row tiles a KV head
        {28, 4, 128, 0, 0, DType::F16, 0, 2, 20},      // Qwen2's GQA 7:1, no prefix
        {8, 4, 256, 24, 50.0f, DType::F32, 9, 3, 9},   // Gemma-like: hd 256, window, softcap
        {4, 4, 64, 0, 0, DType::F32, 130, 2, 16},      // MHA, positions over many tiles
        {6, 2, 64, 19, 30.0f, DType::F16, 70, 2, 50},  // window inside the tiles, softcap
        {4, 1, 48, 0, 0, DType::F16, 33, 2, 24},       // head_dim 48: cooperative matrices only
    };
    for (const char* mode : {"", "1", "0"}) {
        ScopedEnv env("TANDEM_VK_FLASH", mode);
        ScopedEnv prof("TANDEM_VK_PROFILE", "1");
        TANDEM_VULKAN_OR_SKIP(vk);
        const bool coopmat = vk->device().f16_prefill_attention;
        EXPECT_TRUE(!coopmat || std::string(mode).empty()) << "TANDEM_VK_FLASH=" << mode;
        testing::internal::CaptureStderr();
        for (const DecodeCase& c : cases) {
            SCOPED_TRACE(std::string("TANDEM_VK_FLASH=") + mode);
            // q and the softmax weights in f16 on cooperative matrices
            const bool f16 = coopmat && c.kv_type == DType::F16 && c.head_dim <= 128;
            expect_decode_matches(c, *vk, f16 ? 1e-5 : 0);
        }
        vk.reset();  // the profile is printed when the backend goes
        const std::string err = testing::internal::GetCapturedStderr();
        if (err.find("no timestamps") != std::string::npos) continue;
        // Every device we run has subgroups of 8 or more (lavapipe on AVX2: 8).
        const std::string m(mode);
        // The f32 caches take attention_flash.comp unless it is off; head_dim 48 has no f32
        // tiles, so it runs one row a workgroup unless cooperative matrices take it.
        EXPECT_EQ(err.find("| attention T>1 flash |") != std::string::npos, m != "0") << err;
        EXPECT_EQ(err.find("| attention T>1 flash coopmat |") != std::string::npos,
                  m.empty() && coopmat)
            << err;
        EXPECT_EQ(err.find("| attention T>1 |") != std::string::npos, !m.empty() || !coopmat)
            << err;
    }
}

const DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,
                              DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                              DType::Q4_K, DType::Q5_K, DType::Q6_K};

TEST(VulkanSpeedPaths, DirectMatvecEveryType) {
    ScopedEnv no_q8("TANDEM_VK_Q8", "0");  // the f32 kernels (vk_q8_matvec_test: the q8 one)
    struct Shape {
        int64_t n_in, n_out, T;
    };
    const Shape shapes[] = {
        {2304, 67, 1},  // 72 groups: two unrolled steps of 32 lanes, the last one partial; odd rows
        {4096, 33, 1},  // an 8B model's row length
        {1024, 17, 3},  // a partial 4-token tile
        {512, 5, 6},    // two 4-token tiles
        {256, 1, 1},    // one row, 8 groups (fewer than the lanes of a row)
    };
    // Every type with the discrete-GPU default shape; a few with other shapes (each
    // specialisation is a pipeline compile, seconds on lavapipe).
    for (const char* mv : {"512,16,1", "64,2,1", "32,32,1"}) {
        setenv("TANDEM_VK_MATVEC", mv, 1);
        auto vk = vulkan_backend();
        unsetenv("TANDEM_VK_MATVEC");
        if (!vk) GTEST_SKIP() << "no Vulkan backend";
        const bool all_types = std::string(mv) == "512,16,1";
        for (DType t : kWeightTypes)
            for (const Shape& s : shapes) {
                if (s.n_in % dtype_traits(t).block_elems) continue;
                if (!all_types && t != DType::Q4_0 && t != DType::Q6_K && t != DType::F16) continue;
                QuantWeight w(t, {s.n_in, s.n_out, 1}, uint32_t(s.n_out * 7 + s.T));
                auto x = random_floats(size_t(s.n_in * s.T), uint32_t(s.T + 11));
                auto r = run_both(*vk, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
                    g.node(Op::MatMul, g.output(out, s.n_out, s.T),
                           {g.weight(b, w), g.input(x.data(), s.n_in, s.T)});
                });
                EXPECT_LT(nmse(r.vulkan, ref_matmul(w, x, s.T)), 1e-9)
                    << mv << " " << dtype_name(t) << " " << s.n_in << "x" << s.n_out
                    << " T=" << s.T;
                // The CPU backend quantises activations to q8 for integer weight types.
                const double cpu_tol = t == DType::F32                       ? 1e-10
                                       : t == DType::F16 || t == DType::BF16 ? 1e-8
                                                                             : 2e-4;
                EXPECT_LT(nmse(r.vulkan, as_double(r.cpu)), cpu_tol)
                    << mv << " " << dtype_name(t) << " " << s.n_in << "x" << s.n_out
                    << " T=" << s.T;
            }
    }
}

// Consecutive MatMuls reading one input (q/k/v, gate/up) run as one matvec dispatch over all
// their rows when the weights share type and row length and have no bias: every output against
// the double product, with row counts that make workgroups straddle two matrices, a type change
// that ends the run, a bias that breaks it, and 1-3 tokens.
TEST(VulkanSpeedPaths, MatvecsSharingAnInputFused) {
    ScopedEnv no_q8("TANDEM_VK_Q8", "0");  // the f32 matvec (vk_q8_matvec_test: the q8 one)
    TANDEM_VULKAN_OR_SKIP(vk);
    struct Case {
        int64_t n_in, T;
        std::vector<std::pair<DType, int64_t>> mats;  // (type, n_out) in node order
        int with_bias;                                // node index with a bias, -1: none
    };
    const Case cases[] = {
        {256, 1, {{DType::Q4_0, 67}, {DType::Q4_0, 16}, {DType::Q4_0, 16}}, -1},
        {512, 3, {{DType::Q4_K, 33}, {DType::Q4_K, 9}, {DType::Q6_K, 40}}, -1},
        {96, 2, {{DType::F16, 5}, {DType::F16, 7}}, -1},
        {256, 1, {{DType::Q8_0, 30}, {DType::Q8_0, 11}, {DType::Q8_0, 12}}, 1},
        {4096, 1, {{DType::Q4_0, 4096}, {DType::Q4_0, 1024}, {DType::Q4_0, 1024}}, -1},
    };
    for (const Case& c : cases) {
        auto x = random_floats(size_t(c.n_in * c.T), uint32_t(c.n_in + c.T), -2, 2);
        std::vector<QuantWeight> ws;
        ws.reserve(c.mats.size());
        for (size_t k = 0; k < c.mats.size(); ++k)
            ws.emplace_back(c.mats[k].first, std::array<int64_t, 3>{c.n_in, c.mats[k].second, 1},
                            uint32_t(40 + k));
        std::vector<std::vector<float>> ys(c.mats.size());
        OpGraph g;
        const TensorId in = g.input(x.data(), c.n_in, c.T);
        // The biased node's bias: [n_out] f32.
        const int64_t nb = c.with_bias >= 0 ? c.mats[size_t(c.with_bias)].second : 1;
        QuantWeight bias(DType::F32, {nb, 1, 1}, 78);
        for (size_t k = 0; k < c.mats.size(); ++k)
            g.node(Op::MatMul, g.output(ys[k], c.mats[k].second, c.T),
                   {g.weight(*vk, ws[k]), in,
                    int(k) == c.with_bias ? g.weight(*vk, bias) : kNoTensor});
        g.run(*vk);
        for (size_t k = 0; k < c.mats.size(); ++k) {
            const auto ref =
                ref_matmul(ws[k], x, c.T, int(k) == c.with_bias ? &bias.values : nullptr);
            EXPECT_LT(nmse(ys[k], ref), 1e-9) << "n_in " << c.n_in << " T=" << c.T << " node " << k
                                              << " " << dtype_name(c.mats[k].first);
        }
    }
}

// The repacked layouts (vk_repack.h: Q4_0, Q8_0, Q6_K) through matvec (direct and staged), the
// tiled kernel and get_rows, against the dequantised file blocks; rows that are not whole
// groups of 8 blocks (super-blocks) stay in the file layout.
TEST(VulkanSpeedPaths, RepackedWeightsEveryKernel) {
    ScopedEnv no_q8("TANDEM_VK_Q8", "0");  // the f32 kernels (vk_q8_matvec_test: the q8 one)
    struct Case {
        const char* matvec;
        int64_t n_in, n_out, T;
    };
    // Q6_K is repacked in groups of 8 super-blocks: rows of 2048 / 4096, not 2304 or 512.
    const Case cases[] = {{"512,16,1", 2304, 37, 1},  {"256,8,0", 2304, 37, 3},
                          {"512,16,1", 4096, 21, 1},  {"256,8,0", 4096, 21, 3},
                          {"512,16,1", 512, 70, 70},   // T >= 9: the tiled kernel
                          {"512,16,1", 2048, 20, 12},  // tiled, Q6_K repacked
                          {"512,16,1", 96, 9, 2}};     // not repacked: 3 blocks per row
    for (const Case& c : cases) {
        setenv("TANDEM_VK_REPACK", "1", 1);
        setenv("TANDEM_VK_MATVEC", c.matvec, 1);
        auto vk = vulkan_backend();
        unsetenv("TANDEM_VK_REPACK");
        unsetenv("TANDEM_VK_MATVEC");
        if (!vk) GTEST_SKIP() << "no Vulkan backend";
        for (DType t : {DType::Q4_0, DType::Q8_0, DType::Q6_K}) {
            if (c.n_in % dtype_traits(t).block_elems) continue;
            QuantWeight w(t, {c.n_in, c.n_out, 1}, uint32_t(c.n_out + c.T));
            auto x = random_floats(size_t(c.n_in * c.T), uint32_t(c.T + 3));
            std::vector<float> y, rows;
            std::vector<int32_t> ids{0, int32_t(c.n_out - 1), int32_t(c.n_out / 2)};
            OpGraph g;
            const TensorId wt = g.weight(*vk, w);
            g.node(Op::MatMul, g.output(y, c.n_out, c.T), {wt, g.input(x.data(), c.n_in, c.T)});
            g.node(Op::GetRows, g.output(rows, c.n_in, 3),
                   {wt, g.input(ids.data(), 3, 1, DType::I32)});
            g.run(*vk);
            // f16 products on cooperative matrices (ops_matmul_test.cpp's f16_prefill bound).
            const bool f16 = vk->device().f16_prefill_matmul && c.T >= 9;
            EXPECT_LT(nmse(y, ref_matmul(w, x, c.T)), f16 ? 1e-5 : 1e-9)
                << c.matvec << " " << dtype_name(t) << " " << c.n_in << "x" << c.n_out
                << " T=" << c.T;
            for (size_t r = 0; r < ids.size(); ++r)
                for (int64_t i = 0; i < c.n_in; ++i)
                    ASSERT_EQ(rows[r * c.n_in + i], w.values[ids[r] * c.n_in + i])
                        << dtype_name(t) << " row " << ids[r] << " element " << i;
        }
    }
}

// Where the device has the cooperative-matrix prefill, its first use checks it against the f32
// tiles (vk_coopmat_check.cpp) and must keep it on: a check that misfired would turn the path
// off silently (the op suite's bounds would then hold for the f32 tiles).
TEST(VulkanSpeedPaths, CooperativeMatrixPrefillPassesItsCheck) {
    TANDEM_VULKAN_OR_SKIP(vk);
    if (!vk->device().f16_prefill_matmul)
        GTEST_SKIP() << "no cooperative-matrix prefill on this device: " << vk->device().notes;
    QuantWeight w(DType::Q4_0, {512, 200, 1}, 11);
    auto x = random_floats(512 * 70, 12);
    const auto y = run_matmul(*vk, w, x, 70);
    EXPECT_TRUE(vk->device().f16_prefill_matmul) << "the check turned the path off";
    EXPECT_LT(nmse(y, ref_matmul(w, x, 70)), 1e-5);
}

// The cooperative-matrix prefill reads its input as f16 made once for the matmuls sharing it
// (to_f16.comp; TANDEM_VK_COOPMAT_X16=0: each tile converts the f32 rows) and decodes repacked
// Q4_0 and Q8_0 straight to f16 (TANDEM_VK_COOPMAT_F16DQ=0: through f32): the same bits,
// activations beyond f16's range saturated in both (fused_path_checks.h).
TEST(VulkanSpeedPaths, PrefillInputFormsSameBits) {
    TANDEM_VULKAN_OR_SKIP(fast);
    if (!fast->device().f16_prefill_matmul)
        GTEST_SKIP() << "no cooperative-matrix prefill on this device: " << fast->device().notes;
    const ScopedEnv dq("TANDEM_VK_COOPMAT_F16DQ", "0"), x16("TANDEM_VK_COOPMAT_X16", "0");
    TANDEM_VULKAN_OR_SKIP(f32_forms);
    expect_prefill_forms_same_bits(*fast, *f32_forms);
}

// Two Vulkan backends made under other settings (`a`, then `b`: environment variables), whose
// cooperative-matrix prefill forms must give the same bits (fused_path_checks.h) at 40, 70 and
// 200 tokens.
void expect_settings_same_bits(const std::vector<std::pair<const char*, const char*>>& a,
                               const std::vector<std::pair<const char*, const char*>>& b) {
    auto make = [](const std::vector<std::pair<const char*, const char*>>& env) {
        std::vector<std::unique_ptr<ScopedEnv>> set;
        for (const auto& [name, value] : env)
            set.push_back(std::make_unique<ScopedEnv>(name, value));
        return vulkan_backend();
    };
    std::unique_ptr<Backend> first = make(a), second = make(b);
    if (!first || !second) GTEST_SKIP() << "no Vulkan backend";
    if (!first->device().f16_prefill_matmul)
        GTEST_SKIP() << "no cooperative-matrix prefill on this device: " << first->device().notes;
    expect_prefill_forms_same_bits(*first, *second, {40, 70, 200});
}

// The cooperative-matrix matmul in 128-token tiles past 64 tokens (the default for repacked Q4_0
// and Q8_0, Q5_K and Q6_K; TANDEM_VK_COOPMAT_TOKS=128: every type) gives the bits of the
// 64-token tiles (=64): 70 tokens (one part-filled wide tile), 200 (a whole one and a tail), 40
// (64 in both).
TEST(VulkanSpeedPaths, PrefillTileWidthsSameBits) {
    expect_settings_same_bits({{"TANDEM_VK_COOPMAT_TOKS", "128"}},
                              {{"TANDEM_VK_COOPMAT_TOKS", "64"}});
}

// Short prompts: the prefill matmul (cooperative matrices where the device has them, else the
// f32 tiles) splits its inputs where its grid is small (4096 inputs by 192 rows at 9 tokens:
// 32 parts of 128 inputs), against TANDEM_VK_MATMUL_SPLIT=0 (fused_path_checks.h).
TEST(VulkanSpeedPaths, PrefillShortPromptsSplitOverInputs) {
    TANDEM_VULKAN_OR_SKIP(split);
    const ScopedEnv off("TANDEM_VK_MATMUL_SPLIT", "0");
    TANDEM_VULKAN_OR_SKIP(whole);
    expect_prefill_split_matches_unsplit(*split, *whole, split->device().f16_prefill_matmul);
}

// The cooperative-matrix tile's staging forms (TANDEM_VK_COOPMAT_STAGE: 14, the activations
// staged before the weights, the product steps rolled and the K-quants' groups staged half by
// half; 0, none of them; repacked Q4_0, Q8_0 and Q6_K's 128-token tiles roll the steps by
// default) for every type, in 128-token tiles: the same bits.
TEST(VulkanSpeedPaths, PrefillStagingFormsSameBits) {
    expect_settings_same_bits(
        {{"TANDEM_VK_COOPMAT_TOKS", "128"}, {"TANDEM_VK_COOPMAT_STAGE", "14"}},
        {{"TANDEM_VK_COOPMAT_TOKS", "128"}, {"TANDEM_VK_COOPMAT_STAGE", "0"}});
}

// A Rope whose output the next node stores into the KV cache writes the cache rows itself (one
// dispatch; fused_path_checks.h).
TEST(VulkanSpeedPaths, RopeWritesTheKvCacheItself) {
    TANDEM_VULKAN_OR_SKIP(vk);
    expect_rope_writes_the_kv_cache(*vk);
}

}  // namespace
}  // namespace tandem::test

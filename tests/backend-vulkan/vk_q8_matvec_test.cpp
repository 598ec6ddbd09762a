// The Vulkan decode matvec over int8 activations (matvec_q8.comp, on where the device has
// integer dot products; lavapipe does): every weight type it takes (Q4_0 / Q8_0 in the file
// layout and repacked, Q4_K, Q5_K, Q6_K) against the double product over the activations as
// the quantiser rounds them, 1-8 tokens, odd row counts, rows per workgroup, q/k/v fused into one
// dispatch, the activations shared by a workgroup's rows or not, an input quantised once for two
// matmuls and again after it changes, and the RMSNorm (alone and after a residual add), gated
// activation and split-K attention before a matmul leaving its q8 activations themselves, an FFN
// after a folded norm, and q/k/v roping and storing their own rows. TANDEM_VK_Q8=0 keeps f32
// activations (exact).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>

#include "../backend-ops/fused_path_checks.h"
#include "vk_test_support.h"

namespace tandem::test {
namespace {

const std::vector<DType> kQ8Types = {DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q5_K,
                                     DType::Q6_K};

// Skips (returns false) on a device whose matvec keeps f32 activations: a Q8_0 product whose
// q8 rounding is far from the f32 one tells the two apart.
bool takes_q8_path(Backend& vk) {
    QuantWeight w(DType::Q8_0, {256, 8, 1}, 77);
    auto x = random_floats(256, 78, -3, 3);
    const auto y = run_matmul(vk, w, x, 1);
    return nmse(y, ref_matmul(w, q8_activations(x), 1)) < nmse(y, ref_matmul(w, x, 1));
}

// Per output, sum |w_i x_i|: the scale of the float rounding a reduction of those terms makes.
std::vector<double> abs_matmul(const QuantWeight& w, std::vector<double> x, int64_t T) {
    QuantWeight a = w;
    for (float& v : a.values) v = std::fabs(v);
    for (double& v : x) v = std::fabs(v);
    return ref_matmul(a, x, T);
}

double max_error_over_terms(const std::vector<float>& out, const std::vector<double>& ref,
                            const std::vector<double>& terms) {
    double worst = 0;
    for (size_t i = 0; i < ref.size(); ++i)
        worst = std::max(worst, std::fabs(out[i] - ref[i]) / std::max(terms[i], 1e-30));
    return worst;
}

#define TANDEM_Q8_OR_SKIP(vk)                                                      \
    if (!takes_q8_path(*vk))                                                       \
    GTEST_SKIP() << "this Vulkan device has no integer dot products (or subgroup " \
                    "shuffles): its decode matvec keeps f32 activations"

TEST(VulkanQ8Matvec, EveryTypeLayoutShapeAndTokenCount) {
    struct Shape {
        int64_t n_in, n_out, T;
    };
    // 96 x 3 and 160 values (Q4_0 / Q8_0 only): the activations end inside a 256-value group
    // of their halves layout (q8_act.glsl).
    // 8192 x 2 tokens: rows of 8192+ inputs take 4 rows and 64 invocations (q8_share_wg).
    const Shape shapes[] = {{256, 1, 1},  {256, 67, 1}, {2304, 37, 2}, {4096, 33, 1}, {512, 5, 3},
                            {1024, 9, 5}, {768, 17, 8}, {14336, 3, 1}, {2048, 9, 4},  {96, 7, 3},
                            {160, 11, 1}, {96, 13, 2},  {8192, 7, 2}};
    // (repack, rows per workgroup, shared activations): the file layout (integrated GPUs,
    // lavapipe) and the repacked one (discrete GPUs; Q6_K from 2048-long rows), 1-4 rows per
    // workgroup, the invocations sharing each item's activations over the rows (one or two
    // tokens; more take the other split) or each row its own; rows "": the backend's choice
    // per type (repacked Q6_K under 8192 inputs: 8 rows, 16 invocations a row, not shared).
    // k64 "0": Q4_K / Q5_K in 32-weight items (matvec_q8.comp K64 off).
    const std::tuple<const char*, const char*, const char*, const char*> splits[] = {
        {"0", "4", "1", ""}, {"1", "4", "1", ""}, {"1", "2", "1", ""}, {"1", "1", "1", ""},
        {"1", "2", "0", ""}, {"0", "4", "0", ""}, {"1", "", "1", ""},  {"1", "", "1", "0"}};
    for (auto [repack, rows, share, k64] : splits) {
        ScopedEnv re("TANDEM_VK_REPACK", repack), ro("TANDEM_VK_Q8_ROWS", rows),
            sh("TANDEM_VK_Q8_SHARE", share), k6("TANDEM_VK_K64", k64);
        TANDEM_VULKAN_OR_SKIP(vk);
        TANDEM_Q8_OR_SKIP(vk);
        for (DType t : kQ8Types)
            for (const Shape& s : shapes) {
                if (s.n_in % dtype_traits(t).block_elems) continue;
                QuantWeight w(t, {s.n_in, s.n_out, 1}, uint32_t(s.n_out * 5 + s.T));
                auto x = random_floats(size_t(s.n_in * s.T), uint32_t(s.n_in + s.T), -2, 2);
                auto r = run_both(*vk, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
                    g.node(Op::MatMul, g.output(out, s.n_out, s.T),
                           {g.weight(b, w), g.input(x.data(), s.n_in, s.T)});
                });
                const std::string what =
                    std::string(dtype_name(t)) + " " + std::to_string(s.n_in) + "x" +
                    std::to_string(s.n_out) + " T=" + std::to_string(s.T) + " repack " + repack +
                    " rows " + rows + " share " + share + " k64 " + (*k64 ? k64 : "auto");
                const std::vector<double> xq = q8_activations(x);
                const std::vector<double> ref = ref_matmul(w, xq, s.T);
                // Every output's error against its sum of |terms| (float rounding over a
                // reduction: ~1e-7 of it; a wrong weight, bit or scale: at least one term, over
                // 1e-5 at 14336 inputs), and the NMSE where there are outputs enough for a mean:
                // one output's relative error grows with its terms' cancellation (Q5_K's
                // 256 x 1: the terms' sum is 1500x the result, NMSE 4.4e-10 from rounding).
                const double e = reported_nmse(what, r.vulkan, ref);
                const double et = max_error_over_terms(r.vulkan, ref, abs_matmul(w, xq, s.T));
                std::printf("  %-44s max error / sum|terms| %.3e\n", what.c_str(), et);
                EXPECT_LT(et, 1e-6) << what;
                if (s.n_out * s.T >= 8) {
                    EXPECT_LT(e, 1e-10) << what;
                }
                // The CPU backend quantises activations too (Q8_K blocks of 256 for the
                // K-quants): within the op suite's bound, where there are enough outputs for a
                // mean (one value's relative error is not one).
                if (s.n_out * s.T >= 8) {
                    EXPECT_LT(nmse(r.vulkan, as_double(r.cpu)), 2e-4) << what << " vs cpu";
                }
            }
    }
}

// q/k/v as one dispatch over q8 activations (fused_path_checks.h).
TEST(VulkanQ8Matvec, MatvecsSharingAnInputFused) {
    TANDEM_VULKAN_OR_SKIP(vk);
    TANDEM_Q8_OR_SKIP(vk);
    expect_q8_matvecs_sharing_an_input(*vk);
}

TEST(VulkanQ8Matvec, InputReusedThenRequantisedAfterItChanges) {
    TANDEM_VULKAN_OR_SKIP(vk);
    TANDEM_Q8_OR_SKIP(vk);
    expect_q8_input_reused_then_requantised(*vk);
}

TEST(VulkanQ8Matvec, SwitchedOffKeepsF32Activations) {
    ScopedEnv off("TANDEM_VK_Q8", "0");
    TANDEM_VULKAN_OR_SKIP(vk);
    expect_f32_activations(*vk, kQ8Types, 1e-9);
}

// The norm (alone, or after a residual add in the same dispatch) quantises its own output for
// the matmul after it; a row too long for the norm's register path is quantised by its own
// dispatch.
TEST(VulkanQ8Matvec, RmsNormQuantisesForTheMatmulAfterIt) {
    TANDEM_VULKAN_OR_SKIP(vk);
    TANDEM_Q8_OR_SKIP(vk);
    expect_rms_norm_quantises_for_the_matmul_after_it(*vk, {{4096, 1, DType::Q4_0, false},
                                                            {4096, 1, DType::Q4_K, true},
                                                            {1536, 2, DType::Q5_K, true},
                                                            {2304, 2, DType::Q6_K, true},
                                                            {1024, 8, DType::Q8_0, false},
                                                            {12288, 1, DType::Q4_K, true}});
}

// A matvec, the residual add and the RMSNorm read by matvecs: for 1-2 tokens the matvec's
// dispatch (RESID, 32 rows per workgroup) leaves the sum and the q8 activations of sum * w and
// the matvecs after it apply the norm's scale (NORM_EPS), both splits (shared, per-row); 3
// tokens and rows not a multiple of 64 (288): the norm's own dispatch. A norm output read by
// another node too (written after all).
TEST(VulkanQ8Matvec, MatvecAddNormFoldedIntoTheMatvecsAfterIt) {
    for (const char* share : {"1", "0"}) {
        ScopedEnv sh("TANDEM_VK_Q8_SHARE", share);
        TANDEM_VULKAN_OR_SKIP(vk);
        TANDEM_Q8_OR_SKIP(vk);
        expect_matvec_add_norm_matvecs(
            *vk,
            {{512, 256, 1, DType::Q4_0, DType::Q4_0, true, false, false},
             {1024, 512, 2, DType::Q4_K, DType::Q6_K, true, true, false},
             {512, 256, 3, DType::Q4_0, DType::Q8_0, true, false, false},
             {256, 768, 1, DType::Q8_0, DType::Q4_K, false, false, true},
             {4096, 4096, 1, DType::Q4_K, DType::Q6_K, true, true, false},
             {1024, 1024, 2, DType::Q5_K, DType::Q5_K, true, false, false},
             {512, 288, 2, DType::Q4_0, DType::Q4_0, true, false, false},
             {512, 288, 1, DType::Q8_0, DType::Q8_0, true, true, true}},
            [](int64_t cols, int64_t T) { return cols % 64 == 0 && T <= 2; });
    }
}

// q/k/v then their rope and KV stores: one matvec_q8 dispatch (ROPE) where the modes, cache
// types and rotary dimension allow, rows per workgroup 1 (raised to whole pairs), 2 and 4, the
// activations shared over the rows or not.
TEST(VulkanQ8Matvec, QkvRopesAndStoresItself) {
    const std::pair<const char*, const char*> splits[] = {
        {"2", "1"}, {"1", "1"}, {"4", "1"}, {"2", "0"}};
    for (auto [rows, share] : splits) {
        ScopedEnv ro("TANDEM_VK_Q8_ROWS", rows), sh("TANDEM_VK_Q8_SHARE", share);
        TANDEM_VULKAN_OR_SKIP(vk);
        TANDEM_Q8_OR_SKIP(vk);
        expect_qkv_rope_and_kv_store(*vk);
    }
}

TEST(VulkanQ8Matvec, GatedActQuantisesForTheMatmulAfterIt) {
    TANDEM_VULKAN_OR_SKIP(vk);
    TANDEM_Q8_OR_SKIP(vk);
    expect_gated_act_quantises_for_the_matmul_after_it(*vk);
}

// The FFN between two folded norms (RESID dispatches: the output projection's left the norm's
// q8 values in the other region, the down projection's writes the next ones there): gate + up
// read them, the gated activation's quantiser writes its own for the down projection; both
// splits (Q4_0 / Q4_K / Q6_K shared, Q8_0 per row), SiLU and GELU, up before gate in the graph,
// an 8B model's width, an odd number of blocks (224), and 3 tokens (no fold).
TEST(VulkanQ8Matvec, FfnAfterAFoldedNorm) {
    TANDEM_VULKAN_OR_SKIP(vk);
    TANDEM_Q8_OR_SKIP(vk);
    expect_ffn_gated_act(*vk, {{256, 512, 1, DType::Q4_0, 0, false},
                               {256, 512, 2, DType::Q8_0, 1, true},
                               {256, 14336, 1, DType::Q4_K, 0, false},
                               {512, 1024, 2, DType::Q6_K, 1, false},
                               {256, 512, 3, DType::Q4_0, 0, false},
                               {256, 224, 1, DType::Q8_0, 0, false}});
}

// Split-K decode attention's combine pass quantises the heads' output for the output projection.
TEST(VulkanQ8Matvec, AttentionQuantisesForTheMatmulAfterIt) {
    TANDEM_VULKAN_OR_SKIP(vk);
    TANDEM_Q8_OR_SKIP(vk);
    expect_attention_quantises_for_the_matmul_after_it(*vk);
}

// The expert FFN over q8 activations (moe_q8.comp; vk_moe.cpp): expect_moe_q8_paths.
TEST(VulkanQ8Matvec, MoeQ8PrefillMatchesDecodeAndElementWise) {
    // Prefill on moe_q8.comp (cooperative matrices: MoeCoopmatPrefillAgainstF16Reference).
    const ScopedEnv int8_prefill("TANDEM_VK_MOE_COOPMAT", "0");
    TANDEM_VULKAN_OR_SKIP(vk);
    TANDEM_Q8_OR_SKIP(vk);
    expect_moe_q8_paths(*vk, [] {
        setenv("TANDEM_VK_MOE_Q8", "0", 1);
        auto off = vulkan_backend();
        unsetenv("TANDEM_VK_MOE_Q8");
        return off;
    });
}

// The expert FFN's prefill on cooperative matrices (matmul_coopmat.comp MOE; vk_moe.cpp):
// expect_moe_f16_prefill against the moe_q8.comp prefill.
TEST(VulkanQ8Matvec, MoeCoopmatPrefillAgainstF16Reference) {
    TANDEM_VULKAN_OR_SKIP(vk);
    TANDEM_Q8_OR_SKIP(vk);
    if (!vk->device().f16_prefill_matmul)
        GTEST_SKIP() << "no cooperative-matrix prefill on this device: " << vk->device().notes;
    std::unique_ptr<Backend> int8;
    {
        const ScopedEnv off("TANDEM_VK_MOE_COOPMAT", "0");
        int8 = vulkan_backend();
    }
    ASSERT_TRUE(int8);
    expect_moe_f16_prefill(*vk, *int8);
}

}  // namespace
}  // namespace tandem::test

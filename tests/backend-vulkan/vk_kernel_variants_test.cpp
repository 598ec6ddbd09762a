// What only the Vulkan backend has (the ops themselves are in tests/backend-ops, which runs
// every op on every backend): the matvec specialisations picked by TANDEM_VK_MATVEC with the
// tiled kernel off, weights imported in place (TANDEM_VK_IMPORT), the measured copy bandwidth
// and the per-op GPU time table of TANDEM_VK_PROFILE=1.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "../backend-ops/op_references.h"
#include "vk_test_support.h"

namespace tandem::test {
namespace {

// Quantised weights against f32 activations: the kernels' float sums differ from the double
// reference by rounding only. The CPU backend quantises activations to q8 for block types.
double cpu_tolerance(DType t) {
    return t == DType::F32 ? 1e-10 : (t == DType::F16 || t == DType::BF16) ? 1e-8 : 2e-4;
}

TEST(VulkanKernelVariants, OtherMatvecSpecialisations) {
    for (const char* mv : {"64,4", "64,1", "32,32"}) {
        ScopedEnv env("TANDEM_VK_MATVEC", mv);
        ScopedEnv no_tiled("TANDEM_VK_TILED", "0");
        ScopedEnv no_q8("TANDEM_VK_Q8", "0");  // the f32 matvec (vk_q8_matvec_test: the q8 one)
        TANDEM_VULKAN_OR_SKIP(vk);
        for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                        DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K})
            for (auto [n_in, n_out, T] :
                 {std::tuple<int64_t, int64_t, int64_t>{2304, 67, 1}, {512, 33, 11}}) {
                if (n_in % dtype_traits(t).block_elems) continue;
                QuantWeight w(t, {n_in, n_out, 1}, uint32_t(n_out * 13 + T));
                auto x = random_floats(size_t(n_in * T), uint32_t(T + 5));
                auto r = run_both(*vk, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
                    g.node(Op::MatMul, g.output(out, n_out, T),
                           {g.weight(b, w), g.input(x.data(), n_in, T)});
                });
                const double e_exact = nmse(r.vulkan, ref_matmul(w, x, T));
                const double e_cpu = nmse(r.vulkan, as_double(r.cpu));
                std::printf("| matvec %s | %s | %lld x %lld | T=%lld | %.2e | %.2e |\n", mv,
                            std::string(dtype_name(t)).c_str(), static_cast<long long>(n_out),
                            static_cast<long long>(n_in), static_cast<long long>(T), e_exact,
                            e_cpu);
                EXPECT_LT(e_exact, 1e-9) << mv << " " << dtype_name(t) << " T=" << T;
                EXPECT_LT(e_cpu, cpu_tolerance(t)) << mv << " " << dtype_name(t) << " T=" << T;
            }
    }
}

TEST(VulkanKernelVariants, CopyBandwidthIsMeasured) {
    TANDEM_VULKAN_OR_SKIP(vk);
    const double bw = vk->copy_bandwidth();
    std::printf("vulkan copy bandwidth: %.1f GB/s on %s\n", bw / 1e9, vk->device().name.c_str());
    // Any real device copies faster than 100 MB/s and slower than 100 TB/s.
    EXPECT_GT(bw, 1e8);
    EXPECT_LT(bw, 1e14);
    EXPECT_EQ(vk->copy_bandwidth(), bw);  // measured once
}

TEST(VulkanKernelVariants, ProfileModePrintsGpuTimePerOp) {
    ScopedEnv env("TANDEM_VK_PROFILE", "1");
    TANDEM_VULKAN_OR_SKIP(vk);
    QuantWeight w(DType::Q4_0, {256, 40, 1}, 1);
    auto x = random_floats(256 * 2, 2);
    OpGraph g;
    std::vector<float> out;
    TensorId mm = g.g.activation("h", 40, 2);
    g.node(Op::MatMul, mm, {g.weight(*vk, w), g.input(x.data(), 256, 2)});
    g.node(Op::Scale, g.output(out, 40, 2), {mm}, {0, 0, 0, 0}, {2.0f, 0});
    testing::internal::CaptureStderr();
    g.run(*vk);
    vk.reset();  // the table is printed when the backend goes
    const std::string err = testing::internal::GetCapturedStderr();
    if (err.find("no timestamps") != std::string::npos)
        GTEST_SKIP() << "this device's compute queue has no timestamps";
    EXPECT_NE(err.find("| mat_mul q4_0 [256 -> 40] T>1 matvec | 1 |"), std::string::npos) << err;
    EXPECT_NE(err.find("| scale | 1 |"), std::string::npos) << err;
    // One recorded step of two tokens: the host's part before its submit, and of that the inputs.
    EXPECT_NE(err.find("| (CPU before the submit per step: recording, prefill) | 1 |"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("| (of which inputs and rope tables: recording, prefill) | 1 |"),
              std::string::npos)
        << err;
    EXPECT_EQ(err.find("decode) |"), std::string::npos) << err;
}

// TANDEM_VK_PIPELINE_STATS=1: each pipeline made is printed with the driver's statistics of its
// code (VK_KHR_pipeline_executable_properties: NVIDIA's register counts and spills, for tuning
// runs); a device without the extension says so once and runs as before.
TEST(VulkanKernelVariants, PipelineStatisticsWhereTheDriverHasThem) {
    ScopedEnv env("TANDEM_VK_PIPELINE_STATS", "1");
    testing::internal::CaptureStderr();
    auto vk = vulkan_backend();
    std::string err;
    if (vk) {
        QuantWeight w(DType::Q4_0, {256, 40, 1}, 1);
        auto x = random_floats(256 * 2, 2);
        EXPECT_LT(nmse(run_matmul(*vk, w, x, 2), ref_matmul(w, x, 2)), 1e-4);
    }
    err = testing::internal::GetCapturedStderr();
    if (!vk) GTEST_SKIP() << "no Vulkan backend";
    const bool none = err.find("has no VK_KHR_pipeline_executable_properties (no statistics)") !=
                      std::string::npos;
    const size_t line = err.find("vulkan pipeline matvec");
    if (none) {
        EXPECT_EQ(line, std::string::npos) << err;
        GTEST_SKIP() << "this driver gives no pipeline statistics (the note printed)";
    }
    // The matmul's pipeline, with a statistic after the executable's name.
    ASSERT_NE(line, std::string::npos) << err;
    const std::string text = err.substr(line, err.find('\n', line) - line);
    EXPECT_NE(text.find(": "), std::string::npos) << text;
    std::printf("  %s\n", text.c_str());
}

// TANDEM_VK_IMPORT=1: weights wrapped in place (VK_EXT_external_memory_host) where the device
// allows it (lavapipe does), at an offset that is not page-aligned; the results must not change.
TEST(VulkanKernelVariants, WeightsImportedInPlace) {
    ScopedEnv env("TANDEM_VK_IMPORT", "1");
    ScopedEnv no_q8("TANDEM_VK_Q8", "0");  // f32 activations: the double product exactly
    TANDEM_VULKAN_OR_SKIP(vk);
    QuantWeight w(DType::Q6_K, {512, 37, 1}, 21);
    auto x = random_floats(512 * 3, 22);
    auto r = run_both(*vk, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
        g.node(Op::MatMul, g.output(out, 37, 3), {g.weight(b, w), g.input(x.data(), 512, 3)});
    });
    EXPECT_LT(nmse(r.vulkan, ref_matmul(w, x, 3)), 1e-9);
    if (vk->weight_bytes() != 0)
        GTEST_SKIP() << "this device copied the weight (no VK_EXT_external_memory_host import)";
}

// TANDEM_VK_IMPORT=auto (the default on integrated GPUs): once the weights are in (allocate_kv),
// the largest imported weight is timed against a device buffer and kept in place where it reads
// about as fast (tandem/backend/weight_placement.h decides; its tests cover the rule). Timings on
// a CPU driver move with the machine's load (CI ran 0.69 with a second probe beside it), so the
// threshold is set below any ratio (TANDEM_PLACEMENT_MIN_SHARE=0.001): the probe must run, print
// both figures and keep the weight in place, and the product must not change.
TEST(VulkanKernelVariants, WeightPlacementProbeKeepsImportsAboveTheThreshold) {
    ScopedEnv env("TANDEM_VK_IMPORT", "auto");
    ScopedEnv share("TANDEM_PLACEMENT_MIN_SHARE", "0.001");
    ScopedEnv no_q8("TANDEM_VK_Q8", "0");  // f32 activations: the double product exactly
    TANDEM_VULKAN_OR_SKIP(vk);
    if (vk->device().type != DeviceType::CpuEmulated)
        GTEST_SKIP() << "not a CPU driver: whether in place reads at device speed is the "
                        "device's to say";
    // [4096 in, 16384 out] Q8_0: 68 MiB, past the probe's 64 MiB minimum.
    const QuantWeight w(DType::Q8_0, {4096, 16384, 1}, 4243);
    const auto x = random_floats(4096, 18);
    testing::internal::CaptureStderr();
    OpGraph g;
    std::vector<float> y;
    g.node(Op::MatMul, g.output(y, 16384, 1), {g.weight(*vk, w), g.input(x.data(), 4096, 1)});
    vk->allocate_kv({});
    g.run(*vk);
    const std::string err = testing::internal::GetCapturedStderr();
    std::printf("%s", err.c_str());
    EXPECT_LT(nmse(y, ref_matmul(w, x, 1)), 1e-9);
    if (vk->weight_bytes() != 0 && err.find("weights in place") == std::string::npos)
        GTEST_SKIP() << "this device copied the weight (no VK_EXT_external_memory_host import)";
    EXPECT_NE(err.find("weights in place read at"), std::string::npos) << err;
    EXPECT_NE(err.find("kept in place"), std::string::npos) << err;
    EXPECT_EQ(vk->weight_bytes(), 0u);  // still the imported pages, no copy
}

// The copy branch, forced by a threshold no in place read meets
// (TANDEM_PLACEMENT_MIN_SHARE=1000000):
// a step recorded over the imported weight, then allocate_kv copies it to device memory and
// releases the import; the next step must read the copy (recorded steps invalidated), with the
// same product, and the weight now holds device memory.
TEST(VulkanKernelVariants, WeightPlacementProbeCopyReplacesImportsBetweenSteps) {
    ScopedEnv env("TANDEM_VK_IMPORT", "auto");
    ScopedEnv share("TANDEM_PLACEMENT_MIN_SHARE", "1000000");
    ScopedEnv no_q8("TANDEM_VK_Q8", "0");
    TANDEM_VULKAN_OR_SKIP(vk);
    if (vk->device().type != DeviceType::CpuEmulated)
        GTEST_SKIP() << "not a CPU driver (the probe reads 64+ MiB per pass)";
    const QuantWeight w(DType::Q8_0, {4096, 16384, 1}, 4244);
    const auto x = random_floats(4096, 19);
    const auto ref = ref_matmul(w, x, 1);
    OpGraph g;
    std::vector<float> y;
    g.node(Op::MatMul, g.output(y, 16384, 1), {g.weight(*vk, w), g.input(x.data(), 4096, 1)});
    g.run(*vk);
    EXPECT_LT(nmse(y, ref), 1e-9);
    if (vk->weight_bytes() != 0)
        GTEST_SKIP() << "this device copied the weight (no VK_EXT_external_memory_host import)";
    testing::internal::CaptureStderr();
    vk->allocate_kv({});
    const std::string err = testing::internal::GetCapturedStderr();
    std::printf("%s", err.c_str());
    EXPECT_NE(err.find("copying them (0.07 GiB)"), std::string::npos) << err;
    EXPECT_GE(vk->weight_bytes(), w.bytes.size());
    std::fill(y.begin(), y.end(), 0.0f);
    g.run(*vk);
    EXPECT_LT(nmse(y, ref), 1e-9);
}

}  // namespace
}  // namespace tandem::test

// The foundation's sanity checks: the core library links and reports itself, the CPU backend is
// always listed, and the Vulkan plugin enumerates Mesa's lavapipe where it is installed.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "fixtures.h"
#include "tandem/backend/registry.h"
#include "tandem/common/dtype.h"
#include "tandem/version.h"

TEST(Sanity, CoreReportsVersion) { EXPECT_STREQ(tandem::version(), "0.1.0"); }

TEST(Sanity, CpuBackendIsListedWithMemory) {
    const auto& backends = tandem::BackendRegistry::instance().backends();
    auto cpu = std::find_if(backends.begin(), backends.end(), [](const auto& b) { return b.name == "cpu"; });
    ASSERT_NE(cpu, backends.end());
    ASSERT_TRUE(cpu->available);
    ASSERT_EQ(cpu->devices.size(), 1u);
    EXPECT_GT(cpu->devices[0].memory_total, 256ull << 20);
    EXPECT_LE(cpu->devices[0].memory_free, cpu->devices[0].memory_total);
}

TEST(Sanity, DTypeTableMatchesGgmlBlockSizes) {
    // Independent values: ggml-common.h's static_asserts (sizeof(block_q4_K) == 144 etc.).
    EXPECT_EQ(tandem::row_bytes(tandem::DType::Q4_K, 256), 144u);
    EXPECT_EQ(tandem::row_bytes(tandem::DType::Q6_K, 512), 420u);
    EXPECT_EQ(tandem::row_bytes(tandem::DType::Q8_0, 64), 68u);
    EXPECT_EQ(tandem::row_bytes(tandem::DType::Q5_0, 32), 22u);
    EXPECT_EQ(tandem::dtype_from_name("Q4_K"), tandem::DType::Q4_K);
    EXPECT_FALSE(tandem::dtype_traits(4u).has_value());  // removed Q4_2
}

TEST(Sanity, VulkanEnumeratesLavapipeWhenInstalled) {
    bool lavapipe_installed = std::filesystem::exists("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json");
    bool plugin_built = std::filesystem::exists(tandem::test::bin_dir() / "libtandem-backend-vulkan.so");
    if (!lavapipe_installed || !plugin_built)
        GTEST_SKIP() << "lavapipe (mesa-vulkan-drivers) or the Vulkan plugin is not installed";
    const auto& backends = tandem::BackendRegistry::instance().backends();
    auto vk = std::find_if(backends.begin(), backends.end(), [](const auto& b) { return b.name == "vulkan"; });
    ASSERT_NE(vk, backends.end());
    ASSERT_TRUE(vk->available) << vk->reason;
    bool found = std::any_of(vk->devices.begin(), vk->devices.end(), [](const tandem::DeviceInfo& d) {
        return d.name.find("llvmpipe") != std::string::npos;
    });
    EXPECT_TRUE(found) << "lavapipe's llvmpipe device not listed";
}

TEST(Sanity, HipBackendIsSkippedWithAReasonWithoutAGpu) {
    const auto& backends = tandem::BackendRegistry::instance().backends();
    auto hip = std::find_if(backends.begin(), backends.end(), [](const auto& b) { return b.name == "hip"; });
    ASSERT_NE(hip, backends.end());
    if (hip->available) GTEST_SKIP() << "a HIP device is present";
    EXPECT_FALSE(hip->reason.empty());
}

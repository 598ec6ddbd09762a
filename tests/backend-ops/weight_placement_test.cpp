// Weights in place or copied on unified memory (tandem/backend/weight_placement.h, used by the HIP
// and Vulkan backends), from the read bandwidths a backend measures at load. The figures: a Strix
// Halo's LPDDR5X-8000 (256 GB/s peak) read cached, the same pages read uncached, and the llama.cpp
// report that moved a Ryzen 7940HS from fine- to coarse-grained memory (decode 6.05 -> 9.26 tok/s,
// so fine-grained ran at 0.65 of coarse). Pure host code: runs in CI without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tandem/backend/weight_placement.h"

namespace tandem {
namespace {

constexpr uint64_t GiB = 1ull << 30;

PlacementProbe strix_halo(double in_place_gbps, uint64_t weights, uint64_t free) {
    PlacementProbe p;
    p.in_place_bytes_per_s = in_place_gbps * 1e9;
    p.device_bytes_per_s = 215e9;
    p.weight_bytes = weights;
    p.device_free = free;
    return p;
}

TEST(WeightPlacement, InPlaceAtDeviceSpeedStays) {
    const PlacementChoice c = choose_weight_placement(strix_halo(212, 40 * GiB, 100 * GiB));
    EXPECT_FALSE(c.copy);
    EXPECT_NE(c.why.find("212.0 GB/s"), std::string::npos) << c.why;
    EXPECT_NE(c.why.find("215.0 GB/s"), std::string::npos) << c.why;
    EXPECT_NE(c.why.find("kept in place"), std::string::npos) << c.why;
}

TEST(WeightPlacement, UncachedInPlaceIsCopiedWhereItFits) {
    const PlacementChoice c = choose_weight_placement(strix_halo(0.65 * 215, 40 * GiB, 100 * GiB));
    EXPECT_TRUE(c.copy);
    EXPECT_NE(c.why.find("(0.65)"), std::string::npos) << c.why;
    EXPECT_NE(c.why.find("copying them (40.00 GiB)"), std::string::npos) << c.why;
}

TEST(WeightPlacement, CopyThatDoesNotFitKeepsInPlaceAndSaysWhy) {
    // 60 GiB of weights, 60.5 GiB free: a copy would leave no room for the KV cache.
    const PlacementChoice c =
        choose_weight_placement(strix_halo(100, 60 * GiB, 60 * GiB + GiB / 2));
    EXPECT_FALSE(c.copy);
    EXPECT_NE(c.why.find("does not fit"), std::string::npos) << c.why;
    // The same weights with the headroom free are copied.
    EXPECT_TRUE(choose_weight_placement(strix_halo(100, 60 * GiB, 61 * GiB)).copy);
}

TEST(WeightPlacement, ThresholdAndUnmeasuredProbe) {
    EXPECT_FALSE(choose_weight_placement(strix_halo(0.86 * 215, GiB, 100 * GiB)).copy);
    EXPECT_TRUE(choose_weight_placement(strix_halo(0.84 * 215, GiB, 100 * GiB)).copy);
    // A probe that could not run (no device memory for its buffer, a failed launch) changes
    // nothing: in place, as before there was a probe.
    PlacementProbe none = strix_halo(0, GiB, 100 * GiB);
    EXPECT_FALSE(choose_weight_placement(none).copy);
    none = strix_halo(100, GiB, 100 * GiB);
    none.device_bytes_per_s = 0;
    const PlacementChoice c = choose_weight_placement(none);
    EXPECT_FALSE(c.copy);
    EXPECT_NE(c.why.find("not measured"), std::string::npos) << c.why;
}

// TANDEM_PLACEMENT_MIN_SHARE moves the threshold (the tests' way to reach the copy branch on
// drivers where both read alike); unset, empty or not a positive number: the default.
TEST(WeightPlacement, ThresholdFromTheEnvironment) {
    ::unsetenv("TANDEM_PLACEMENT_MIN_SHARE");
    EXPECT_EQ(in_place_min_share(), kInPlaceMinShare);
    ::setenv("TANDEM_PLACEMENT_MIN_SHARE", "10", 1);
    EXPECT_EQ(in_place_min_share(), 10.0);
    EXPECT_TRUE(
        choose_weight_placement(strix_halo(215, GiB, 100 * GiB), in_place_min_share()).copy);
    ::setenv("TANDEM_PLACEMENT_MIN_SHARE", "-1", 1);
    EXPECT_EQ(in_place_min_share(), kInPlaceMinShare);
    ::setenv("TANDEM_PLACEMENT_MIN_SHARE", "fast", 1);
    EXPECT_EQ(in_place_min_share(), kInPlaceMinShare);
    ::unsetenv("TANDEM_PLACEMENT_MIN_SHARE");
}

}  // namespace
}  // namespace tandem

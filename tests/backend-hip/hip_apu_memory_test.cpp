// An APU's HIP memory budget (backend-hip/src/hip_apu_memory.h) on figures users of Strix Halo
// (Ryzen AI MAX+ 395, 128 GB) reported from their machines: ROCm's hipMemGetInfo against the
// amdgpu driver's sysfs numbers. Pure host code: runs in CI without a GPU.
#include <gtest/gtest.h>

#include "../../backend-hip/src/hip_apu_memory.h"

namespace tandem::hip {
namespace {

constexpr uint64_t MiB = 1ull << 20, GiB = 1ull << 30;

// A 16 GiB carve-out and 96 GiB of GTT where the runtime reported the carve-out alone
// (hipMemGetInfo total 15.49 GiB): weights in GTT must not be refused for it.
TEST(HipApuMemory, RuntimeSeeingOnlyTheCarveOutCountsGtt) {
    ApuMemoryFacts f;
    f.runtime_total = 16636528640ull;  // 15.49 GiB
    f.runtime_free = 15 * GiB;
    f.vram_total = 16636528640ull;
    f.vram_used = 300 * MiB;
    f.gtt_total = 103079215104ull;  // 96 GiB
    f.gtt_used = 100 * MiB;
    f.host_available = 100 * GiB;
    const ApuMemory m = apu_memory(f);
    EXPECT_EQ(m.total, f.vram_total + f.gtt_total);
    EXPECT_EQ(m.free, (f.vram_total - f.vram_used) + (f.gtt_total - f.gtt_used));
    EXPECT_GT(m.free, 90 * GiB);  // a ~90 GB model is no longer refused by the budget
}

// A 512 MiB carve-out, GTT raised to 128 GiB (amdgpu.gttsize=131072), the runtime reporting a
// total of 62.47 GiB and 120 GiB free: the host's available memory bounds what GTT can map.
TEST(HipApuMemory, GttLimitAboveHostMemoryIsBoundedByWhatTheHostHas) {
    ApuMemoryFacts f;
    f.runtime_total = uint64_t(62.47 * double(GiB));
    f.runtime_free = 120 * GiB;
    f.vram_total = 536870912ull;
    f.vram_used = 0;
    f.gtt_total = 137438953472ull;  // 128 GiB
    f.gtt_used = 0;
    f.host_available = 118 * GiB;  // of 124.92 GiB
    const ApuMemory m = apu_memory(f);
    EXPECT_EQ(m.total, f.vram_total + f.gtt_total);
    // Not the runtime's 120 GiB (above its own total): the carve-out and what the host has.
    EXPECT_EQ(m.free, f.vram_total + f.host_available);
}

// Without the driver's numbers (not amdgpu, no sysfs): the runtime's figures as they are.
TEST(HipApuMemory, NoDriverNumbersKeepsTheRuntimeFigures) {
    ApuMemoryFacts f;
    f.runtime_total = 64 * GiB;
    f.runtime_free = 60 * GiB;
    f.host_available = 100 * GiB;
    const ApuMemory m = apu_memory(f);
    EXPECT_EQ(m.total, 64 * GiB);
    EXPECT_EQ(m.free, 60 * GiB);
}

// GTT nearly full: only the carve-out's free part and GTT's remainder count, whatever the host
// has.
TEST(HipApuMemory, UsedGttIsNotCountedTwice) {
    ApuMemoryFacts f;
    f.runtime_total = 512 * MiB;
    f.runtime_free = 256 * MiB;
    f.vram_total = 512 * MiB;
    f.vram_used = 256 * MiB;
    f.gtt_total = 96 * GiB;
    f.gtt_used = 95 * GiB;
    f.host_available = 20 * GiB;
    EXPECT_EQ(apu_memory(f).free, 256 * MiB + 1 * GiB);
}

}  // namespace
}  // namespace tandem::hip

// The page ranges the HIP backend registers on unified-memory devices (APUs): only the pages of
// the weights in use, merged where they touch, never a bounding box. Pure host code: runs in CI
// without a GPU. Checked against a brute-force page bitmap as the independent reference.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <stdexcept>

#include "../../backend-hip/src/hip_host_ranges.h"

namespace tandem::hip {
namespace {

constexpr uintptr_t kPage = 4096;

TEST(HipHostRanges, WeightsSharingAPageBecomeOneRange) {
    const auto r = page_ranges({{0x10010, 0x10100}, {0x10200, 0x10f00}}, kPage);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0], (HostRange{0x10000, 0x11000}));
}

TEST(HipHostRanges, TouchingPagesMergeAndGapsStayOut) {
    // 0x1000.. and 0x2000.. touch; 0x9000.. is five pages further: no bounding box over the gap.
    const auto r = page_ranges(
        {{0x9010, 0x9020}, {0x1800, 0x2000}, {0x2000, 0x2400}, {0x2400, 0x2400}}, kPage);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0], (HostRange{0x1000, 0x3000}));
    EXPECT_EQ(r[1], (HostRange{0x9000, 0xa000}));
    EXPECT_EQ(total_bytes(r), 3 * kPage);
}

TEST(HipHostRanges, PageAlignedEndsAreNotWidened) {
    const auto r = page_ranges({{0x4000, 0x6000}}, kPage);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0], (HostRange{0x4000, 0x6000}));
}

TEST(HipHostRanges, OneShardOfAFileRegistersOnlyItsTensors) {
    // A file of 64 tensors of 1 MiB + 100 bytes each, back to back; this rank uses every other one.
    std::vector<HostRange> used;
    const uintptr_t base = 0x7f0000000000, size = (1u << 20) + 100;
    for (int i = 0; i < 64; i += 2) used.push_back({base + i * size, base + (i + 1) * size});
    const auto r = page_ranges(used, kPage);
    EXPECT_EQ(r.size(), 32u);
    // At most one extra page per tensor at each end, far below the 64-tensor bounding box.
    EXPECT_LE(total_bytes(r), 32 * (size + 2 * kPage));
    EXPECT_LT(total_bytes(r), (64 * size) * 6 / 10);
}

TEST(HipHostRanges, MatchesABruteForcePageBitmap) {
    std::mt19937_64 rng(5);
    for (int round = 0; round < 50; ++round) {
        std::vector<HostRange> used;
        std::set<uintptr_t> pages;  // the reference: every page any used byte lies in
        const int n = 1 + int(rng() % 40);
        for (int i = 0; i < n; ++i) {
            const uintptr_t b = 0x100000 + rng() % (64 * kPage);
            const uintptr_t e = b + rng() % (3 * kPage);
            used.push_back({b, e});
            for (uintptr_t p = b; p < e; ++p) pages.insert(p / kPage);
        }
        const auto r = page_ranges(used, kPage);
        std::set<uintptr_t> got;
        for (size_t i = 0; i < r.size(); ++i) {
            EXPECT_EQ(r[i].begin % kPage, 0u);
            EXPECT_EQ(r[i].end % kPage, 0u);
            EXPECT_LT(r[i].begin, r[i].end);
            if (i) {
                EXPECT_GT(r[i].begin, r[i - 1].end) << "touching ranges must be merged";
            }
            for (uintptr_t p = r[i].begin; p < r[i].end; p += kPage) got.insert(p / kPage);
        }
        EXPECT_EQ(got, pages) << "round " << round;
        // Every used byte is found in its range.
        for (const HostRange& u : used)
            if (u.end > u.begin) {
                const int64_t k = range_holding(r, u.begin);
                ASSERT_GE(k, 0);
                EXPECT_LE(u.end, r[size_t(k)].end);
            }
    }
}

TEST(HipHostRanges, LookupOutsideEveryRangeIsMinusOne) {
    const auto r = page_ranges({{0x3000, 0x3001}, {0x8000, 0x8001}}, kPage);
    EXPECT_EQ(range_holding(r, 0x2fff), -1);
    EXPECT_EQ(range_holding(r, 0x3000), 0);
    EXPECT_EQ(range_holding(r, 0x3fff), 0);
    EXPECT_EQ(range_holding(r, 0x4000), -1);
    EXPECT_EQ(range_holding(r, 0x8abc), 1);
    EXPECT_EQ(range_holding(r, 0x9000), -1);
    EXPECT_EQ(range_holding({}, 0x9000), -1);
}

TEST(HipHostRanges, BadInputIsAnError) {
    EXPECT_THROW(page_ranges({{0x10, 0x20}}, 3000), std::invalid_argument);
    EXPECT_THROW(page_ranges({{0x10, 0x20}}, 0), std::invalid_argument);
    EXPECT_THROW(page_ranges({{0x20, 0x10}}, kPage), std::invalid_argument);
    EXPECT_TRUE(page_ranges({}, kPage).empty());
}

}  // namespace
}  // namespace tandem::hip

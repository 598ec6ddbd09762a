// Ring all-reduce (reduce-scatter + all-gather) over a real loopback TCP mesh, 2-4 ranks: exact
// sums of integer-valued inputs (every partial sum <= 120, exact even as bf16 on the wire),
// bit-identical results on every rank for arbitrary floats equal to the documented summation order,
// the size-based choice, and a stalled rank.
#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <random>

#include "mesh_fixture.h"

namespace tandem::test {
namespace {

net::CollectiveOptions ring_options(net::WireType wire = net::WireType::F32) {
    net::CollectiveOptions o;
    o.all_reduce = net::AllReduceAlgo::Ring;
    o.wire = wire;
    return o;
}

TEST(RingCollective, ExactSumsForTwoToFourRanks) {
    for (int ranks : {2, 3, 4})
        for (auto wire : {net::WireType::F32, net::WireType::BF16})
            // 1 and 3 elements leave some ranks an empty segment.
            for (size_t n : {size_t(1), size_t(3), size_t(1001), size_t(1) << 18}) {
                auto errors = run_group(
                    ranks,
                    [&](int r, net::TransportCollective& c) {
                        std::vector<float> v(n);
                        for (size_t i = 0; i < n; ++i) v[i] = float((r + 1) * int(i % 13));
                        c.all_reduce_sum(v.data(), n);
                        const float k = float(ranks * (ranks + 1) / 2);
                        for (size_t i = 0; i < n; ++i)
                            ASSERT_EQ(v[i], k * float(i % 13)) << "rank " << r << " i " << i;
                    },
                    ring_options(wire));
                for (int r = 0; r < ranks; ++r)
                    EXPECT_EQ(errors[r], "") << ranks << " ranks, n " << n << ", rank " << r;
            }
}

// Rank r's input: seeded random floats of mixed magnitude, so the summation order shows in the
// last bits.
std::vector<float> noisy_input(int r, size_t n) {
    std::mt19937 rng(1000u + uint32_t(r));
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = u(rng) * (i % 3 == 0 ? 1000.f : 0.001f);
    return v;
}

TEST(RingCollective, EveryRankGetsTheSameBitsInTheDocumentedOrder) {
    constexpr size_t n = 10007;
    for (int ranks : {2, 3, 4}) {
        std::vector<std::vector<float>> out(static_cast<size_t>(ranks));
        auto errors = run_group(
            ranks,
            [&](int r, net::TransportCollective& c) {
                out[r] = noisy_input(r, n);
                c.all_reduce_sum(out[r].data(), n);
            },
            ring_options());
        for (auto& e : errors) ASSERT_EQ(e, "");
        // Segment k = [n k / R, n (k+1) / R) summed as ((x_k + x_k+1) + ...) + x_k-1.
        std::vector<std::vector<float>> x;
        for (int r = 0; r < ranks; ++r) x.push_back(noisy_input(r, n));
        size_t differs_from_rank_order = 0;
        for (int k = 0; k < ranks; ++k)
            for (size_t i = n * k / ranks; i < n * (k + 1) / ranks; ++i) {
                float s = x[k][i];
                for (int j = 1; j < ranks; ++j) s = s + x[(k + j) % ranks][i];
                float direct = x[0][i];
                for (int j = 1; j < ranks; ++j) direct += x[j][i];
                differs_from_rank_order +=
                    std::bit_cast<uint32_t>(s) != std::bit_cast<uint32_t>(direct);
                for (int r = 0; r < ranks; ++r)
                    ASSERT_EQ(std::bit_cast<uint32_t>(out[r][i]), std::bit_cast<uint32_t>(s))
                        << ranks << " ranks, rank " << r << " element " << i;
            }
        if (ranks == 2)
            EXPECT_EQ(differs_from_rank_order, 0u);  // a + b == b + a
        else
            EXPECT_GT(differs_from_rank_order, 0u);  // the inputs do show the order
    }
}

TEST(RingCollective, AutoUsesTheRingOnlyForLargeMessagesOnThreeOrMoreRanks) {
    net::CollectiveOptions o;  // Auto, default ring_min_bytes (128 KiB)
    for (int ranks : {2, 3, 4}) {
        std::vector<uint64_t> small(4), large(4);
        auto errors = run_group(
            ranks,
            [&](int r, net::TransportCollective& c) {
                std::vector<float> v(65532, 1.0f);  // ~256 KiB, divisible by 3 and 4
                c.all_reduce_sum(v.data(), 1024);   // 4 KiB: direct
                small[r] = c.bytes_sent();
                c.all_reduce_sum(v.data(), v.size());
                large[r] = c.bytes_sent() - small[r];
                EXPECT_EQ(v.back(), float(ranks));  // v[0..1024) was summed twice
            },
            o);
        for (auto& e : errors) ASSERT_EQ(e, "");
        const uint64_t R = uint64_t(ranks), bytes = 65532 * 4;
        EXPECT_EQ(small[0], (R - 1) * 4096);  // direct: the whole vector to every peer
        if (ranks == 2)
            EXPECT_EQ(large[0], bytes);  // 2 ranks stay direct: a ring saves nothing
        else
            EXPECT_EQ(large[0], 2 * (R - 1) * bytes / R);  // ring: 2 (R-1) / R of it
    }
}

TEST(RingCollective, StalledRankFailsTheRingStepWithinTwoSeconds) {
    std::string rank0_error;
    double seconds = 0;
    run_group(
        3,
        [&](int r, net::TransportCollective& c) {
            std::vector<float> v(4096, 1.0f);
            c.all_reduce_sum(v.data(), v.size());
            if (r == 2) {  // stays connected, never answers again
                std::this_thread::sleep_for(std::chrono::seconds(3));
                return;
            }
            const auto t0 = std::chrono::steady_clock::now();
            try {
                c.all_reduce_sum(v.data(), v.size());
            } catch (const Error& e) {
                if (r == 0) rank0_error = e.what();
            }
            if (r == 0)
                seconds =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        },
        ring_options());
    EXPECT_NE(rank0_error.find("rank 2"), std::string::npos) << rank0_error;
    EXPECT_NE(rank0_error.find("ring"), std::string::npos) << rank0_error;
    EXPECT_LT(seconds, 2.5);
}

}  // namespace
}  // namespace tandem::test

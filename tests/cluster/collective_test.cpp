// Collectives over a real loopback TCP mesh: every rank gets the exact sum / concatenation of
// known integer-valued inputs (exactly representable, so the expected values are exact).
#include <gtest/gtest.h>

#include <chrono>

#include "mesh_fixture.h"
#include "tandem/net/channel.h"

namespace tandem::test {
namespace {

// Rank r contributes (r + 1) * (i % 41) at element i: the sum over n ranks is
// n(n+1)/2 * (i % 41), exact in fp32 and bf16 (each contribution <= 120 < 2^8).
void check_all_reduce(int n_ranks, size_t n, net::WireType wire) {
    net::CollectiveOptions o;
    o.wire = wire;
    auto errors = run_group(
        n_ranks,
        [&](int r, net::TransportCollective& c) {
            std::vector<float> v(n);
            for (size_t i = 0; i < n; ++i) v[i] = float((r + 1) * int(i % 41));
            for (int rep = 0; rep < 3; ++rep) {  // buffers reused across steps
                std::vector<float> w = v;
                c.all_reduce_sum(w.data(), n);
                const float k = float(n_ranks * (n_ranks + 1) / 2);
                for (size_t i = 0; i < n; ++i)
                    ASSERT_EQ(w[i], k * float(i % 41)) << "rank " << r << " element " << i;
            }
        },
        o);
    for (int r = 0; r < n_ranks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

TEST(Collective, AllReduceTwoAndThreeRanksFp32) {
    for (int n : {2, 3})
        for (size_t len : {size_t(1), size_t(64), size_t(16384), size_t(1) << 20})
            check_all_reduce(n, len, net::WireType::F32);
}

TEST(Collective, AllReduceBf16Wire) {
    check_all_reduce(3, 4096, net::WireType::BF16);
}

TEST(Collective, AllGatherUnequalSizesInRankOrder) {
    auto errors = run_group(3, [](int r, net::TransportCollective& c) {
        std::vector<float> local(static_cast<size_t>(10 * (r + 1)), float(r));
        std::vector<float> all;
        std::vector<size_t> sizes;
        c.all_gather(local.data(), local.size(), all, sizes);
        ASSERT_EQ(sizes, (std::vector<size_t>{10, 20, 30}));
        ASSERT_EQ(all.size(), 60u);
        for (size_t i = 0; i < 60; ++i) EXPECT_EQ(all[i], i < 10 ? 0.f : i < 30 ? 1.f : 2.f);
    });
    for (auto& e : errors) EXPECT_EQ(e, "");
}

TEST(Collective, BroadcastFromEveryRoot) {
    auto errors = run_group(3, [](int r, net::TransportCollective& c) {
        for (int root = 0; root < 3; ++root) {
            std::vector<uint8_t> d;
            if (r == root) d = {uint8_t(root), 7, 9};
            c.broadcast(d, root);
            EXPECT_EQ(d, (std::vector<uint8_t>{uint8_t(root), 7, 9}));
        }
    });
    for (auto& e : errors) EXPECT_EQ(e, "");
}

TEST(Collective, StoppedPeerFailsTheStepWithinTwoSecondsNamingIt) {
    using namespace std::chrono;
    using seconds_t = std::chrono::seconds;
    std::string rank0_error;
    double seconds = 0;
    auto errors = run_group(2, [&](int r, net::TransportCollective& c) {
        std::vector<float> v(256, 1.0f);
        c.all_reduce_sum(v.data(), v.size());
        if (r == 1) {  // rank 1 stalls: stays connected but never answers again
            std::this_thread::sleep_for(seconds_t(3));
            return;
        }
        const auto t0 = steady_clock::now();
        try {
            c.all_reduce_sum(v.data(), v.size());
        } catch (const Error& e) {
            rank0_error = e.what();
        }
        seconds = duration<double>(steady_clock::now() - t0).count();
    });
    EXPECT_NE(rank0_error.find("rank 1"), std::string::npos) << rank0_error;
    EXPECT_NE(rank0_error.find("no answer within 2000 ms"), std::string::npos) << rank0_error;
    EXPECT_LT(seconds, 2.5);
}

TEST(Collective, ClosedPeerIsReportedAsStopped) {
    std::string rank0_error;
    run_group(2, [&](int r, net::TransportCollective& c) {
        if (r == 1) {
            c.close();
            return;
        }
        std::vector<float> v(16, 1.0f);
        try {
            c.all_reduce_sum(v.data(), v.size());
        } catch (const Error& e) {
            rank0_error = e.what();
        }
    });
    EXPECT_NE(rank0_error.find("rank 1"), std::string::npos) << rank0_error;
}

TEST(Collective, WrongSecretIsRefusedWithAClearError) {
    net::Listener l0(0, "127.0.0.1"), l1(0, "127.0.0.1");
    std::vector<net::HostPort> addrs = {{"127.0.0.1", l0.port()}, {"127.0.0.1", l1.port()}};
    std::string err0, err1;
    std::thread t([&] {
        net::MeshOptions mo;
        mo.secret = "right";
        mo.timeout = net::Millis(3000);
        try {
            net::connect_mesh(0, addrs, l0, mo);
        } catch (const Error& e) {
            err0 = e.what();
        }
    });
    net::MeshOptions mo;
    mo.secret = "wrong";
    mo.timeout = net::Millis(3000);
    try {
        net::connect_mesh(1, addrs, l1, mo);
    } catch (const Error& e) {
        err1 = e.what();
    }
    t.join();
    EXPECT_NE(err0.find("wrong group secret"), std::string::npos) << err0;
    EXPECT_NE(err1, "");
}

TEST(Transport, ChannelAdapterAndDelayWrapperCarryMessages) {
    using namespace std::chrono;
    auto [a, b] = net::tcp_loopback_pair();
    auto slow = net::make_delay_transport(std::move(a), microseconds(2000));
    std::vector<uint8_t> msg = {1, 2, 3}, got;
    const auto t0 = steady_clock::now();
    slow->send(msg, net::Millis(1000));
    b->recv(got, net::Millis(1000));
    EXPECT_GE(duration<double>(steady_clock::now() - t0).count(), 0.002);
    EXPECT_EQ(got, msg);
    b->send({}, net::Millis(1000));  // empty messages are messages too
    slow->recv(got, net::Millis(1000));
    EXPECT_TRUE(got.empty());
    EXPECT_NE(slow->describe().find("simulated"), std::string::npos);

    // A PlainChannel pair through the adapter: the path SecureChannel takes once pairing is used.
    auto [client, server] = net::socket_loopback_pair();
    auto ta = net::make_channel_transport(std::make_unique<net::PlainChannel>(std::move(client)));
    auto tb = net::make_channel_transport(std::make_unique<net::PlainChannel>(std::move(server)));
    ta->send(msg, net::Millis(1000));
    tb->recv(got, net::Millis(1000));
    EXPECT_EQ(got, msg);
    EXPECT_THROW(tb->recv(got, net::Millis(50)), net::TimeoutError);
}

}  // namespace
}  // namespace tandem::test

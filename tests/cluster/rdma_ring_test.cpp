// The RDMA ring protocol without hardware: ring transports over in-memory links that land writes
// in the peer's ring the way a NIC would (and fault where a NIC would: a write with no receive
// posted, outside the ring, past the send queue). Messages are checked byte for byte against a
// pattern, credits against the ring's exact capacity.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

#include "tandem/net/collective_group.h"
#include "tandem/net/rdma_ring.h"

namespace tandem::test {
namespace {

using namespace std::chrono_literals;
using net::ImmKind;

struct Pair {
    std::unique_ptr<net::Transport> a, b;
    std::shared_ptr<net::MemoryLinkStats> stats = std::make_shared<net::MemoryLinkStats>();
};

Pair memory_pair(const net::MemoryLinkOptions& o) {
    Pair p;
    auto [la, lb] = net::make_memory_link_pair(o, p.stats);
    p.a = net::make_ring_transport(std::move(la));
    p.b = net::make_ring_transport(std::move(lb));
    return p;
}

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t((seed * 131 + i * 7 + (i >> 8)) & 0xff);
    return v;
}

TEST(RdmaRing, ImmediateDataLayout) {
    EXPECT_EQ(net::encode_imm(ImmKind::Data, 5), 0x00000005u);
    EXPECT_EQ(net::encode_imm(ImmKind::DataEnd, 5), 0x40000005u);
    EXPECT_EQ(net::encode_imm(ImmKind::Credit, 7), 0x80000007u);
    EXPECT_EQ(net::encode_imm(ImmKind::Close, 0), 0xC0000000u);
    EXPECT_EQ(net::imm_kind(0x7fffffffu), ImmKind::DataEnd);
    EXPECT_EQ(net::imm_value(0x7fffffffu), (1u << 30) - 1);
    EXPECT_EQ(net::imm_kind(0x80000010u), ImmKind::Credit);
    EXPECT_EQ(net::imm_value(0x80000010u), 16u);
}

TEST(RdmaRing, GeometryRoundsToGranulesAndRefusesWhatImmCannotCarry) {
    const auto g = net::make_ring_geometry(1000, 64);
    EXPECT_EQ(g.granules, 15u);  // 1000 / 64, rounded down
    EXPECT_EQ(g.ring_bytes(), 960u);
    EXPECT_EQ(g.granules_for(0), 1u);  // an empty chunk still takes a granule
    EXPECT_EQ(g.granules_for(64), 1u);
    EXPECT_EQ(g.granules_for(65), 2u);
    EXPECT_EQ(g.receive_depth(), 15u + net::kReceiveSlack);
    EXPECT_EQ(g.credit_threshold(), 3u);
    EXPECT_THROW(net::make_ring_geometry(1000, 48), Error);             // not a power of two
    EXPECT_THROW(net::make_ring_geometry(size_t(1) << 30, 64), Error);  // imm holds < 1 GiB
    EXPECT_THROW(net::make_ring_geometry(100, 64), Error);              // fewer than 2 granules
}

// Sizes around every boundary (granule, inline limit, ring size, quarter-ring chunks), then
// random ones: the stream wraps the 1 KiB ring hundreds of times.
void send_and_check_stream(const net::MemoryLinkOptions& o) {
    Pair p = memory_pair(o);
    const size_t ring = o.geometry.ring_bytes();
    std::vector<size_t> sizes = {
        0, 1, 63, 64, 65, 200, ring - 1, ring, ring + 1, 5000, 0, 3, size_t(256) << 10};
    std::mt19937 rng(7);
    for (int i = 0; i < 400; ++i) sizes.push_back(rng() % 3000);
    std::thread sender([&] {
        for (size_t m = 0; m < sizes.size(); ++m)
            p.a->send(pattern(sizes[m], uint32_t(m)), net::Millis(5000));
    });
    std::vector<uint8_t> got;
    for (size_t m = 0; m < sizes.size(); ++m) {
        p.b->recv(got, net::Millis(5000));
        ASSERT_EQ(got, pattern(sizes[m], uint32_t(m))) << "message " << m << " of " << sizes[m];
    }
    sender.join();
    EXPECT_GT(p.stats->inline_writes.load(), 0u);
    EXPECT_GT(p.stats->mirror_writes.load(), 0u);
    EXPECT_GT(p.stats->credit_writes.load(), 0u);
    EXPECT_EQ(p.stats->faults.load(), 0u);
}

TEST(RdmaRing, EverySizeArrivesIntactAcrossWrapAround) {
    net::MemoryLinkOptions o;
    o.geometry = {64, 16};  // 1 KiB ring, credits every 4 granules
    send_and_check_stream(o);
}

TEST(RdmaRing, DelayedDeliveryCatchesEarlyReuseOfTheMirror) {
    net::MemoryLinkOptions o;
    o.geometry = {64, 16};
    o.deliver_delay = 20us;  // writes land later and read the mirror only then
    send_and_check_stream(o);
}

TEST(RdmaRing, BothDirectionsAtOnceFromFourThreads) {
    net::MemoryLinkOptions o;
    o.geometry = {64, 32};
    o.deliver_delay = 5us;
    Pair p = memory_pair(o);
    constexpr int kMessages = 300;
    auto sender = [](net::Transport& t, uint32_t base) {
        for (int m = 0; m < kMessages; ++m)
            t.send(pattern(size_t(m * 37 % 2500), base + uint32_t(m)), net::Millis(5000));
    };
    std::vector<std::string> errors(2);
    auto receiver = [&](net::Transport& t, uint32_t base, std::string& err) {
        std::vector<uint8_t> got;
        for (int m = 0; m < kMessages; ++m) {
            t.recv(got, net::Millis(5000));
            if (got != pattern(size_t(m * 37 % 2500), base + uint32_t(m)) && err.empty())
                err = "message " + std::to_string(m) + " corrupt";
        }
    };
    std::thread t1(sender, std::ref(*p.a), 1000), t2(sender, std::ref(*p.b), 2000);
    std::thread t3(receiver, std::ref(*p.b), 1000, std::ref(errors[0]));
    std::thread t4(receiver, std::ref(*p.a), 2000, std::ref(errors[1]));
    for (auto* t : {&t1, &t2, &t3, &t4}) t->join();
    EXPECT_EQ(errors[0], "");
    EXPECT_EQ(errors[1], "");
    EXPECT_EQ(p.stats->faults.load(), 0u);
}

TEST(RdmaRing, CreditsLetExactlyOneRingBeInFlight) {
    net::MemoryLinkOptions o;
    o.geometry = {64, 8};  // 8 granules; credit handed back every 2
    Pair p = memory_pair(o);
    const std::vector<uint8_t> one = {42};
    for (int i = 0; i < 8; ++i) p.a->send(one, net::Millis(100));  // one granule each
    EXPECT_THROW(p.a->send(one, net::Millis(30)), net::TimeoutError);
    std::vector<uint8_t> got;
    p.b->recv(got, net::Millis(100));
    EXPECT_EQ(got, one);
    // One granule read is below the credit threshold: nothing handed back yet.
    EXPECT_THROW(p.a->send(one, net::Millis(30)), net::TimeoutError);
    p.b->recv(got, net::Millis(100));
    p.a->send(one, net::Millis(100));  // two granules handed back
    p.a->send(one, net::Millis(100));
    EXPECT_THROW(p.a->send(one, net::Millis(30)), net::TimeoutError);
    for (int i = 0; i < 8; ++i) {
        p.b->recv(got, net::Millis(100));
        EXPECT_EQ(got, one);
    }
    EXPECT_THROW(p.b->recv(got, net::Millis(30)), net::TimeoutError);
    EXPECT_EQ(p.stats->faults.load(), 0u);
}

TEST(RdmaRing, CloseIsSeenByThePeerAndSilenceTimesOut) {
    Pair p = memory_pair({});
    std::vector<uint8_t> got;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_THROW(p.b->recv(got, net::Millis(50)), net::TimeoutError);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(s, 0.05);
    EXPECT_LT(s, 1.0);
    p.a->send(pattern(10, 1), net::Millis(100));
    p.a->close();
    p.b->recv(got, net::Millis(100));  // what was sent before the close still arrives
    EXPECT_EQ(got, pattern(10, 1));
    EXPECT_THROW(p.b->recv(got, net::Millis(100)), net::ClosedError);
    EXPECT_THROW(p.b->send(got, net::Millis(100)), net::ClosedError);
    EXPECT_THROW(p.a->send(got, net::Millis(100)), net::ClosedError);
}

// A link whose completion queue reports a failure after `healthy` polls, as a NIC does when the
// peer's queue pair is gone (retry counter exceeded).
class FailingLink : public net::RdmaLink {
  public:
    FailingLink(std::unique_ptr<net::RdmaLink> inner, int healthy)
        : inner_(std::move(inner)), healthy_(healthy) {}
    net::RingGeometry geometry() const override { return inner_->geometry(); }
    uint8_t* send_mirror() override { return inner_->send_mirror(); }
    const uint8_t* recv_ring() const override { return inner_->recv_ring(); }
    size_t max_inline() const override { return inner_->max_inline(); }
    uint32_t send_queue_depth() const override { return inner_->send_queue_depth(); }
    void post_write(size_t o, uint32_t l, uint32_t i, const uint8_t* d, bool s) override {
        inner_->post_write(o, l, i, d, s);
    }
    void post_receives(uint32_t c) override { inner_->post_receives(c); }
    int poll(std::span<net::RdmaCompletion> out) override {
        if (--healthy_ > 0) return inner_->poll(out);
        out[0] = {net::RdmaCompletion::Kind::Failed, 0, 0, "transport retry counter exceeded"};
        return 1;
    }
    bool peer_gone() override { return false; }
    void shutdown() override { inner_->shutdown(); }
    std::string describe() const override { return "failing link"; }

  private:
    std::unique_ptr<net::RdmaLink> inner_;
    int healthy_;
};

TEST(RdmaRing, FailedCompletionIsAnErrorNamingTheStatus) {
    auto [la, lb] = net::make_memory_link_pair({});
    auto a = net::make_ring_transport(std::move(la));
    auto b = net::make_ring_transport(std::make_unique<FailingLink>(std::move(lb), 3));
    std::vector<uint8_t> got;
    try {
        b->recv(got, net::Millis(1000));
        FAIL() << "no error";
    } catch (const net::TimeoutError&) {
        FAIL() << "a failed completion must not read as a timeout";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("transport retry counter exceeded"), std::string::npos)
            << e.what();
    }
}

TEST(RdmaRing, MemoryLinkRefusesWhatHardwareWould) {
    auto stats = std::make_shared<net::MemoryLinkStats>();
    net::MemoryLinkOptions o;
    o.send_queue_depth = 4;
    auto [a, b] = net::make_memory_link_pair(o, stats);
    const uint8_t big[100] = {};
    EXPECT_THROW(a->post_write(0, 100, 0, big, false), Error);  // inline over max_inline (64)
    a->post_write(o.geometry.ring_bytes() - 8, 16, 0, nullptr, true);  // past the ring end
    net::RdmaCompletion c[4];
    ASSERT_EQ(a->poll(c), 1);
    EXPECT_EQ(c[0].kind, net::RdmaCompletion::Kind::Failed);
    for (int i = 0; i < 3; ++i) a->post_write(0, 1, 0, nullptr, false);  // 4 outstanding now
    EXPECT_THROW(a->post_write(0, 1, 0, nullptr, true), Error);          // send queue overrun
    EXPECT_EQ(stats->faults.load(), 1u);
}

// TransportCollective over ring transports: the protocol carries real collectives.
TEST(RdmaRing, CollectivesRunOverTheRingProtocol) {
    constexpr int kRanks = 3;
    net::MemoryLinkOptions o;
    o.geometry = {256, 64};  // 16 KiB rings: the 64 Ki-float vectors stream through
    o.deliver_delay = 2us;
    std::vector<std::vector<std::unique_ptr<net::Transport>>> peers(kRanks);
    for (auto& p : peers) p.resize(kRanks);
    for (int i = 0; i < kRanks; ++i)
        for (int j = i + 1; j < kRanks; ++j) {
            auto [li, lj] = net::make_memory_link_pair(o);
            peers[i][j] = net::make_ring_transport(std::move(li));
            peers[j][i] = net::make_ring_transport(std::move(lj));
        }
    std::vector<std::string> errors(kRanks);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r)
        threads.emplace_back([&, r] {
            try {
                net::CollectiveOptions co;
                co.ring_min_bytes = 8192;  // 1 and 1000 floats direct, 64 Ki floats by ring
                net::TransportCollective c(r, std::move(peers[r]), co);
                for (size_t n : {size_t(1), size_t(1000), size_t(65536)}) {
                    std::vector<float> v(n);
                    for (size_t i = 0; i < n; ++i) v[i] = float((r + 1) * int(i % 41));
                    c.all_reduce_sum(v.data(), n);
                    for (size_t i = 0; i < n; ++i)
                        if (v[i] != 6.0f * float(i % 41))
                            throw Error("n " + std::to_string(n) + " element " + std::to_string(i) +
                                        " wrong");
                }
            } catch (const std::exception& e) {
                errors[r] = e.what();
            }
        });
    for (auto& t : threads) t.join();
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

}  // namespace
}  // namespace tandem::test

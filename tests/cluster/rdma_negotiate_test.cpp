// Choosing RDMA or TCP: the offer's byte layout, the subnet and geometry checks, the memlock
// check and its advice, and the fall-back to TCP over real loopback sockets (logged once).
#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "tandem/common/log.h"
#include "tandem/net/rdma_transport.h"

namespace tandem::test {
namespace {

net::RdmaOffer roce_offer(const std::string& ip, int prefix_v4) {
    net::RdmaOffer o;
    o.link_layer = 2;
    o.port = 1;
    o.mtu = 3;
    o.lid = 0;
    EXPECT_TRUE(net::ip_to_bytes(ip, o.gid));
    o.ip = o.gid;
    o.prefix_len = static_cast<uint8_t>(96 + prefix_v4);
    o.qpn = 0x123456;
    o.psn = 0xabcdef;
    o.rkey = 0xdeadbeef;
    o.ring_addr = 0x7f0011223344ull;
    o.ring_bytes = 1 << 20;
    o.granule = 1024;
    return o;
}

TEST(RdmaNegotiate, OfferBytesRoundTripAndBadOffersAreRefused) {
    const auto o = roce_offer("10.0.0.1", 24);
    const auto bytes = net::encode_offer(o);
    ASSERT_EQ(bytes.size(), 6u + 66u);
    EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 4), "TRDM");
    EXPECT_EQ(bytes[4], 1);  // version
    EXPECT_EQ(bytes[5], 1);  // available
    // qpn little-endian right after link layer, port, mtu, lid and the 16-byte GID
    EXPECT_EQ(bytes[6 + 21], 0x56);
    EXPECT_EQ(bytes[6 + 23], 0x12);
    const auto back = net::decode_offer(bytes);
    EXPECT_EQ(back.qpn, o.qpn);
    EXPECT_EQ(back.psn, o.psn);
    EXPECT_EQ(back.rkey, o.rkey);
    EXPECT_EQ(back.ring_addr, o.ring_addr);
    EXPECT_EQ(back.gid, o.gid);
    EXPECT_EQ(back.prefix_len, o.prefix_len);
    EXPECT_EQ(net::rdma_mismatch(o, back), "");

    net::RdmaOffer no;
    no.unavailable = "no RDMA (verbs) device on this host";
    EXPECT_EQ(net::decode_offer(net::encode_offer(no)).unavailable, no.unavailable);

    auto bad = bytes;
    bad[0] = 'X';
    EXPECT_THROW(net::decode_offer(bad), Error);
    bad = bytes;
    bad[4] = 9;
    EXPECT_THROW(net::decode_offer(bad), Error);
    bad.assign(bytes.begin(), bytes.end() - 1);
    EXPECT_THROW(net::decode_offer(bad), Error);
}

TEST(RdmaNegotiate, RdmaOnlyWithinOneSubnetAndTheSameAnswerOnBothEnds) {
    const auto a = roce_offer("10.0.0.1", 24);
    auto same = [&](const net::RdmaOffer& x, const net::RdmaOffer& y) {
        EXPECT_EQ(net::rdma_mismatch(x, y).empty(), net::rdma_mismatch(y, x).empty());
        return net::rdma_mismatch(x, y);
    };
    EXPECT_EQ(same(a, roce_offer("10.0.0.2", 24)), "");
    EXPECT_NE(same(a, roce_offer("10.0.1.2", 24)).find("not on one subnet"), std::string::npos);
    // b thinks it is on a /16 that holds a; a's /24 does not hold b: no.
    EXPECT_NE(same(a, roce_offer("10.0.7.2", 16)), "");

    net::RdmaOffer off;
    off.unavailable = "no RDMA (verbs) device on this host";
    EXPECT_EQ(net::rdma_mismatch(off, a), "this host: no RDMA (verbs) device on this host");
    EXPECT_EQ(net::rdma_mismatch(a, off), "peer: no RDMA (verbs) device on this host");

    auto ib1 = a, ib2 = a;
    ib1.link_layer = ib2.link_layer = 1;
    ib2.gid[0] ^= 1;  // other subnet prefix
    EXPECT_NE(same(ib1, ib2).find("different subnets"), std::string::npos);
    EXPECT_NE(same(ib1, a).find("InfiniBand"), std::string::npos);

    auto other_ring = roce_offer("10.0.0.2", 24);
    other_ring.granule = 2048;
    EXPECT_NE(same(a, other_ring).find("ring geometry"), std::string::npos);
}

TEST(RdmaNegotiate, MemlockShortfallSaysHowToRaiseTheLimit) {
    const uint64_t MiB = 1 << 20;
    EXPECT_EQ(net::memlock_shortfall(8 * MiB, 0, 4 * MiB, false), "");
    EXPECT_EQ(net::memlock_shortfall(8 * MiB, 6 * MiB, 4 * MiB, true), "");  // CAP_IPC_LOCK
    EXPECT_EQ(net::memlock_shortfall(UINT64_MAX, 6 * MiB, 4 * MiB, false), "");
    const auto s = net::memlock_shortfall(8 * MiB, 6 * MiB, 4 * MiB, false);
    EXPECT_NE(s.find("RLIMIT_MEMLOCK is 8192 KiB"), std::string::npos) << s;
    EXPECT_NE(s.find("needs 4096 KiB"), std::string::npos) << s;
    EXPECT_NE(s.find("ulimit -l unlimited"), std::string::npos) << s;
    EXPECT_NE(s.find("LimitMEMLOCK=infinity"), std::string::npos) << s;
    EXPECT_NE(s.find("/etc/security/limits.conf"), std::string::npos) << s;
}

TEST(RdmaNegotiate, AddressesBecomeGidBytes) {
    std::array<uint8_t, 16> b{};
    ASSERT_TRUE(net::ip_to_bytes("10.1.2.3", b));
    EXPECT_EQ(b, (std::array<uint8_t, 16>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3}));
    ASSERT_TRUE(net::ip_to_bytes("fe80::1%eth0", b));
    EXPECT_EQ(b[0], 0xfe);
    EXPECT_EQ(b[15], 1);
    ASSERT_TRUE(net::ip_to_bytes("[::1]", b));
    EXPECT_EQ(b[15], 1);
    EXPECT_FALSE(net::ip_to_bytes("node.local", b));
}

// Both ends negotiate over a real loopback TCP connection. RDMA is off on one end, so both keep
// TCP, name the reason, log it once per process, and the TCP transport still carries messages.
TEST(RdmaNegotiate, FallsBackToTcpWithTheReasonLoggedOnce) {
    std::mutex mu;
    std::vector<std::string> lines;
    auto old = set_log_sink([&](LogLevel, std::string_view m) {
        std::lock_guard l(mu);
        lines.emplace_back(m);
    });
    for (int round = 0; round < 2; ++round) {
        auto [x, y] = net::tcp_loopback_pair();
        net::RdmaOptions off, on;
        off.enabled = false;
        net::TransportChoice cx, cy;
        std::thread t([&, xx = std::move(x)]() mutable {
            cx = net::negotiate_transport(std::move(xx), "127.0.0.1", off, net::Millis(2000));
        });
        cy = net::negotiate_transport(std::move(y), "127.0.0.1", on, net::Millis(2000));
        t.join();
        EXPECT_EQ(cx.rdma_refused,
                  "this host: RDMA is switched off on this rank "
                  "(RdmaOptions::enabled)");
        // Here: this host's own reason when it has no device, else the peer's.
        EXPECT_NE(cy.rdma_refused, "");
        EXPECT_NE(cx.transport->describe().find("tcp"), std::string::npos);
        const std::vector<uint8_t> msg = {1, 2, 3};
        std::vector<uint8_t> got;
        cx.transport->send(msg, net::Millis(1000));
        cy.transport->recv(got, net::Millis(1000));
        EXPECT_EQ(got, msg);
    }
    // x's reason is new to this process (other tests may have logged y's already); it was logged
    // once although two connections gave it.
    size_t x_lines = 0;
    for (const auto& l : lines) {
        EXPECT_NE(l.find("using TCP to "), std::string::npos) << l;
        EXPECT_NE(l.find("not RDMA: "), std::string::npos) << l;
        x_lines += l.find("this host: RDMA is switched off") != std::string::npos;
    }
    EXPECT_EQ(x_lines, 1u);
    set_log_sink(old);
}

TEST(RdmaNegotiate, APeerThatSendsNoOfferIsAnError) {
    auto [x, y] = net::tcp_loopback_pair();
    std::thread t([&] {
        std::vector<uint8_t> got;
        x->recv(got, net::Millis(2000));
        x->send(std::vector<uint8_t>{'h', 'e', 'l', 'l', 'o', '!'}, net::Millis(2000));
    });
    EXPECT_THROW(net::negotiate_transport(std::move(y), "127.0.0.1", {}, net::Millis(2000)), Error);
    t.join();
}

}  // namespace
}  // namespace tandem::test

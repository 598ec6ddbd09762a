// The browser's peer list, fed datagrams directly: signed beacons add a peer with its addresses,
// only newer beacons keep it alive (a replayed one cannot), expiry and goodbye beacons remove
// it, incompatible versions are listed but marked, bad datagrams are counted and ignored.
#include <gtest/gtest.h>

#include "net_test_util.h"
#include "tandem/net/discovery.h"
#include "tandem/net/net_version.h"
#include "tandem/net/pairing.h"
#include "tandem/net/record.h"

using namespace tandem::net;
using namespace std::chrono_literals;

namespace {
Beacon beacon(uint64_t seq, uint32_t protocol = kProtocolVersion) {
    Beacon b;
    b.name = "gpu-box";
    b.app_version = "0.1.0";
    b.protocol_version = protocol;
    b.accepts_pairing = true;
    b.tcp_port = 47401;
    b.sequence = seq;
    b.backends = {{"vulkan", {{"Radeon", 8ull << 30, 16ull << 30}}}};
    return b;
}
}  // namespace

TEST(NetBrowser, ListsMergesAddressesAndExpires) {
    DiscoveryConfig cfg;
    cfg.expiry = 4000ms;
    Browser br(cfg, "self");
    Identity node = Identity::generate();
    int found = 0, lost = 0;
    br.on_found = [&](const DiscoveredPeer&) { ++found; };
    br.on_lost = [&](const DiscoveredPeer&) { ++lost; };
    auto t = Clock::now();
    br.handle_datagram(encode_beacon(beacon(10), node), "10.0.0.2", t);
    br.handle_datagram(encode_beacon(beacon(10), node), "fe80::1%eth0", t + 1ms);
    br.expire(t + 1ms);
    auto peers = br.peers();
    ASSERT_EQ(peers.size(), 1u);
    EXPECT_EQ(peers[0].node_id, node.node_id());
    EXPECT_TRUE(peers[0].compatible);
    EXPECT_EQ(peers[0].beacon.backends[0].devices[0].memory_free, 8ull << 30);
    std::vector<std::string> want = {"10.0.0.2:47401", "[fe80::1%eth0]:47401"};
    EXPECT_EQ(peers[0].addresses, want);
    EXPECT_EQ(found, 1);

    // A replay of the same beacon 3 s later does not refresh it...
    br.handle_datagram(encode_beacon(beacon(10), node), "10.0.0.2", t + 3000ms);
    br.expire(t + 4100ms);
    EXPECT_EQ(lost, 1) << "replayed beacons kept a silent node alive";
    // ...while a newer one from the live node does.
    br.handle_datagram(encode_beacon(beacon(11), node), "10.0.0.2", t + 5000ms);
    br.handle_datagram(encode_beacon(beacon(12), node), "10.0.0.2", t + 8000ms);
    br.expire(t + 11000ms);
    EXPECT_EQ(lost, 1);
    EXPECT_EQ(found, 2);
}

TEST(NetBrowser, GoodbyeBeaconDropsAtOnceButAnOldOneDoesNot) {
    Browser br(DiscoveryConfig{}, "self");
    Identity node = Identity::generate();
    auto t = Clock::now();
    br.handle_datagram(encode_beacon(beacon(100), node), "10.0.0.2", t);
    Beacon bye = beacon(50);
    bye.leaving = true;
    br.handle_datagram(encode_beacon(bye, node), "10.0.0.2", t);
    br.expire(t);
    EXPECT_EQ(br.peers().size(), 1u) << "a replayed old goodbye removed a live node";
    bye.sequence = 101;
    br.handle_datagram(encode_beacon(bye, node), "10.0.0.2", t);
    EXPECT_TRUE(br.peers().empty());
}

TEST(NetBrowser, IncompatibleVersionIsShownButCannotPair) {
    Browser br(DiscoveryConfig{}, "self");
    Identity node = Identity::generate();
    br.handle_datagram(encode_beacon(beacon(1, kProtocolVersion + 1), node), "10.0.0.9",
                       Clock::now());
    auto peers = br.peers();
    ASSERT_EQ(peers.size(), 1u);
    EXPECT_FALSE(peers[0].compatible);
    EXPECT_NE(peers[0].incompatibility.find("protocol " + std::to_string(kProtocolVersion + 1)),
              std::string::npos);

    // A node of another protocol version is refused at pairing.
    Identity coord = Identity::generate();
    PakeInitiator i(coord, "coord", "12345678");
    PairHello hello = parse_pair_hello(i.hello());
    hello.protocol_version = kProtocolVersion + 1;
    PakeResponder r(node, "joiner", "12345678");
    try {
        r.on_hello(encode(hello));
        FAIL();
    } catch (const RefusedError& e) {
        EXPECT_EQ(e.code, RefusalCode::VersionMismatch);
    }
}

TEST(NetBrowser, BadDatagramsAndOwnBeaconsAreIgnored) {
    tandem::net::test::LogCapture log;
    Identity self = Identity::generate();
    Browser br(DiscoveryConfig{}, self.node_id());
    br.handle_datagram(encode_beacon(beacon(1), self), "10.0.0.1", Clock::now());
    std::vector<uint8_t> junk(300, 0xaa);
    br.handle_datagram(junk, "10.0.0.66", Clock::now());
    br.handle_datagram(junk, "10.0.0.66", Clock::now());
    EXPECT_TRUE(br.peers().empty());
    EXPECT_EQ(br.rejected(), 2u);
    EXPECT_TRUE(log.contains("discovery: ignored a bad beacon from 10.0.0.66")) << log.all();
}

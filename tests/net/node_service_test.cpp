// Node service on loopback over real TCP: pairing with the right code, refusals for a wrong code
// (rate-limited), an unpaired peer, an un-paired peer, a replayed handshake, man-in-the-middle
// relays, and tampered frames; each refusal asserted with its log line.
#include <gtest/gtest.h>

#include <cstring>

#include "net_test_util.h"
#include "tandem/net/pairing_session.h"
#include "tandem/net/record.h"

using namespace tandem::net;
using namespace tandem::net::test;

namespace {

std::vector<uint8_t> bytes(const std::string& s) {
    return {s.begin(), s.end()};
}

struct Cluster {
    explicit Cluster(const std::string& tag)
        : coord(loopback_node(tag, "coord")), joiner(loopback_node(tag, "joiner")) {
        coord.start();
        joiner.start();
    }
    PairedPeer pair() {
        return pair_with(local(joiner.port()), coord.identity(), "coord", *joiner.pairing_code(),
                         coord.peers());
    }
    NodeService coord;
    NodeService joiner;
};

}  // namespace

TEST(NetNode, RightCodePairsBothSidesThenChannelEchoes) {
    LogCapture log;
    Cluster c("pair-ok");
    PairedPeer j = c.pair();
    EXPECT_EQ(j.node_id, c.joiner.identity().node_id());
    EXPECT_EQ(j.keys, c.joiner.identity().public_keys());
    auto back = c.joiner.peers().find(c.coord.identity().node_id());
    ASSERT_TRUE(back) << "the joining node pinned the coordinator";
    EXPECT_EQ(back->keys, c.coord.identity().public_keys());
    EXPECT_EQ(back->name, "coord");

    auto ch = SecureChannel::connect(local(c.joiner.port()), c.coord.identity(), j);
    for (int k = 0; k < 3; ++k) {
        auto msg = bytes("all-reduce " + std::to_string(k));
        ch->send(msg, Millis(2000));
        EXPECT_EQ(ch->recv(Millis(2000)), msg);
    }
    std::vector<uint8_t> big(1 << 20);
    for (size_t i = 0; i < big.size(); ++i) big[i] = uint8_t(i * 31);
    ch->send(big, Millis(5000));
    EXPECT_EQ(ch->recv(Millis(5000)), big);
    EXPECT_THROW(ch->recv(Millis(100)), TimeoutError) << "a quiet channel times out";
    ch->send(bytes("still usable"), Millis(1000));
    EXPECT_EQ(ch->recv(Millis(2000)), bytes("still usable"));
    EXPECT_TRUE(
        log.wait_for("channel: authenticated node " + short_id(c.coord.identity().node_id())))
        << log.all();
}

TEST(NetNode, UsedCodeCannotPairAgain) {
    Cluster c("pair-once");
    std::string code = *c.joiner.pairing_code();
    pair_with(local(c.joiner.port()), c.coord.identity(), "coord", code, c.coord.peers());
    Identity third = Identity::generate();
    PeerStore third_peers(tandem::test::temp_dir("net-pair-once-3") / "peers.json");
    EXPECT_THROW(pair_with(local(c.joiner.port()), third, "third", code, third_peers),
                 RefusedError);
    EXPECT_FALSE(c.joiner.peers().find(third.node_id()));
}

TEST(NetNode, WrongCodesAreRefusedAndRateLimited) {
    LogCapture log;
    Cluster c("pair-wrong");
    std::string right = *c.joiner.pairing_code();
    std::string wrong = right == "00000000" ? "11111111" : "00000000";
    for (int k = 0; k < 5; ++k) {
        try {
            pair_with(local(c.joiner.port()), c.coord.identity(), "coord", wrong, c.coord.peers());
            FAIL() << "a wrong code paired";
        } catch (const RefusedError& e) {
            EXPECT_EQ(e.code, RefusalCode::WrongCode) << e.what();
        }
    }
    EXPECT_TRUE(
        log.wait_for("pairing: wrong code from node " + short_id(c.coord.identity().node_id())))
        << log.all();
    EXPECT_TRUE(log.contains("code burnt")) << log.all();
    // After five wrong codes even the right one is refused: the code is gone.
    try {
        pair_with(local(c.joiner.port()), c.coord.identity(), "coord", right, c.coord.peers());
        FAIL() << "paired after the lockout";
    } catch (const RefusedError& e) {
        EXPECT_EQ(e.code, RefusalCode::PairingUnavailable) << e.what();
    }
    EXPECT_TRUE(log.wait_for("locked for")) << log.all();
    EXPECT_TRUE(c.joiner.peers().list().empty());
    EXPECT_TRUE(c.coord.peers().list().empty());
}

TEST(NetNode, UnpairedPeerIsRefused) {
    LogCapture log;
    Cluster c("unpaired");
    Identity stranger = Identity::generate();
    // The stranger knows the node's public keys (beacons are public) but was never paired.
    DiscoveredPeer seen = probe_node(local(c.joiner.port()));
    EXPECT_EQ(seen.node_id, c.joiner.identity().node_id());
    PairedPeer target{seen.node_id, seen.beacon.name, seen.beacon.keys, 0, ""};
    try {
        SecureChannel::connect(local(c.joiner.port()), stranger, target);
        FAIL() << "an unpaired peer got a channel";
    } catch (const RefusedError& e) {
        EXPECT_EQ(e.code, RefusalCode::NotPaired) << e.what();
    }
    EXPECT_TRUE(log.wait_for("is not paired with this node")) << log.all();
}

TEST(NetNode, UnpairRevokesAccess) {
    LogCapture log;
    Cluster c("unpair");
    PairedPeer j = c.pair();
    SecureChannel::connect(local(c.joiner.port()), c.coord.identity(), j)->close();
    ASSERT_TRUE(c.joiner.peers().remove(c.coord.identity().node_id()));
    EXPECT_THROW(SecureChannel::connect(local(c.joiner.port()), c.coord.identity(), j),
                 RefusedError);
}

TEST(NetNode, ReplayedHandshakeIsRefused) {
    LogCapture log;
    Cluster c("replay");
    PairedPeer j = c.pair();
    auto deadline = [] { return Clock::now() + Millis(2000); };
    // A real handshake, recorded by an eavesdropper.
    HandshakeInitiator hs(c.coord.identity(), j.keys.kx_pk);
    std::vector<uint8_t> m1 = hs.first(), m3;
    {
        Socket s = Socket::connect(local(c.joiner.port()), Millis(2000));
        write_record(s, RecordKind::Channel, m1, deadline());
        m3 = hs.on_second(expect_record(s, RecordKind::Channel, deadline(), "joiner"));
        write_record(s, RecordKind::Channel, m3, deadline());
    }
    // Replay to the same node: named as a replay at once.
    {
        Socket s = Socket::connect(local(c.joiner.port()), Millis(2000));
        write_record(s, RecordKind::Channel, m1, deadline());
        try {
            expect_record(s, RecordKind::Channel, deadline(), "joiner");
            FAIL() << "replayed message 1 was answered";
        } catch (const RefusedError& e) {
            EXPECT_EQ(e.code, RefusalCode::Replay);
        }
    }
    EXPECT_TRUE(log.wait_for("replayed handshake message 1")) << log.all();
    // Replay to a restarted node (empty replay cache) with the recorded message 3: the node
    // answers message 1, but the old message 3 does not verify, so no channel is served.
    c.joiner.stop();
    NodeConfig again = c.joiner.config();  // same home, same identity and peers
    again.port = 0;
    NodeService restarted(again);
    restarted.start();
    {
        Socket s = Socket::connect(local(restarted.port()), Millis(2000));
        write_record(s, RecordKind::Channel, m1, deadline());
        expect_record(s, RecordKind::Channel, deadline(), "joiner");
        write_record(s, RecordKind::Channel, m3, deadline());
        EXPECT_THROW(expect_record(s, RecordKind::Channel, deadline(), "joiner"), RefusedError);
    }
    EXPECT_TRUE(log.wait_for("message 3 does not verify")) << log.all();
}

TEST(NetNode, PairingRelayThatSwapsKeysIsRefused) {
    LogCapture log;
    Cluster c("mitm-pair");
    Identity mallory = Identity::generate();
    // Record header (6) + type (1) + version (4): the coordinator's Ed25519 and X25519 keys
    // follow. The relay writes Mallory's keys there.
    std::array<uint8_t, 64> keys;
    std::memcpy(keys.data(), mallory.public_keys().sign_pk.data(), 32);
    std::memcpy(keys.data() + 32, mallory.public_keys().kx_pk.data(), 32);
    Relay relay(c.joiner.port(),
                [&](size_t off, uint8_t b) { return off >= 11 && off < 75 ? keys[off - 11] : b; });
    try {
        pair_with(local(relay.port()), c.coord.identity(), "coord", *c.joiner.pairing_code(),
                  c.coord.peers());
        FAIL() << "pairing through a key-swapping relay succeeded";
    } catch (const RefusedError& e) {
        EXPECT_EQ(e.code, RefusalCode::WrongCode) << e.what();
    }
    EXPECT_TRUE(log.wait_for("pairing: wrong code from node " + short_id(mallory.node_id())))
        << log.all();
    EXPECT_TRUE(c.joiner.peers().list().empty()) << "Mallory was not pinned";
    EXPECT_TRUE(c.coord.peers().list().empty());
}

TEST(NetNode, ChannelRelayCannotAlterHandshakeOrFrames) {
    LogCapture log;
    Cluster c("mitm-channel");
    PairedPeer j = c.pair();
    {
        // A relay that changes one byte of the initiator's ephemeral key in message 1.
        Relay relay(c.joiner.port(),
                    [](size_t off, uint8_t b) { return off == 50 ? uint8_t(b ^ 1) : b; });
        EXPECT_THROW(SecureChannel::connect(local(relay.port()), c.coord.identity(), j),
                     tandem::Error);
    }
    EXPECT_TRUE(log.wait_for("message 1 does not verify")) << log.all();
    {
        // Message 1 record is 6 + 85 bytes, message 3 is 6 + 17: the first frame starts at 114.
        Relay relay(c.joiner.port(),
                    [](size_t off, uint8_t b) { return off == 114 + 10 ? uint8_t(b ^ 0x20) : b; });
        auto ch = SecureChannel::connect(local(relay.port()), c.coord.identity(), j);
        ch->send(bytes("transfer 100 tokens"), Millis(1000));
        EXPECT_THROW(ch->recv(Millis(2000)), tandem::Error)
            << "the node dropped the tampered stream";
    }
    EXPECT_TRUE(log.wait_for("authentication failed (tampered, replayed or reordered frame)"))
        << log.all();
    {
        // An honest relay (a router) changes nothing: the channel works end to end.
        Relay relay(c.joiner.port(), [](size_t, uint8_t b) { return b; });
        auto ch = SecureChannel::connect(local(relay.port()), c.coord.identity(), j);
        ch->send(bytes("ok"), Millis(1000));
        EXPECT_EQ(ch->recv(Millis(2000)), bytes("ok"));
    }
}

TEST(NetNode, GarbageAndClosedPairingAreRefusedWithALogLine) {
    LogCapture log;
    NodeConfig cfg = loopback_node("garbage", "closed");
    cfg.accept_pairing = false;
    NodeService node(cfg);
    node.start();
    EXPECT_FALSE(node.pairing_code());
    {
        Socket s = Socket::connect(local(node.port()), Millis(1000));
        std::vector<uint8_t> junk = bytes("GET / HTTP/1.1\r\n\r\n");
        s.write_all(junk, Clock::now() + Millis(1000));
        EXPECT_THROW(expect_record(s, RecordKind::Info, Clock::now() + Millis(2000), "node"),
                     RefusedError);
    }
    EXPECT_TRUE(log.wait_for("not a Tandem peer")) << log.all();
    Identity other = Identity::generate();
    PeerStore other_peers(tandem::test::temp_dir("net-garbage-o") / "peers.json");
    try {
        pair_with(local(node.port()), other, "x", "12345678", other_peers);
        FAIL();
    } catch (const RefusedError& e) {
        EXPECT_EQ(e.code, RefusalCode::PairingUnavailable);
    }
    DiscoveredPeer p = probe_node(local(node.port()));
    EXPECT_FALSE(p.beacon.accepts_pairing);
    EXPECT_EQ(p.beacon.tcp_port, node.port());
}

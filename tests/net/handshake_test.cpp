// Channel handshake and frames, without sockets: pinned keys authenticate both ways; a replayed
// message 1 cannot be completed; tampering anywhere fails; frames cannot be replayed/reordered.
#include <gtest/gtest.h>

#include "tandem/net/channel.h"
#include "tandem/net/frame.h"
#include "tandem/net/handshake.h"

using namespace tandem::net;

namespace {
struct Nodes {
    Identity a = Identity::generate();  // initiator
    Identity b = Identity::generate();  // responder
};
}  // namespace

TEST(NetHandshake, PinnedKeysGiveMatchingSessionKeys) {
    Nodes n;
    HandshakeInitiator i(n.a, n.b.public_keys().kx_pk);
    HandshakeResponder r(n.b, n.a.public_keys().kx_pk);
    auto m1 = i.first();
    auto m2 = r.on_first(m1);
    auto m3 = i.on_second(m2);
    r.on_third(m3);
    EXPECT_EQ(i.keys().send, r.keys().recv);
    EXPECT_EQ(i.keys().recv, r.keys().send);
    EXPECT_NE(i.keys().send, i.keys().recv);
    EXPECT_EQ(i.keys().handshake_hash, r.keys().handshake_hash);
    EXPECT_EQ(peek_handshake_first(m1).initiator_static, n.a.public_keys().kx_pk);
}

TEST(NetHandshake, ReplayedFirstMessageCannotBeCompleted) {
    Nodes n;
    HandshakeInitiator i(n.a, n.b.public_keys().kx_pk);
    HandshakeResponder r(n.b, n.a.public_keys().kx_pk);
    auto m1 = i.first();
    i.on_second(r.on_first(m1));
    // An eavesdropper replays message 1 later; the responder answers but the replayer cannot
    // make message 3 without the initiator's ephemeral secret. The best it can do is replay
    // the old message 3, which was bound to the old responder ephemeral.
    HandshakeResponder r2(n.b, n.a.public_keys().kx_pk);
    r2.on_first(m1);
    HandshakeInitiator i_old(n.a, n.b.public_keys().kx_pk);
    auto old_m1 = i_old.first();
    HandshakeResponder r_old(n.b, n.a.public_keys().kx_pk);
    auto old_m3 = i_old.on_second(r_old.on_first(old_m1));
    EXPECT_THROW(r2.on_third(old_m3), HandshakeFailed);
    ReplayCache cache;
    EXPECT_TRUE(cache.first_use(peek_handshake_first(m1).initiator_ephemeral));
    EXPECT_FALSE(cache.first_use(peek_handshake_first(m1).initiator_ephemeral));
}

TEST(NetHandshake, WrongPinnedKeyFailsOnBothSides) {
    Nodes n;
    Identity mallory = Identity::generate();
    // Mallory poses as b: the initiator pinned b's key, so Mallory cannot read message 1...
    HandshakeInitiator i(n.a, n.b.public_keys().kx_pk);
    HandshakeResponder fake(mallory, n.a.public_keys().kx_pk);
    EXPECT_THROW(fake.on_first(i.first()), HandshakeFailed);
    // ...and a Mallory that knows a's static public key but not its secret cannot start one.
    HandshakeResponder r(n.b, n.a.public_keys().kx_pk);
    HandshakeInitiator forged(mallory, n.b.public_keys().kx_pk);
    auto m1 = forged.first();
    std::copy(n.a.public_keys().kx_pk.begin(), n.a.public_keys().kx_pk.end(), m1.begin() + 5);
    EXPECT_THROW(r.on_first(m1), HandshakeFailed);
}

TEST(NetHandshake, EveryTamperedByteFails) {
    Nodes n;
    HandshakeInitiator i0(n.a, n.b.public_keys().kx_pk);
    auto m1 = i0.first();
    for (size_t k = 0; k < m1.size(); ++k) {
        auto bad = m1;
        bad[k] ^= 0x80;
        HandshakeResponder r(n.b, n.a.public_keys().kx_pk);
        EXPECT_THROW(r.on_first(bad), tandem::Error) << "message 1 byte " << k;
    }
    HandshakeResponder r(n.b, n.a.public_keys().kx_pk);
    auto m2 = r.on_first(m1);
    for (size_t k = 0; k < m2.size(); ++k) {
        auto bad = m2;
        bad[k] ^= 0x80;
        HandshakeInitiator i(n.a, n.b.public_keys().kx_pk);
        HandshakeResponder rr(n.b, n.a.public_keys().kx_pk);
        rr.on_first(i.first());
        EXPECT_THROW(i.on_second(bad), tandem::Error) << "message 2 byte " << k;
    }
}

TEST(NetFrames, SealOpenAndRejectReplayReorderTamper) {
    Key32 key;
    key.fill(7);
    FrameSealer s(key);
    FrameOpener o(key, 1024);
    std::vector<uint8_t> m1 = {1, 2, 3}, m2 = {4, 5};
    auto f1 = s.seal(m1), f2 = s.seal(m2);
    auto open = [&](FrameOpener& op, const std::vector<uint8_t>& f) {
        std::span<const uint8_t, 4> h(f.data(), 4);
        return op.open(h, std::span(f).subspan(4));
    };
    {
        FrameOpener reorder(key, 1024);
        EXPECT_THROW(open(reorder, f2), tandem::Error);
    }
    EXPECT_EQ(open(o, f1), m1);
    EXPECT_THROW(open(o, f1), tandem::Error) << "replayed frame";
    FrameOpener o2(key, 1024);
    auto bad = f1;
    bad.back() ^= 1;
    EXPECT_THROW(open(o2, bad), tandem::Error);
    EXPECT_EQ(open(o2, f1), m1) << "a failed frame does not advance the counter";
    EXPECT_EQ(open(o2, f2), m2);
}

TEST(NetFrames, LengthIsCheckedBeforeAllocation) {
    Key32 key{};
    FrameOpener o(key, 1024);
    std::array<uint8_t, 4> huge = {0xff, 0xff, 0xff, 0xff}, tiny = {0, 0, 0, 3}, ok = {0, 0, 4, 16};
    EXPECT_THROW(o.body_length(huge), tandem::Error);
    EXPECT_THROW(o.body_length(tiny), tandem::Error);
    EXPECT_EQ(o.body_length(ok), 1040u);
}

TEST(NetLoopbackPair, BothEndsTalkBothWays) {
    Identity a = Identity::generate(), b = Identity::generate();
    auto [ea, eb] = secure_loopback_pair(a, b);
    std::vector<uint8_t> ping = {1, 2, 3}, pong = {4, 5};
    ea->send(ping, Millis(1000));
    EXPECT_EQ(eb->recv(Millis(1000)), ping);
    eb->send(pong, Millis(1000));
    EXPECT_EQ(ea->recv(Millis(1000)), pong);
    EXPECT_EQ(ea->peer().node_id, b.node_id());
    EXPECT_EQ(eb->peer().node_id, a.node_id());
    EXPECT_EQ(ea->session_hash(), eb->session_hash());
}

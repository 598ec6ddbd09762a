// CPace pairing: the right code pins both keys; a wrong code, a relay that swaps keys, or a
// man in the middle running its own exchanges with both sides all fail. The code gate limits
// attempts and burns used codes.
#include <gtest/gtest.h>

#include <thread>

#include "tandem/net/pairing.h"

using namespace tandem::net;

namespace {
struct Pair {
    Identity coordinator = Identity::generate();
    Identity joiner = Identity::generate();
};
}  // namespace

TEST(NetPairing, RightCodePinsBothPublicKeys) {
    Pair p;
    PakeInitiator i(p.coordinator, "coord", "1234-5678");
    PakeResponder r(p.joiner, "joiner", "12345678");
    auto reply = r.on_hello(i.hello());
    auto confirm = i.on_reply(reply);
    auto result = r.on_confirm(confirm);
    ASSERT_TRUE(result.has_value());
    PairedWith got = i.on_result(*result);
    EXPECT_EQ(got.keys, p.joiner.public_keys());
    EXPECT_EQ(got.node_id, p.joiner.node_id());
    EXPECT_EQ(got.name, "joiner");
    EXPECT_EQ(r.peer().keys, p.coordinator.public_keys());
    EXPECT_EQ(r.peer().name, "coord");
}

TEST(NetPairing, WrongCodeFailsAtTheJoiningNode) {
    Pair p;
    PakeInitiator i(p.coordinator, "coord", "1234-5679");
    PakeResponder r(p.joiner, "joiner", "1234-5678");
    auto confirm = i.on_reply(r.on_hello(i.hello()));
    EXPECT_FALSE(r.on_confirm(confirm).has_value());
}

TEST(NetPairing, ForgedResultFailsAtTheCoordinator) {
    Pair p;
    PakeInitiator i(p.coordinator, "coord", "11112222");
    PakeResponder r(p.joiner, "joiner", "11112222");
    i.on_reply(r.on_hello(i.hello()));
    PairResult forged;
    forged.mac.fill(0x5a);
    EXPECT_THROW(i.on_result(encode(forged)), PairingFailed);
}

TEST(NetPairing, RelaySwappingTheCoordinatorKeyIsRefused) {
    Pair p;
    Identity mallory = Identity::generate();
    PakeInitiator i(p.coordinator, "coord", "11112222");
    PakeResponder r(p.joiner, "joiner", "11112222");
    // The relay forwards everything but puts its own keys into the hello, hoping the joining
    // node pins Mallory instead of the coordinator.
    PairHello hello = parse_pair_hello(i.hello());
    hello.keys = mallory.public_keys();
    auto reply = r.on_hello(encode(hello));
    auto confirm = i.on_reply(reply);
    EXPECT_FALSE(r.on_confirm(confirm).has_value());
}

TEST(NetPairing, RelaySwappingTheJoinerKeyIsRefused) {
    Pair p;
    Identity mallory = Identity::generate();
    PakeInitiator i(p.coordinator, "coord", "11112222");
    PakeResponder r(p.joiner, "joiner", "11112222");
    PairReply reply = parse_pair_reply(r.on_hello(i.hello()));
    reply.keys = mallory.public_keys();
    auto confirm = i.on_reply(encode(reply));
    // The joining node sees a confirmation over another transcript...
    EXPECT_FALSE(r.on_confirm(confirm).has_value());
}

TEST(NetPairing, ManInTheMiddleWithoutTheCodeFailsBothSides) {
    Pair p;
    Identity mallory = Identity::generate();
    // Mallory runs a full exchange with each side, guessing the code.
    PakeInitiator coord(p.coordinator, "coord", "24681357");
    PakeResponder fake_joiner(mallory, "joiner", "00000000");
    auto confirm = coord.on_reply(fake_joiner.on_hello(coord.hello()));
    EXPECT_FALSE(fake_joiner.on_confirm(confirm).has_value())
        << "Mallory cannot answer the coordinator";

    PakeInitiator fake_coord(mallory, "coord", "00000000");
    PakeResponder joiner(p.joiner, "joiner", "24681357");
    auto confirm2 = fake_coord.on_reply(joiner.on_hello(fake_coord.hello()));
    EXPECT_FALSE(joiner.on_confirm(confirm2).has_value()) << "the joining node refuses Mallory";
}

TEST(NetPairing, InvalidPointsAreRejected) {
    Pair p;
    PakeInitiator i(p.coordinator, "coord", "11112222");
    PakeResponder r(p.joiner, "joiner", "11112222");
    PairReply reply = parse_pair_reply(r.on_hello(i.hello()));
    reply.point.fill(0);  // the identity element
    EXPECT_THROW(i.on_reply(encode(reply)), PairingFailed);

    PakeInitiator i2(p.coordinator, "coord", "11112222");
    PakeResponder r2(p.joiner, "joiner", "11112222");
    PairConfirm c = parse_pair_confirm(i2.on_reply(r2.on_hello(i2.hello())));
    c.point.fill(0xff);  // not a canonical encoding
    EXPECT_FALSE(r2.on_confirm(encode(c)).has_value());
}

TEST(NetPairing, MalformedMessagesThrow) {
    Pair p;
    PakeResponder r(p.joiner, "joiner", "11112222");
    std::vector<uint8_t> junk = {1, 0, 0};
    EXPECT_THROW(r.on_hello(junk), tandem::Error);
    auto hello = PakeInitiator(p.coordinator, "c", "11112222").hello();
    hello.push_back(0);
    EXPECT_THROW(parse_pair_hello(hello), tandem::Error);
    EXPECT_THROW(PakeInitiator(p.coordinator, "c", "1234"), tandem::Error);
    EXPECT_THROW(normalize_pairing_code("1234-567a"), tandem::Error);
}

TEST(NetPairing, CodesAreEightRandomDigits) {
    std::string a = generate_pairing_code(), b = generate_pairing_code();
    EXPECT_EQ(a.size(), 8u);
    EXPECT_EQ(a.find_first_not_of("0123456789"), std::string::npos);
    EXPECT_EQ(normalize_pairing_code(format_pairing_code(a)), a);
    // Two equal codes in a row happen once in 10^8.
    EXPECT_NE(a, b);
}

TEST(NetPairingGate, FiveWrongCodesBurnTheCodeAndLock) {
    PairingGate gate({std::chrono::seconds(300), 5, std::chrono::seconds(2)});
    auto code = gate.current_code();
    ASSERT_TRUE(code);
    for (int k = 0; k < 5; ++k) {
        std::string why;
        auto c = gate.begin_attempt(&why);
        ASSERT_TRUE(c) << why;
        EXPECT_EQ(*c, *code);
        gate.end_attempt(PairingGate::Outcome::WrongCode);
    }
    std::string why;
    EXPECT_FALSE(gate.begin_attempt(&why));
    EXPECT_NE(why.find("locked"), std::string::npos) << why;
    EXPECT_FALSE(gate.current_code());
    std::this_thread::sleep_for(std::chrono::milliseconds(2100));
    auto fresh = gate.current_code();
    ASSERT_TRUE(fresh);
    EXPECT_EQ(gate.attempts_left(), 5);
}

TEST(NetPairingGate, CodeIsOneTimeAndAbortsDoNotCount) {
    PairingGate gate;
    auto code = *gate.current_code();
    ASSERT_TRUE(gate.begin_attempt(nullptr));
    std::string why;
    EXPECT_FALSE(gate.begin_attempt(&why)) << "only one attempt at a time";
    gate.end_attempt(PairingGate::Outcome::Aborted);
    EXPECT_EQ(gate.attempts_left(), 5);
    ASSERT_TRUE(gate.begin_attempt(nullptr));
    gate.end_attempt(PairingGate::Outcome::Paired);
    EXPECT_NE(*gate.current_code(), code);
}

TEST(NetPairingGate, CodeExpires) {
    PairingGate gate({std::chrono::seconds(1), 5, std::chrono::seconds(60)});
    auto a = *gate.current_code();
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    EXPECT_NE(*gate.current_code(), a);
}

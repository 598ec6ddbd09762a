// Beacon encoding: round trip, signature binding, size limits, every truncation rejected.
#include <gtest/gtest.h>

#include "tandem/net/beacon.h"
#include "tandem/net/net_version.h"

using namespace tandem::net;

namespace {
Beacon sample() {
    Beacon b;
    b.name = "workstation";
    b.app_version = "0.1.0";
    b.protocol_version = kProtocolVersion;
    b.accepts_pairing = true;
    b.tcp_port = 47401;
    b.rdma = true;
    b.rdma_gid[15] = 7;
    b.sequence = 12345;
    b.backends = {{"cpu", {{"AMD Ryzen", 1ull << 34, 1ull << 35}}},
                  {"vulkan", {{"Radeon 8060S", 5ull << 30, 8ull << 30}, {"llvmpipe", 1, 2}}}};
    return b;
}
}  // namespace

TEST(NetBeacon, RoundTripCarriesEveryField) {
    Identity id = Identity::generate();
    Beacon b = sample();
    auto bytes = encode_beacon(b, id);
    EXPECT_LE(bytes.size(), kMaxBeaconSize);
    Beacon back = parse_beacon(bytes);
    b.keys = id.public_keys();
    EXPECT_EQ(back, b);
    EXPECT_EQ(back.node_id(), id.node_id());
}

TEST(NetBeacon, AnyFlippedBitIsRejected) {
    Identity id = Identity::generate();
    auto bytes = encode_beacon(sample(), id);
    for (size_t i = 0; i < bytes.size(); ++i) {
        auto bad = bytes;
        bad[i] ^= 0x01;
        EXPECT_THROW(parse_beacon(bad), tandem::Error) << "byte " << i;
    }
}

TEST(NetBeacon, EveryTruncationIsRejected) {
    Identity id = Identity::generate();
    auto bytes = encode_beacon(sample(), id);
    for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_THROW(parse_beacon(std::span(bytes).first(n)), tandem::Error) << n;
}

TEST(NetBeacon, ForgedKeysCannotClaimAnotherNodesSignature) {
    Identity real = Identity::generate(), forger = Identity::generate();
    auto bytes = encode_beacon(sample(), forger);
    // Put the real node's keys into the forger's beacon: the signature no longer verifies.
    std::copy(real.public_keys().sign_pk.begin(), real.public_keys().sign_pk.end(),
              bytes.begin() + 5);
    std::copy(real.public_keys().kx_pk.begin(), real.public_keys().kx_pk.end(), bytes.begin() + 37);
    try {
        parse_beacon(bytes);
        FAIL();
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("signature"), std::string::npos) << e.what();
    }
}

TEST(NetBeacon, TooManyDevicesIsAnErrorNotATruncation) {
    Identity id = Identity::generate();
    Beacon b = sample();
    b.backends[0].devices.assign(17, {"dev", 1, 1});
    EXPECT_THROW(encode_beacon(b, id), tandem::Error);
    b.backends[0].devices.assign(16, {std::string(200, 'x'), 1, 1});
    EXPECT_THROW(encode_beacon(b, id), tandem::Error);  // > kMaxBeaconSize
}

TEST(NetBeacon, GarbageIsRejectedWithMessage) {
    std::vector<uint8_t> junk(100, 0x41);
    try {
        parse_beacon(junk);
        FAIL();
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("beacon"), std::string::npos);
    }
}

// TcpTransport framing against a raw socket peer: hand-written frames are read back, and a
// corrupt length or a peer that dies mid-message ends in a clear error, never a hang or a huge
// allocation.
#include <gtest/gtest.h>

#include "tandem/net/transport.h"

namespace tandem::test {
namespace {

struct RawPair {
    net::Socket raw;
    std::unique_ptr<net::Transport> transport;
};

RawPair raw_pair(size_t max_message = size_t(1) << 30) {
    auto [client, server] = net::socket_loopback_pair();
    net::TcpOptions o;
    o.max_message = max_message;
    return {std::move(client), net::make_tcp_transport(std::move(server), o)};
}

TEST(TcpFraming, LittleEndianLengthThenBytes) {
    auto p = raw_pair();
    const std::vector<uint8_t> frame = {3, 0, 0, 0, 'a', 'b', 'c', 0, 0, 0, 0};  // "abc", then ""
    p.raw.write_all(frame, net::Clock::now() + net::Millis(1000));
    std::vector<uint8_t> got;
    p.transport->recv(got, net::Millis(1000));
    EXPECT_EQ(got, (std::vector<uint8_t>{'a', 'b', 'c'}));
    p.transport->recv(got, net::Millis(1000));
    EXPECT_TRUE(got.empty());
    p.transport->send(std::vector<uint8_t>{9, 8}, net::Millis(1000));
    std::vector<uint8_t> raw(6);
    p.raw.read_exact(raw, net::Clock::now() + net::Millis(1000));
    EXPECT_EQ(raw, (std::vector<uint8_t>{2, 0, 0, 0, 9, 8}));
}

TEST(TcpFraming, CorruptLengthIsRefused) {
    auto p = raw_pair(1 << 20);
    const std::vector<uint8_t> frame = {0xff, 0xff, 0xff, 0x7f};
    p.raw.write_all(frame, net::Clock::now() + net::Millis(1000));
    std::vector<uint8_t> got;
    try {
        p.transport->recv(got, net::Millis(1000));
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("exceeds the limit"), std::string::npos) << e.what();
    }
}

TEST(TcpFraming, PeerDyingMidMessageIsAnErrorNotAHang) {
    auto p = raw_pair();
    const std::vector<uint8_t> frame = {100, 0, 0, 0, 1, 2, 3};  // 100 announced, 3 sent
    p.raw.write_all(frame, net::Clock::now() + net::Millis(1000));
    p.raw.close();
    std::vector<uint8_t> got;
    EXPECT_THROW(p.transport->recv(got, net::Millis(1000)), Error);
}

TEST(TcpFraming, SilentPeerTimesOut) {
    auto p = raw_pair();
    std::vector<uint8_t> got;
    EXPECT_THROW(p.transport->recv(got, net::Millis(100)), net::TimeoutError);
}

}  // namespace
}  // namespace tandem::test

// What encryption costs per all-reduce exchange: echo round trips of all-reduce-sized messages
// over loopback TCP, through a paired SecureChannel and through a PlainChannel baseline. Prints
// the medians; asserts the data, not the timing (shared CI machines are noisy).
#include <gtest/gtest.h>

#include <algorithm>

#include "net_test_util.h"
#include "tandem/net/pairing_session.h"

using namespace tandem::net;
using namespace tandem::net::test;

namespace {

double median_round_trip_us(MessageChannel& ch, size_t size, int iterations) {
    std::vector<uint8_t> msg(size);
    for (size_t i = 0; i < size; ++i) msg[i] = uint8_t(i * 7);
    std::vector<double> us;
    for (int k = 0; k < iterations; ++k) {
        auto t0 = Clock::now();
        ch.send(msg, Millis(10000));
        auto back = ch.recv(Millis(10000));
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        EXPECT_EQ(back, msg);
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
}

}  // namespace

TEST(NetLatency, EncryptionCostPerAllReduceExchange) {
    Listener plain_listener(0);
    std::thread plain_server([&] {
        Socket s = plain_listener.accept(Millis(5000));
        if (!s.valid()) return;
        PlainChannel ch(std::move(s));
        try {
            for (;;) ch.send(ch.recv(Millis(10000)), Millis(10000));
        } catch (const tandem::Error&) {
        }
    });
    PlainChannel plain(Socket::connect(local(plain_listener.port()), Millis(2000)));

    NodeService coord(loopback_node("latency", "coord")),
        joiner(loopback_node("latency", "joiner"));
    coord.start();
    joiner.start();
    PairedPeer j = pair_with(local(joiner.port()), coord.identity(), "coord",
                             *joiner.pairing_code(), coord.peers());
    auto secure = SecureChannel::connect(local(joiner.port()), coord.identity(), j);

    // 8 KiB: one token's hidden state (4096 x f16); 64 KiB: a small batch; 1 MiB: prefill.
    struct Case {
        size_t size;
        int iterations;
    };
    for (Case c : {Case{8 << 10, 300}, Case{64 << 10, 200}, Case{1 << 20, 30}}) {
        median_round_trip_us(plain, c.size, 10);  // warm up
        median_round_trip_us(*secure, c.size, 10);
        double p = median_round_trip_us(plain, c.size, c.iterations);
        double s = median_round_trip_us(*secure, c.size, c.iterations);
        std::printf(
            "[ latency ] %7zu B round trip: plain %8.1f us, encrypted %8.1f us, cost %+7.1f us "
            "(%.1f us per direction)\n",
            c.size, p, s, s - p, (s - p) / 2);
    }
    plain.close();
    plain_server.join();
}

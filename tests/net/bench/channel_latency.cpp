// Latency of a two-rank all-reduce (each rank sends its f32 vector and adds the one it receives)
// over loopback TCP, through paired SecureChannels and through PlainChannels, so the cost of
// encryption per all-reduce can be read off. Not a test: a standalone program, built by hand
// (see docs/cluster-security.md) so it can run on machines without the full build.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "tandem/net/channel.h"
#include "tandem/net/handshake.h"
#include "tandem/net/record.h"

using namespace tandem::net;

namespace {

// Rank 0 and rank 1 run the same exchange; returns rank 0's median microseconds.
double all_reduce_us(MessageChannel& r0, MessageChannel& r1, size_t floats, int iterations) {
    auto rank = [&](MessageChannel& ch, std::vector<double>* times) {
        std::vector<float> mine(floats, 1.0f);
        for (int k = 0; k < iterations; ++k) {
            auto t0 = Clock::now();
            ch.send({reinterpret_cast<const uint8_t*>(mine.data()), floats * 4}, Millis(10000));
            auto theirs = ch.recv(Millis(10000));
            const float* f = reinterpret_cast<const float*>(theirs.data());
            for (size_t i = 0; i < floats; ++i) mine[i] = 0.5f * (mine[i] + f[i]);
            if (times)
                times->push_back(
                    std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        }
    };
    std::vector<double> times;
    std::thread other([&] { rank(r1, nullptr); });
    rank(r0, &times);
    other.join();
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

}  // namespace

int main() {
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("tandem-latency-" + std::to_string(::getpid()));
    Identity a = Identity::generate(), b = Identity::generate();
    PeerStore b_peers(dir / "peers.json");
    b_peers.add({a.node_id(), "a", a.public_keys(), 0, ""});
    PairedPeer b_as_peer{b.node_id(), "b", b.public_keys(), 0, ""};

    Listener listener(0);
    ReplayCache replays;
    std::unique_ptr<SecureChannel> server;
    std::thread accept_thread([&] {
        Socket s = listener.accept(Millis(5000));
        auto first = read_record(s, Clock::now() + Millis(5000));
        server = SecureChannel::accept(std::move(s), first.body, b, b_peers, replays);
    });
    auto client = SecureChannel::connect({"127.0.0.1", listener.port()}, a, b_as_peer);
    accept_thread.join();

    Listener plain_listener(0);
    std::unique_ptr<PlainChannel> plain_server;
    std::thread plain_accept([&] {
        plain_server = std::make_unique<PlainChannel>(plain_listener.accept(Millis(5000)));
    });
    PlainChannel plain_client(Socket::connect({"127.0.0.1", plain_listener.port()}, Millis(2000)));
    plain_accept.join();

    std::printf("%10s %12s %12s %12s\n", "bytes", "plain us", "encrypted us", "cost us");
    for (size_t floats : {1024u, 4096u, 16384u, 65536u, 262144u}) {
        int it = floats >= 65536 ? 200 : 2000;
        all_reduce_us(plain_client, *plain_server, floats, 50);
        all_reduce_us(*client, *server, floats, 50);
        double p = all_reduce_us(plain_client, *plain_server, floats, it);
        double s = all_reduce_us(*client, *server, floats, it);
        std::printf("%10zu %12.1f %12.1f %+12.1f\n", floats * 4, p, s, s - p);
    }
    fs::remove_all(dir);
    return 0;
}

#include <future>

#include "tandem/net/channel.h"
#include "tandem/net/record.h"

namespace tandem::net {

std::pair<std::unique_ptr<SecureChannel>, std::unique_ptr<SecureChannel>> secure_loopback_pair(
    const Identity& a, const Identity& b, const ChannelOptions& opts) {
    Listener listener(0, "127.0.0.1");
    ReplayCache replays;
    PairedPeer a_as_peer{a.node_id(), "a", a.public_keys(), 0, ""};
    PairedPeer b_as_peer{b.node_id(), "b", b.public_keys(), 0, ""};
    auto server = std::async(std::launch::async, [&]() -> std::unique_ptr<SecureChannel> {
        Socket s = listener.accept(opts.handshake_timeout);
        if (!s.valid()) throw TimeoutError("secure_loopback_pair: no connection");
        auto first = read_record(s, Clock::now() + opts.handshake_timeout);
        auto lookup = [&](const Key32& kx) -> std::optional<PairedPeer> {
            if (kx == a.public_keys().kx_pk) return a_as_peer;
            return std::nullopt;
        };
        return SecureChannel::accept(std::move(s), first.body, b, lookup, replays, opts);
    });
    auto client = SecureChannel::connect({"127.0.0.1", listener.port()}, a, b_as_peer, opts);
    return {std::move(client), server.get()};
}

}  // namespace tandem::net

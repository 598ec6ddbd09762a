#include <cstring>

#include "tandem/common/log.h"
#include "tandem/net/channel.h"
#include "tandem/net/handshake.h"
#include "tandem/net/record.h"

namespace tandem::net {

SecureChannel::SecureChannel(Socket sock, PairedPeer peer, const SessionKeys& keys,
                             const ChannelOptions& opts)
    : sock_(std::move(sock)),
      peer_(std::move(peer)),
      remote_(sock_.peer_address()),
      opts_(opts),
      sealer_(keys.send),
      opener_(keys.recv, opts.max_message),
      session_hash_(keys.handshake_hash) {}

std::unique_ptr<SecureChannel> SecureChannel::connect(const HostPort& to, const Identity& self,
                                                      const PairedPeer& peer,
                                                      const ChannelOptions& opts) {
    return handshake_as_initiator(Socket::connect(to, opts.handshake_timeout), self, peer, opts);
}

std::unique_ptr<SecureChannel> SecureChannel::handshake_as_initiator(Socket sock,
                                                                     const Identity& self,
                                                                     const PairedPeer& peer,
                                                                     const ChannelOptions& opts) {
    auto deadline = Clock::now() + opts.handshake_timeout;
    std::string who = "node " + short_id(peer.node_id) + " at " + sock.peer_address();
    HandshakeInitiator hs(self, peer.keys.kx_pk);
    write_record(sock, RecordKind::Channel, hs.first(), deadline);
    auto second = expect_record(sock, RecordKind::Channel, deadline, who);
    std::vector<uint8_t> third;
    try {
        third = hs.on_second(second);
    } catch (const HandshakeFailed& e) {
        throw HandshakeFailed(who + ": " + e.what());
    }
    write_record(sock, RecordKind::Channel, third, deadline);
    return std::unique_ptr<SecureChannel>(
        new SecureChannel(std::move(sock), peer, hs.keys(), opts));
}

std::unique_ptr<SecureChannel> SecureChannel::accept(Socket sock,
                                                     std::span<const uint8_t> first_body,
                                                     const Identity& self, const PeerStore& peers,
                                                     ReplayCache& replays,
                                                     const ChannelOptions& opts) {
    return accept(std::move(sock), first_body, self,
                  PeerLookup([&peers](const Key32& kx) { return peers.find_by_kx(kx); }), replays,
                  opts);
}

std::unique_ptr<SecureChannel> SecureChannel::accept(
    Socket sock, std::span<const uint8_t> first_body, const Identity& self,
    const PeerLookup& find_peer, ReplayCache& replays, const ChannelOptions& opts) {
    auto deadline = Clock::now() + opts.handshake_timeout;
    std::string from = sock.peer_address();
    auto refuse = [&](RefusalCode code, const std::string& why) -> std::unique_ptr<SecureChannel> {
        log_warn("channel: refused " + from + ": " + why);
        send_refusal(sock, code, why);
        throw RefusedError(code, "channel from " + from + " refused: " + why);
    };
    HandshakeFirstHeader head;
    try {
        head = peek_handshake_first(first_body);
    } catch (const Error& e) {
        return refuse(RefusalCode::BadMessage, e.what());
    }
    auto peer = find_peer(head.initiator_static);
    if (!peer) {
        return refuse(RefusalCode::NotPaired, "key is not paired with this node (pair it first)");
    }
    std::string who = "node " + short_id(peer->node_id) + " (" + peer->name + ") at " + from;
    HandshakeResponder hs(self, peer->keys.kx_pk);
    std::vector<uint8_t> second;
    try {
        second = hs.on_first(first_body);
    } catch (const HandshakeFailed& e) {
        return refuse(RefusalCode::NotPaired, std::string(e.what()) + " [claimed " + who + "]");
    } catch (const Error& e) {
        return refuse(RefusalCode::VersionMismatch, e.what());
    }
    if (!replays.first_use(head.initiator_ephemeral))
        return refuse(RefusalCode::Replay, "replayed handshake message 1 claiming " + who);
    write_record(sock, RecordKind::Channel, second, deadline);
    try {
        auto third = expect_record(sock, RecordKind::Channel, deadline, who);
        hs.on_third(third);
    } catch (const HandshakeFailed& e) {
        return refuse(RefusalCode::Replay, std::string(e.what()) + " [claimed " + who + "]");
    } catch (const TimeoutError&) {
        return refuse(RefusalCode::Replay,
                      "no handshake message 3 within the timeout (replayed or abandoned handshake) "
                      "[claimed " +
                          who + "]");
    } catch (const Error& e) {
        log_warn("channel: " + who + ": handshake aborted: " + e.what());
        throw;
    }
    log_info("channel: authenticated " + who);
    return std::unique_ptr<SecureChannel>(
        new SecureChannel(std::move(sock), *peer, hs.keys(), opts));
}

void SecureChannel::send(std::span<const uint8_t> message, Millis timeout) {
    std::lock_guard g(send_mutex_);
    if (message.size() > opts_.max_message)
        throw Error("channel " + describe() + ": message of " + std::to_string(message.size()) +
                    " bytes exceeds the limit of " + std::to_string(opts_.max_message));
    auto frame = sealer_.seal(message);
    sock_.write_all(frame, Clock::now() + timeout);
}

std::vector<uint8_t> SecureChannel::recv(Millis timeout) {
    std::lock_guard g(recv_mutex_);
    if (broken_) throw Error("channel " + describe() + ": closed after an earlier error");
    if (!sock_.wait_readable(timeout))
        throw TimeoutError("channel " + describe() + ": no message within " +
                           std::to_string(timeout.count()) + " ms");
    try {
        auto deadline = Clock::now() + std::max(timeout, opts_.frame_timeout);
        std::array<uint8_t, kFrameHeader> header;
        sock_.read_exact(header, deadline);
        std::vector<uint8_t> body(opener_.body_length(header));
        sock_.read_exact(body, deadline);
        return opener_.open(header, body);
    } catch (const ClosedError&) {
        broken_ = true;
        throw;
    } catch (const Error& e) {
        // A frame that fails is a stream we can no longer trust: close it.
        broken_ = true;
        log_warn("channel " + describe() + ": " + e.what() + "; closing");
        sock_.shutdown();
        throw;
    }
}

void SecureChannel::close() {
    sock_.shutdown();
}

std::string SecureChannel::describe() const {
    return short_id(peer_.node_id) + "@" + remote_;
}

PlainChannel::PlainChannel(Socket sock, const ChannelOptions& opts)
    : sock_(std::move(sock)), remote_(sock_.peer_address()), opts_(opts) {}

void PlainChannel::send(std::span<const uint8_t> message, Millis timeout) {
    std::vector<uint8_t> buf(4 + message.size());
    size_t n = message.size();
    buf[0] = uint8_t(n >> 24), buf[1] = uint8_t(n >> 16), buf[2] = uint8_t(n >> 8),
    buf[3] = uint8_t(n);
    std::memcpy(buf.data() + 4, message.data(), n);
    sock_.write_all(buf, Clock::now() + timeout);
}

std::vector<uint8_t> PlainChannel::recv(Millis timeout) {
    if (!sock_.wait_readable(timeout))
        throw TimeoutError("plain channel: no message within timeout");
    auto deadline = Clock::now() + std::max(timeout, opts_.frame_timeout);
    std::array<uint8_t, 4> h;
    sock_.read_exact(h, deadline);
    size_t n = size_t(h[0]) << 24 | size_t(h[1]) << 16 | size_t(h[2]) << 8 | h[3];
    if (n > opts_.max_message) throw Error("plain channel: message too large");
    std::vector<uint8_t> body(n);
    if (n) sock_.read_exact(body, deadline);
    return body;
}

}  // namespace tandem::net

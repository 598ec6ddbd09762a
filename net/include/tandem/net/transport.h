#pragma once
// The message transport the tensor-parallel collectives run over: one connected, ordered,
// reliable message stream between two ranks. Implementations: plain TCP with its own framing
// (TcpTransport), any MessageChannel such as the paired, encrypted SecureChannel
// (ChannelTransport), and a delay-injecting wrapper that simulates a slower link.
//
// send() and recv() may run on two threads at once (one sender, one receiver). recv() fills a
// caller-owned buffer so a decode step allocates nothing once buffers have grown.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tandem/net/socket.h"

namespace tandem::net {

class MessageChannel;

class Transport {
  public:
    virtual ~Transport() = default;
    // Throws TimeoutError when the peer does not take the message in time.
    virtual void send(std::span<const uint8_t> message, Millis timeout) = 0;
    // Replaces `out` with the next message. Throws TimeoutError when none arrives in time,
    // ClosedError when the peer closed, Error on a broken stream.
    virtual void recv(std::vector<uint8_t>& out, Millis timeout) = 0;
    virtual void close() = 0;
    virtual std::string describe() const = 0;
};

struct TcpOptions {
    size_t max_message = size_t(1) << 30;
    // Spin on a non-blocking read this long before sleeping in poll (0: always poll). Costs a
    // core while waiting; saves the wake-up latency of a blocking read.
    std::chrono::microseconds busy_poll{0};
};

// Length-prefixed messages (u32 little-endian length, then the bytes) over a TCP socket with
// TCP_NODELAY. No encryption: for a trusted LAN with a shared secret (see tcp_mesh.h).
std::unique_ptr<Transport> make_tcp_transport(Socket sock, const TcpOptions& opts = {});

// Adapter: any MessageChannel (PlainChannel now, SecureChannel once pairing is in use) as a
// Transport.
std::unique_ptr<Transport> make_channel_transport(std::unique_ptr<MessageChannel> channel);

// Simulation of a slower link: every send() waits `one_way` (busy-waiting, so microsecond
// delays are honoured) before handing the message to `inner`.
std::unique_ptr<Transport> make_delay_transport(std::unique_ptr<Transport> inner,
                                                std::chrono::microseconds one_way);

// Two connected sockets over 127.0.0.1, {client, server} (for tests and benchmarks). Throws
// tandem::Error when they do not connect within 5 s.
std::pair<Socket, Socket> socket_loopback_pair();

// Two connected TCP transports over 127.0.0.1 (for tests and benchmarks).
std::pair<std::unique_ptr<Transport>, std::unique_ptr<Transport>> tcp_loopback_pair(
    const TcpOptions& opts = {});

}  // namespace tandem::net

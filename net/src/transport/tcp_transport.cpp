// Length-prefixed messages over TCP, reading straight into the caller's buffer.
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <thread>

#include "tandem/net/transport.h"

namespace tandem::net {
namespace {

class TcpTransport : public Transport {
  public:
    TcpTransport(Socket sock, const TcpOptions& opts)
        : sock_(std::move(sock)), remote_(sock_.peer_address()), opts_(opts) {}

    void send(std::span<const uint8_t> message, Millis timeout) override {
        if (message.size() > opts_.max_message)
            throw Error("tcp transport to " + remote_ + ": message of " +
                        std::to_string(message.size()) + " bytes exceeds the limit");
        // One write per message: with TCP_NODELAY a separate header would be its own segment.
        send_buf_.resize(4 + message.size());
        const auto n = static_cast<uint32_t>(message.size());
        for (int i = 0; i < 4; ++i) send_buf_[i] = uint8_t(n >> (8 * i));
        if (!message.empty()) std::memcpy(send_buf_.data() + 4, message.data(), message.size());
        sock_.write_all(send_buf_, Clock::now() + timeout);
    }

    void recv(std::vector<uint8_t>& out, Millis timeout) override {
        const auto deadline = Clock::now() + timeout;
        if (opts_.busy_poll.count() > 0) spin_until_readable();
        std::array<uint8_t, 4> h{};
        sock_.read_exact(h, deadline);
        const uint32_t n =
            uint32_t(h[0]) | uint32_t(h[1]) << 8 | uint32_t(h[2]) << 16 | uint32_t(h[3]) << 24;
        if (n > opts_.max_message)
            throw Error("tcp transport from " + remote_ + ": message length " + std::to_string(n) +
                        " exceeds the limit (corrupt stream?)");
        out.resize(n);
        if (n) sock_.read_exact(out, deadline);
    }

    void close() override { sock_.shutdown(); }
    std::string describe() const override { return "tcp " + remote_; }

  private:
    void spin_until_readable() {
        const auto until = Clock::now() + opts_.busy_poll;
        pollfd p{sock_.fd(), POLLIN, 0};
        while (Clock::now() < until)
            if (::poll(&p, 1, 0) > 0) return;
    }

    Socket sock_;
    std::string remote_;
    TcpOptions opts_;
    std::vector<uint8_t> send_buf_;
};

}  // namespace

std::unique_ptr<Transport> make_tcp_transport(Socket sock, const TcpOptions& opts) {
    return std::make_unique<TcpTransport>(std::move(sock), opts);
}

std::pair<Socket, Socket> socket_loopback_pair() {
    Listener listener(0, "127.0.0.1");
    Socket client;
    std::thread connector([&] {
        client = Socket::connect({"127.0.0.1", listener.port()}, Millis(5000));
    });
    Socket server = listener.accept(Millis(5000));
    connector.join();
    if (!server.valid() || !client.valid()) throw Error("loopback pair: could not connect");
    return {std::move(client), std::move(server)};
}

std::pair<std::unique_ptr<Transport>, std::unique_ptr<Transport>> tcp_loopback_pair(
    const TcpOptions& opts) {
    auto [client, server] = socket_loopback_pair();
    return {make_tcp_transport(std::move(client), opts),
            make_tcp_transport(std::move(server), opts)};
}

}  // namespace tandem::net

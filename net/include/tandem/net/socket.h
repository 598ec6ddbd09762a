#pragma once
// Blocking TCP sockets with deadlines: every read and write waits at most until a deadline, so a
// silent or slow peer ends in a TimeoutError instead of a hang.
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tandem/common/error.h"

namespace tandem::net {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

class TimeoutError : public Error {
  public:
    using Error::Error;
};
// The peer closed the connection cleanly (EOF at a message boundary).
class ClosedError : public Error {
  public:
    using Error::Error;
};

struct HostPort {
    std::string host;  // "10.0.0.2", "fe80::1%veth0", "node.local"
    uint16_t port = 0;
    std::string str() const;  // "[fe80::1%veth0]:47401"
};
// "host:port", "[v6]:port", or "host" (then default_port). Throws on a bad port.
HostPort parse_host_port(std::string_view text, uint16_t default_port);

class Socket {
  public:
    Socket() = default;
    explicit Socket(int fd);
    ~Socket();
    Socket(Socket&& o) noexcept;
    Socket& operator=(Socket&& o) noexcept;
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;

    // Resolves and connects (any address family) within `timeout`; TCP_NODELAY on.
    static Socket connect(const HostPort& to, Millis timeout);

    void write_all(std::span<const uint8_t> data, Clock::time_point deadline);
    // Reads exactly data.size() bytes. EOF before the first byte throws ClosedError, EOF in the
    // middle throws Error (truncated), no data by the deadline throws TimeoutError.
    void read_exact(std::span<uint8_t> data, Clock::time_point deadline);
    // Waits until readable; false on timeout.
    bool wait_readable(Millis timeout) const;
    void shutdown();
    void close();
    int fd() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    std::string peer_address() const;  // "10.0.0.2:5555"

  private:
    int fd_ = -1;
};

class Listener {
  public:
    // Dual-stack [::]:port when IPv6 is available, else 0.0.0.0:port. Port 0 picks a free one.
    explicit Listener(uint16_t port, const std::string& bind_host = "");
    ~Listener();
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;
    uint16_t port() const { return port_; }
    // An invalid Socket on timeout or after close().
    Socket accept(Millis timeout);
    void close();

  private:
    int fd_ = -1;
    uint16_t port_ = 0;
};

std::string sockaddr_to_string(const void* sockaddr, bool with_port = true);

}  // namespace tandem::net

#include "tandem/net/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tandem::net {

namespace {

int remaining_ms(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
    if (left < 0) return 0;
    return left > 1'000'000 ? 1'000'000 : int(left);
}

// Waits for `events` on fd until the deadline; false on timeout.
bool wait_for(int fd, short events, Clock::time_point deadline) {
    for (;;) {
        pollfd p{fd, events, 0};
        int rc = ::poll(&p, 1, remaining_ms(deadline));
        if (rc > 0) return true;
        if (rc == 0) return false;
        if (errno != EINTR) throw Error(std::string("poll: ") + std::strerror(errno));
    }
}

}  // namespace

std::string HostPort::str() const {
    if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
}

HostPort parse_host_port(std::string_view text, uint16_t default_port) {
    HostPort hp;
    std::string_view port_text;
    if (!text.empty() && text.front() == '[') {
        auto close = text.find(']');
        if (close == std::string_view::npos)
            throw Error("address '" + std::string(text) + "': missing ']'");
        hp.host = std::string(text.substr(1, close - 1));
        auto rest = text.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':')
                throw Error("address '" + std::string(text) + "': expected ':' after ']'");
            port_text = rest.substr(1);
        }
    } else {
        auto colon = text.rfind(':');
        // More than one colon without brackets is a bare IPv6 address.
        if (colon != std::string_view::npos && text.find(':') == colon) {
            hp.host = std::string(text.substr(0, colon));
            port_text = text.substr(colon + 1);
        } else {
            hp.host = std::string(text);
        }
    }
    if (hp.host.empty()) throw Error("address '" + std::string(text) + "': empty host");
    if (port_text.empty()) {
        hp.port = default_port;
    } else {
        unsigned long v = 0;
        for (char c : port_text) {
            if (c < '0' || c > '9' || v > 65535)
                throw Error("address '" + std::string(text) + "': bad port '" +
                            std::string(port_text) + "'");
            v = v * 10 + unsigned(c - '0');
        }
        if (v == 0 || v > 65535)
            throw Error("address '" + std::string(text) + "': port out of range");
        hp.port = uint16_t(v);
    }
    return hp;
}

std::string sockaddr_to_string(const void* sa_ptr, bool with_port) {
    auto* sa = static_cast<const sockaddr*>(sa_ptr);
    char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 2] = {};
    if (sa->sa_family == AF_INET) {
        auto* in = static_cast<const sockaddr_in*>(sa_ptr);
        inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
        return with_port ? std::string(buf) + ":" + std::to_string(ntohs(in->sin_port))
                         : std::string(buf);
    }
    if (sa->sa_family == AF_INET6) {
        auto* in6 = static_cast<const sockaddr_in6*>(sa_ptr);
        // A v4-mapped address (dual-stack listener) reads better as plain IPv4.
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
            inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], buf, sizeof buf);
            return with_port ? std::string(buf) + ":" + std::to_string(ntohs(in6->sin6_port))
                             : std::string(buf);
        }
        inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
        std::string host = buf;
        if (in6->sin6_scope_id) {
            char ifname[IF_NAMESIZE] = {};
            if (if_indextoname(in6->sin6_scope_id, ifname))
                host += std::string("%") + ifname;
            else
                host += "%" + std::to_string(in6->sin6_scope_id);
        }
        return with_port ? "[" + host + "]:" + std::to_string(ntohs(in6->sin6_port)) : host;
    }
    return "?";
}

Socket::Socket(int fd) : fd_(fd) {}
Socket::~Socket() {
    close();
}
Socket::Socket(Socket&& o) noexcept : fd_(o.fd_) {
    o.fd_ = -1;
}
Socket& Socket::operator=(Socket&& o) noexcept {
    if (this != &o) {
        close();
        fd_ = o.fd_;
        o.fd_ = -1;
    }
    return *this;
}

void Socket::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

void Socket::shutdown() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Socket Socket::connect(const HostPort& to, Millis timeout) {
    auto deadline = Clock::now() + timeout;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* res = nullptr;
    std::string port = std::to_string(to.port);
    int rc = ::getaddrinfo(to.host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0) throw Error("cannot resolve '" + to.host + "': " + gai_strerror(rc));
    std::string last_error = "no address";
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                          ai->ai_protocol);
        if (fd < 0) continue;
        Socket s(fd);
        if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            if (errno != EINPROGRESS) {
                last_error = std::strerror(errno);
                continue;
            }
            if (!wait_for(fd, POLLOUT, deadline)) {
                last_error = "timed out";
                continue;
            }
            int err = 0;
            socklen_t len = sizeof err;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err != 0) {
                last_error = std::strerror(err);
                continue;
            }
        }
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::freeaddrinfo(res);
        return s;
    }
    ::freeaddrinfo(res);
    if (last_error == "timed out")
        throw TimeoutError("connect to " + to.str() + ": timed out after " +
                           std::to_string(timeout.count()) + " ms");
    throw Error("connect to " + to.str() + ": " + last_error);
}

void Socket::write_all(std::span<const uint8_t> data, Clock::time_point deadline) {
    size_t done = 0;
    while (done < data.size()) {
        ssize_t n =
            ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            done += size_t(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_for(fd_, POLLOUT, deadline))
                throw TimeoutError("send to " + peer_address() + ": timed out");
            continue;
        }
        throw Error("send to " + peer_address() + ": " + std::strerror(errno));
    }
}

void Socket::read_exact(std::span<uint8_t> data, Clock::time_point deadline) {
    size_t done = 0;
    while (done < data.size()) {
        ssize_t n = ::recv(fd_, data.data() + done, data.size() - done, MSG_DONTWAIT);
        if (n > 0) {
            done += size_t(n);
            continue;
        }
        if (n == 0) {
            if (done == 0) throw ClosedError("connection closed by " + peer_address());
            throw Error("connection closed by " + peer_address() + " in the middle of a message");
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!wait_for(fd_, POLLIN, deadline))
                throw TimeoutError("receive from " + peer_address() + ": timed out");
            continue;
        }
        throw Error("receive from " + peer_address() + ": " + std::strerror(errno));
    }
}

bool Socket::wait_readable(Millis timeout) const {
    return wait_for(fd_, POLLIN, Clock::now() + timeout);
}

std::string Socket::peer_address() const {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (fd_ < 0 || ::getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
        return "(unconnected)";
    return sockaddr_to_string(&ss);
}

Listener::Listener(uint16_t port, const std::string& bind_host) {
    auto try_bind = [&](int family) -> bool {
        int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return false;
        int one = 1, zero = 0;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_storage ss{};
        socklen_t len = 0;
        if (family == AF_INET6) {
            ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
            auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
            a->sin6_family = AF_INET6;
            a->sin6_port = htons(port);
            a->sin6_addr = in6addr_any;
            if (!bind_host.empty() && inet_pton(AF_INET6, bind_host.c_str(), &a->sin6_addr) != 1) {
                ::close(fd);
                return false;
            }
            len = sizeof *a;
        } else {
            auto* a = reinterpret_cast<sockaddr_in*>(&ss);
            a->sin_family = AF_INET;
            a->sin_port = htons(port);
            a->sin_addr.s_addr = htonl(INADDR_ANY);
            if (!bind_host.empty() && inet_pton(AF_INET, bind_host.c_str(), &a->sin_addr) != 1) {
                ::close(fd);
                return false;
            }
            len = sizeof *a;
        }
        if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 64) != 0) {
            ::close(fd);
            return false;
        }
        len = sizeof ss;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
        port_ = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                         : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
        fd_ = fd;
        return true;
    };
    if (!try_bind(AF_INET6) && !try_bind(AF_INET))
        throw Error("cannot listen on TCP port " + std::to_string(port) + ": " +
                    std::strerror(errno));
}

Listener::~Listener() {
    close();
}

void Listener::close() {
    if (fd_ >= 0) {
        ::shutdown(fd_, SHUT_RDWR);
        ::close(fd_);
    }
    fd_ = -1;
}

Socket Listener::accept(Millis timeout) {
    if (fd_ < 0) return Socket();
    pollfd p{fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, int(timeout.count()));
    if (rc <= 0 || fd_ < 0) return Socket();
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return Socket();
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return Socket(fd);
}

}  // namespace tandem::net

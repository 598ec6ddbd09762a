// Accepting connections and writing responses. Each connection has its own thread (capped), so
// a slow client never blocks another; generation itself is serialised elsewhere (the API's queue).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "tandem/server/http.h"

namespace tandem::server {

namespace {

bool write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
}

std::string head(int status, std::string_view content_type, size_t length, bool keep_alive,
                 const std::vector<std::pair<std::string, std::string>>& extra, bool events) {
    std::string h = "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) + "\r\n";
    h += "Content-Type: " + std::string(content_type) + "\r\n";
    if (events)
        h += "Cache-Control: no-cache\r\nConnection: close\r\n";
    else
        h += "Content-Length: " + std::to_string(length) +
             "\r\nConnection: " + (keep_alive ? "keep-alive" : "close") + "\r\n";
    for (const auto& [k, v] : extra) h += k + ": " + v + "\r\n";
    return h + "\r\n";
}

class SocketResponder : public HttpResponder {
  public:
    SocketResponder(int fd, bool keep_alive) : fd_(fd), keep_alive_(keep_alive) {}

    void send(int status, std::string_view content_type, std::string_view body,
              const std::vector<std::pair<std::string, std::string>>& extra) override {
        if (responded_) return;
        responded_ = true;
        ok_ = write_all(fd_, head(status, content_type, body.size(), keep_alive_, extra, false)) &&
              write_all(fd_, body);
    }
    bool start_events(const std::vector<std::pair<std::string, std::string>>& extra) override {
        if (responded_) return false;
        responded_ = true;
        streamed_ = true;
        ok_ = write_all(fd_, head(200, "text/event-stream", 0, false, extra, true));
        return ok_;
    }
    bool event(std::string_view payload) override {
        if (!streamed_ || !ok_) return false;
        std::string chunk = "data: ";
        chunk.append(payload);
        chunk += "\n\n";
        ok_ = write_all(fd_, chunk);
        return ok_;
    }
    // The connection may serve another request only after a whole, non-streamed response.
    bool reusable() const { return responded_ && ok_ && !streamed_ && keep_alive_; }
    bool responded() const { return responded_; }

  private:
    int fd_;
    bool keep_alive_;
    bool responded_ = false, streamed_ = false, ok_ = true;
};

}  // namespace

HttpServer::HttpServer(const std::string& host, uint16_t port, HttpLimits limits,
                       HttpHandler handler)
    : limits_(limits), handler_(std::move(handler)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1)
        throw Error("serve: bad listen address '" + host + "' (an IPv4 address, e.g. 127.0.0.1)");
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw Error(std::string("serve: socket: ") + std::strerror(errno));
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 128) != 0) {
        const std::string why = std::strerror(errno);
        ::close(listen_fd_);
        throw Error("serve: cannot listen on " + host + ":" + std::to_string(port) + ": " + why);
    }
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
}

HttpServer::~HttpServer() {
    stop();
}

void HttpServer::stop() {
    if (stopping_.exchange(true)) return;
    if (acceptor_.joinable()) acceptor_.join();
    ::close(listen_fd_);
    std::map<int, std::thread> open;
    {
        std::lock_guard lock(mu_);
        for (auto& [fd, t] : connections_) ::shutdown(fd, SHUT_RDWR);
        open.swap(connections_);
    }
    for (auto& [fd, t] : open) t.join();
    std::lock_guard lock(mu_);
    for (auto& t : finished_) t.join();
    finished_.clear();
}

void HttpServer::accept_loop() {
    while (!stopping_) {
        {
            std::vector<std::thread> done;
            {
                std::lock_guard lock(mu_);
                done.swap(finished_);
            }
            for (auto& t : done) t.join();
        }
        pollfd p{listen_fd_, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        timeval tv{limits_.read_timeout_ms / 1000, (limits_.read_timeout_ms % 1000) * 1000};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (active_ >= limits_.max_connections) {
            SocketResponder r(fd, false);
            const std::string body =
                R"({"error":{"message":"too many open connections","type":"server_error","param":null,"code":"too_many_connections"}})";
            r.send(503, "application/json", body, {{"Retry-After", "1"}});
            ::close(fd);
            continue;
        }
        ++active_;
        std::lock_guard lock(mu_);
        connections_[fd] = std::thread([this, fd] { serve_connection(fd); });
    }
}

void HttpServer::serve_connection(int fd) {
    std::string buffer;
    auto read_more = [&](std::string& buf) -> size_t {
        char chunk[8192];
        for (;;) {
            if (stopping_) return 0;
            const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return 0;
            buf.append(chunk, static_cast<size_t>(n));
            return static_cast<size_t>(n);
        }
    };
    for (;;) {
        HttpRequest req;
        ParseFailure failure;
        if (!read_request(buffer, read_more, limits_, req, failure)) {
            if (failure.status != 0) {
                SocketResponder r(fd, false);
                const nlohmann::json e = {{"message", failure.message},
                                          {"type", "invalid_request_error"},
                                          {"param", nullptr},
                                          {"code", nullptr}};
                r.send(failure.status, "application/json", nlohmann::json{{"error", e}}.dump(), {});
            }
            break;
        }
        SocketResponder r(fd, req.keep_alive());
        try {
            handler_(req, r);
        } catch (const std::exception& e) {
            log_error(std::string("serve: handler failed: ") + e.what());
        }
        if (!r.responded())
            r.send(
                500, "application/json",
                R"({"error":{"message":"internal error","type":"server_error","param":null,"code":null}})",
                {});
        if (!r.reusable()) break;
    }
    {
        // Leave the map before the fd is closed: once closed, accept() may hand out the same
        // number for a new connection.
        std::lock_guard lock(mu_);
        auto it = connections_.find(fd);
        if (it != connections_.end()) {  // absent while stop() joins it
            finished_.push_back(std::move(it->second));
            connections_.erase(it);
        }
    }
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
    --active_;
}

}  // namespace tandem::server

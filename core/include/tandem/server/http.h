#pragma once
// A small HTTP/1.1 server on POSIX sockets for the local API: strict limits on the request line,
// headers and body (requests are never chunked), keep-alive, and responses either whole or as a
// server-sent event stream. One thread per connection, at most max_connections of them; a
// connection beyond that gets 503 and is closed.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace tandem::server {

struct HttpLimits {
    size_t max_header_bytes = 16 * 1024;  // request line + headers
    size_t max_headers = 100;
    size_t max_body_bytes = 1 << 20;
    int read_timeout_ms = 30'000;  // idle keep-alive connections close after this
    int max_connections = 64;
};

struct HttpRequest {
    std::string method, target, path, version;
    std::map<std::string, std::string> headers;  // names lower-cased
    std::string body;
    std::string header(const std::string& lower_name) const;
    bool keep_alive() const;
};

// Why a request could not be read: the status to answer with (0: the peer closed or timed out,
// nothing to answer).
struct ParseFailure {
    int status = 0;
    std::string message;
};

// Reads one request from the bytes in `buffer`, pulling more with `read_more` (returns bytes
// appended, 0 on EOF/timeout). Leftover bytes (a pipelined next request) stay in `buffer`.
// Returns false with `failure` filled when the request is malformed or over a limit.
bool read_request(std::string& buffer, const std::function<size_t(std::string&)>& read_more,
                  const HttpLimits& limits, HttpRequest& out, ParseFailure& failure);

const char* status_text(int status);

// What a handler writes to. Either send() once, or start_events() then event()* and end.
class HttpResponder {
  public:
    virtual ~HttpResponder() = default;
    virtual void send(int status, std::string_view content_type, std::string_view body,
                      const std::vector<std::pair<std::string, std::string>>& extra = {}) = 0;
    // Starts a text/event-stream response (the connection closes after it).
    virtual bool start_events(const std::vector<std::pair<std::string, std::string>>& extra) = 0;
    // Writes "data: <payload>\n\n"; false when the client has gone.
    virtual bool event(std::string_view payload) = 0;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponder&)>;

class HttpServer {
  public:
    // Binds host:port (port 0: any free one) and starts accepting. Throws tandem::Error when the
    // address cannot be bound.
    HttpServer(const std::string& host, uint16_t port, HttpLimits limits, HttpHandler handler);
    ~HttpServer();  // stop()
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    uint16_t port() const { return port_; }
    // Stops accepting, shuts the open connections and joins every thread.
    void stop();

  private:
    void accept_loop();
    void serve_connection(int fd);

    HttpLimits limits_;
    HttpHandler handler_;
    int listen_fd_ = -1;
    uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::thread acceptor_;
    std::mutex mu_;
    std::map<int, std::thread> connections_;  // fd -> its thread
    std::vector<std::thread> finished_;       // joined by the acceptor
    std::atomic<int> active_{0};
};

}  // namespace tandem::server

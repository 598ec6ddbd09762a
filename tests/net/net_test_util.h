#pragma once
// Helpers for the net tests: a node service on loopback with its own home, captured log lines,
// and a TCP relay that can alter the bytes it forwards (the man in the middle).
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fixtures.h"
#include "tandem/common/log.h"
#include "tandem/net/node_service.h"

namespace tandem::net::test {

inline NodeConfig loopback_node(const std::string& tag, const std::string& name) {
    NodeConfig cfg;
    cfg.home = tandem::test::temp_dir("net-" + tag) / name;
    cfg.name = name;
    cfg.port = 0;
    cfg.advertise = false;
    cfg.browse = false;
    cfg.channel.handshake_timeout = Millis(2000);
    return cfg;
}

inline HostPort local(uint16_t port) {
    return HostPort{"127.0.0.1", port};
}

// Collects log lines while alive.
class LogCapture {
  public:
    LogCapture() {
        prev_ = set_log_sink([this](LogLevel, std::string_view m) {
            std::lock_guard g(mutex_);
            lines_.emplace_back(m);
        });
    }
    ~LogCapture() { set_log_sink(prev_); }
    bool contains(const std::string& needle) {
        std::lock_guard g(mutex_);
        for (const auto& l : lines_)
            if (l.find(needle) != std::string::npos) return true;
        return false;
    }
    std::string all() {
        std::lock_guard g(mutex_);
        std::string s;
        for (const auto& l : lines_) s += l + "\n";
        return s;
    }
    // Waits up to 3 s for a line (the server logs on its own thread).
    bool wait_for(const std::string& needle) {
        for (int i = 0; i < 300; ++i) {
            if (contains(needle)) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return false;
    }

  private:
    LogSink prev_;
    std::mutex mutex_;
    std::vector<std::string> lines_;
};

// Forwards one connection to `target`; `mutate(stream_offset, byte)` may change bytes going
// from client to server.
class Relay {
  public:
    using Mutate = std::function<uint8_t(size_t offset, uint8_t byte)>;
    Relay(uint16_t target, Mutate mutate)
        : listener_(0), target_(target), mutate_(std::move(mutate)) {
        thread_ = std::thread([this] { run(); });
    }
    ~Relay() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
    }
    uint16_t port() const { return listener_.port(); }

  private:
    void run() {
        Socket client;
        while (!stop_ && !client.valid()) client = listener_.accept(Millis(100));
        if (!client.valid()) return;
        Socket server = Socket::connect(local(target_), Millis(2000));
        size_t offset = 0;
        uint8_t buf[4096];
        while (!stop_) {
            pollfd p[2] = {{client.fd(), POLLIN, 0}, {server.fd(), POLLIN, 0}};
            if (::poll(p, 2, 100) <= 0) continue;
            if (p[0].revents) {
                ssize_t n = ::recv(client.fd(), buf, sizeof buf, 0);
                if (n <= 0) break;
                for (ssize_t i = 0; i < n; ++i) buf[i] = mutate_(offset++, buf[i]);
                if (::send(server.fd(), buf, size_t(n), MSG_NOSIGNAL) != n) break;
            }
            if (p[1].revents) {
                ssize_t n = ::recv(server.fd(), buf, sizeof buf, 0);
                if (n <= 0) break;
                if (::send(client.fd(), buf, size_t(n), MSG_NOSIGNAL) != n) break;
            }
        }
    }
    Listener listener_;
    uint16_t target_;
    Mutate mutate_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace tandem::net::test

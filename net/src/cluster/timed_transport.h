#pragma once
// A Transport that counts how long its caller spent in send() and recv() and when the last
// message arrived: the coordinator's own view of each link, for its health figures. Counters are
// atomics so health() can read them from another thread while a step runs.
#include <atomic>
#include <chrono>
#include <memory>

#include "tandem/net/transport.h"

namespace tandem::net::cluster {

class TimedTransport : public Transport {
  public:
    explicit TimedTransport(std::unique_ptr<Transport> inner) : inner_(std::move(inner)) {}
    void send(std::span<const uint8_t> m, Millis timeout) override {
        const int64_t t0 = now_ns();
        try {
            inner_->send(m, timeout);
        } catch (...) {
            busy_ns_ += now_ns() - t0;
            throw;
        }
        busy_ns_ += now_ns() - t0;
    }
    void recv(std::vector<uint8_t>& out, Millis timeout) override {
        const int64_t t0 = now_ns();
        try {
            inner_->recv(out, timeout);
        } catch (...) {
            busy_ns_ += now_ns() - t0;
            throw;
        }
        const int64_t t1 = now_ns();
        busy_ns_ += t1 - t0;
        last_recv_ns_ = t1;
    }
    void close() override { inner_->close(); }
    std::string describe() const override { return inner_->describe(); }

    // Nanoseconds spent inside send() + recv() so far.
    int64_t busy_ns() const { return busy_ns_.load(std::memory_order_relaxed); }
    // now_ns() when the last recv() returned a message (0: none yet).
    int64_t last_recv_ns() const { return last_recv_ns_.load(std::memory_order_relaxed); }

    static int64_t now_ns() {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }

  private:
    std::unique_ptr<Transport> inner_;
    std::atomic<int64_t> busy_ns_{0};
    std::atomic<int64_t> last_recv_ns_{0};
};

}  // namespace tandem::net::cluster

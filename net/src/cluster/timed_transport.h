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
        Busy busy(busy_ns_);
        inner_->send(m, timeout);
    }
    void recv(std::vector<uint8_t>& out, Millis timeout) override {
        Busy busy(busy_ns_);
        inner_->recv(out, timeout);
        last_recv_ns_ = now_ns();
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
    // Adds the time from its construction to its end (a return or a throw) to `total`.
    class Busy {
      public:
        explicit Busy(std::atomic<int64_t>& total) : total_(total), t0_(now_ns()) {}
        ~Busy() { total_ += now_ns() - t0_; }
        Busy(const Busy&) = delete;
        Busy& operator=(const Busy&) = delete;

      private:
        std::atomic<int64_t>& total_;
        int64_t t0_;
    };

    std::unique_ptr<Transport> inner_;
    std::atomic<int64_t> busy_ns_{0};
    std::atomic<int64_t> last_recv_ns_{0};
};

}  // namespace tandem::net::cluster

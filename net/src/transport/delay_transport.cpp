// Simulated link latency for benchmarks: a fixed one-way delay added to every message.
#include "tandem/net/transport.h"

namespace tandem::net {
namespace {

class DelayTransport : public Transport {
  public:
    DelayTransport(std::unique_ptr<Transport> inner, std::chrono::microseconds d)
        : inner_(std::move(inner)), delay_(d) {}
    void send(std::span<const uint8_t> message, Millis timeout) override {
        // Busy-wait: sleep_for cannot honour 5 us.
        const auto until = Clock::now() + delay_;
        while (Clock::now() < until) {
        }
        inner_->send(message, timeout);
    }
    void recv(std::vector<uint8_t>& out, Millis timeout) override { inner_->recv(out, timeout); }
    void close() override { inner_->close(); }
    std::string describe() const override {
        return inner_->describe() + " (+" + std::to_string(delay_.count()) + " us simulated)";
    }

  private:
    std::unique_ptr<Transport> inner_;
    std::chrono::microseconds delay_;
};

}  // namespace

std::unique_ptr<Transport> make_delay_transport(std::unique_ptr<Transport> inner,
                                                std::chrono::microseconds one_way) {
    return std::make_unique<DelayTransport>(std::move(inner), one_way);
}

}  // namespace tandem::net

#pragma once
// A Transport that forwards to one owned elsewhere (a connection served by another thread, or a
// channel the NodeService owns), calling `on_release` when dropped so the owner can finish.
#include <functional>
#include <memory>

#include "tandem/net/transport.h"

namespace tandem::net::cluster {

class BorrowedTransport : public Transport {
  public:
    BorrowedTransport(Transport& t, std::function<void()> on_release = {})
        : t_(t), on_release_(std::move(on_release)) {}
    ~BorrowedTransport() override {
        if (on_release_) on_release_();
    }
    void send(std::span<const uint8_t> m, Millis timeout) override { t_.send(m, timeout); }
    void recv(std::vector<uint8_t>& out, Millis timeout) override { t_.recv(out, timeout); }
    void close() override { t_.close(); }
    std::string describe() const override { return t_.describe(); }

  private:
    Transport& t_;
    std::function<void()> on_release_;
};

}  // namespace tandem::net::cluster

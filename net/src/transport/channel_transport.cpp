// A MessageChannel (e.g. the paired SecureChannel) used as a Transport: the collectives then run
// encrypted and mutually authenticated without knowing it.
#include "tandem/net/channel.h"
#include "tandem/net/transport.h"

namespace tandem::net {
namespace {

class ChannelTransport : public Transport {
  public:
    explicit ChannelTransport(std::unique_ptr<MessageChannel> c) : channel_(std::move(c)) {}
    void send(std::span<const uint8_t> message, Millis timeout) override {
        channel_->send(message, timeout);
    }
    void recv(std::vector<uint8_t>& out, Millis timeout) override { out = channel_->recv(timeout); }
    void close() override { channel_->close(); }
    std::string describe() const override { return channel_->describe(); }

  private:
    std::unique_ptr<MessageChannel> channel_;
};

}  // namespace

std::unique_ptr<Transport> make_channel_transport(std::unique_ptr<MessageChannel> channel) {
    if (!channel) throw Error("make_channel_transport: no channel");
    return std::make_unique<ChannelTransport>(std::move(channel));
}

}  // namespace tandem::net

#pragma once
// A connected, framed message stream: what the tensor-parallel transports run over. send() and
// recv() may be called from two different threads at once (one sender, one receiver).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <functional>
#include <mutex>
#include <optional>

#include "tandem/net/frame.h"
#include "tandem/net/handshake.h"
#include "tandem/net/peer_store.h"
#include "tandem/net/socket.h"

namespace tandem::net {

class ReplayCache;

class MessageChannel {
  public:
    virtual ~MessageChannel() = default;
    // Throws TimeoutError when the peer does not take the message in time.
    virtual void send(std::span<const uint8_t> message, Millis timeout) = 0;
    // Throws TimeoutError when no message starts arriving within `timeout` (the channel stays
    // usable), ClosedError when the peer closed, Error on a broken or tampered stream.
    virtual std::vector<uint8_t> recv(Millis timeout) = 0;
    virtual void close() = 0;
    virtual std::string describe() const = 0;
};

struct ChannelOptions {
    Millis handshake_timeout{5000};
    // Once a frame has started arriving, the rest must arrive within this.
    Millis frame_timeout{30000};
    size_t max_message = kDefaultMaxMessage;
};

// The encrypted, mutually authenticated channel between two paired nodes.
class SecureChannel : public MessageChannel {
  public:
    // Connects to a paired peer and runs the initiator handshake. Throws RefusedError when the
    // peer refuses (e.g. it does not know us), HandshakeFailed when it cannot prove its key.
    static std::unique_ptr<SecureChannel> connect(const HostPort& to, const Identity& self,
                                                  const PairedPeer& peer,
                                                  const ChannelOptions& opts = {});
    // Runs the responder handshake on an accepted socket whose first Channel record
    // (`first_body`) was already read. Refuses, logs one line naming the reason and throws,
    // for unpaired keys, replays and forgeries.
    static std::unique_ptr<SecureChannel> accept(Socket sock, std::span<const uint8_t> first_body,
                                                 const Identity& self, const PeerStore& peers,
                                                 ReplayCache& replays,
                                                 const ChannelOptions& opts = {});
    // The same with the pinned keys looked up by `find_peer` (X25519 key -> paired peer).
    using PeerLookup = std::function<std::optional<PairedPeer>(const Key32& kx_pk)>;
    static std::unique_ptr<SecureChannel> accept(Socket sock, std::span<const uint8_t> first_body,
                                                 const Identity& self, const PeerLookup& find_peer,
                                                 ReplayCache& replays,
                                                 const ChannelOptions& opts = {});
    // Runs the initiator handshake over an already connected socket (used by connect()).
    static std::unique_ptr<SecureChannel> handshake_as_initiator(Socket sock, const Identity& self,
                                                                 const PairedPeer& peer,
                                                                 const ChannelOptions& opts = {});

    void send(std::span<const uint8_t> message, Millis timeout) override;
    std::vector<uint8_t> recv(Millis timeout) override;
    void close() override;
    std::string describe() const override;

    const PairedPeer& peer() const { return peer_; }
    const std::string& remote_address() const { return remote_; }
    const Key32& session_hash() const { return session_hash_; }

  private:
    SecureChannel(Socket sock, PairedPeer peer, const SessionKeys& keys,
                  const ChannelOptions& opts);
    Socket sock_;
    PairedPeer peer_;
    std::string remote_;
    ChannelOptions opts_;
    FrameSealer sealer_;
    FrameOpener opener_;
    Key32 session_hash_{};
    std::mutex send_mutex_, recv_mutex_;
    bool broken_ = false;
};

// Two nodes that pinned each other, connected over loopback TCP: {a's end, b's end}. For tests
// of code that runs over channels (the tensor-parallel runtime) without a node service.
std::pair<std::unique_ptr<SecureChannel>, std::unique_ptr<SecureChannel>> secure_loopback_pair(
    const Identity& a, const Identity& b, const ChannelOptions& opts = {});

// Length-prefixed frames without encryption: the baseline for measuring what encryption costs.
// Never offered by the node service.
class PlainChannel : public MessageChannel {
  public:
    PlainChannel(Socket sock, const ChannelOptions& opts = {});
    void send(std::span<const uint8_t> message, Millis timeout) override;
    std::vector<uint8_t> recv(Millis timeout) override;
    void close() override { sock_.shutdown(); }
    std::string describe() const override { return "plain " + remote_; }

  private:
    Socket sock_;
    std::string remote_;
    ChannelOptions opts_;
};

}  // namespace tandem::net

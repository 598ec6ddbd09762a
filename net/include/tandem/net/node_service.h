#pragma once
// The node service: advertises this node, browses for others, and answers on one TCP port:
// pairing attempts (while pairing is open), channel handshakes from paired peers (handed to the
// channel handler, e.g. the tensor-parallel runtime), and info requests (manual host:port
// entry). Everything else is refused with one log line. tandem-node and the desktop app run it.
#include <atomic>
#include <filesystem>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "tandem/net/channel.h"
#include "tandem/net/discovery.h"
#include "tandem/net/handshake.h"
#include "tandem/net/pairing.h"
#include "tandem/net/peer_store.h"

namespace tandem::net {

struct NodeConfig {
    std::filesystem::path home;  // identity + peers.json; default_home() when empty
    std::string name;            // host name when empty
    uint16_t port = 47401;       // 0: any free port
    bool accept_pairing = true;
    bool advertise = true;
    bool browse = true;
    DiscoveryConfig discovery;
    PairingPolicy pairing;
    ChannelOptions channel;
    std::vector<BeaconBackend> backends;  // announced in the beacon
    bool rdma = false;
    std::array<uint8_t, 16> rdma_gid{};
    size_t max_connections = 64;  // concurrent connections; more are closed at once
};

class NodeService {
  public:
    // Runs on each authenticated channel, on that connection's own thread.
    using ChannelHandler = std::function<void(SecureChannel&)>;

    explicit NodeService(NodeConfig cfg);
    ~NodeService();
    void set_channel_handler(ChannelHandler handler);
    void start();
    void stop();

    const Identity& identity() const { return identity_; }
    const std::string& name() const { return cfg_.name; }
    const NodeConfig& config() const { return cfg_; }
    uint16_t port() const;
    PeerStore& peers() { return peers_; }
    // The code to show the user while pairing is open (nullopt while closed or locked).
    std::optional<std::string> pairing_code();
    std::vector<DiscoveredPeer> discovered();
    Beacon beacon() const;
    uint64_t beacons_sent() const { return advertiser_ ? advertiser_->sent() : 0; }

  private:
    void accept_loop();
    void serve_connection(Socket sock);
    NodeConfig cfg_;
    Identity identity_;
    PeerStore peers_;
    PairingGate gate_;
    ReplayCache replays_;
    std::unique_ptr<Listener> listener_;
    std::unique_ptr<Advertiser> advertiser_;
    std::unique_ptr<Browser> browser_;
    ChannelHandler handler_;
    std::atomic<bool> stop_{false};
    std::thread accept_thread_;
    struct Connection {
        std::thread thread;
        int fd = -1;
        std::atomic<bool> done{false};
    };
    std::mutex conn_mutex_;
    std::list<Connection> connections_;
};

// An echo handler: sends every message back. tandem-node's default until the tensor-parallel
// runtime installs its own; also what the latency measurements run against.
void echo_handler(SecureChannel& channel);

}  // namespace tandem::net

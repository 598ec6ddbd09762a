#include "tandem/net/node_service.h"

#include <sys/socket.h>
#include <unistd.h>

#include "tandem/common/log.h"
#include "tandem/net/net_version.h"
#include "tandem/net/pairing_session.h"
#include "tandem/net/record.h"
#include "tandem/version.h"

namespace tandem::net {

namespace {

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "tandem-node";
    return buf;
}

NodeConfig resolve(NodeConfig cfg) {
    if (cfg.home.empty()) cfg.home = default_home();
    if (cfg.name.empty()) cfg.name = host_name();
    if (cfg.name.size() > 64) cfg.name.resize(64);
    return cfg;
}

}  // namespace

void echo_handler(SecureChannel& channel) {
    for (;;) {
        std::vector<uint8_t> msg;
        try {
            msg = channel.recv(Millis(60'000));
        } catch (const TimeoutError&) {
            continue;
        } catch (const ClosedError&) {
            return;
        }
        channel.send(msg, Millis(30'000));
    }
}

NodeService::NodeService(NodeConfig cfg)
    : cfg_(resolve(std::move(cfg))),
      identity_(Identity::load_or_create(cfg_.home)),
      peers_(cfg_.home / "peers.json"),
      gate_(cfg_.pairing),
      handler_(echo_handler) {}

NodeService::~NodeService() {
    stop();
}

void NodeService::set_channel_handler(ChannelHandler handler) {
    handler_ = std::move(handler);
}

uint16_t NodeService::port() const {
    return listener_ ? listener_->port() : cfg_.port;
}

Beacon NodeService::beacon() const {
    Beacon b;
    b.keys = identity_.public_keys();
    b.name = cfg_.name;
    b.app_version = tandem::version();
    b.protocol_version = kProtocolVersion;
    b.accepts_pairing = cfg_.accept_pairing;
    b.tcp_port = port();
    b.rdma = cfg_.rdma;
    b.rdma_gid = cfg_.rdma_gid;
    b.backends = cfg_.backends;
    return b;
}

void NodeService::start() {
    stop_ = false;
    listener_ = std::make_unique<Listener>(cfg_.port);
    log_info("node: " + cfg_.name + " id " + identity_.node_id() + " listening on TCP port " +
             std::to_string(listener_->port()) +
             (cfg_.accept_pairing ? ", pairing open" : ", pairing closed"));
    accept_thread_ = std::thread([this] { accept_loop(); });
    if (cfg_.browse) {
        browser_ = std::make_unique<Browser>(cfg_.discovery, identity_.node_id());
        browser_->start();
    }
    if (cfg_.advertise) {
        advertiser_ =
            std::make_unique<Advertiser>(cfg_.discovery, identity_, [this] { return beacon(); });
        advertiser_->start();
    }
}

void NodeService::stop() {
    if (stop_.exchange(true)) return;
    if (advertiser_) advertiser_->stop();
    if (browser_) browser_->stop();
    if (accept_thread_.joinable()) accept_thread_.join();
    if (listener_) listener_->close();
    std::lock_guard g(conn_mutex_);
    for (auto& c : connections_)
        if (c.fd >= 0 && !c.done) ::shutdown(c.fd, SHUT_RDWR);
    for (auto& c : connections_)
        if (c.thread.joinable()) c.thread.join();
    connections_.clear();
}

std::optional<std::string> NodeService::pairing_code() {
    if (!cfg_.accept_pairing) return std::nullopt;
    return gate_.current_code();
}

std::vector<DiscoveredPeer> NodeService::discovered() {
    return browser_ ? browser_->peers() : std::vector<DiscoveredPeer>{};
}

void NodeService::accept_loop() {
    while (!stop_) {
        Socket s = listener_->accept(Millis(200));
        std::lock_guard g(conn_mutex_);
        // Reap finished connections.
        for (auto it = connections_.begin(); it != connections_.end();) {
            if (it->done) {
                it->thread.join();
                it = connections_.erase(it);
            } else {
                ++it;
            }
        }
        if (!s.valid()) continue;
        if (connections_.size() >= cfg_.max_connections) {
            log_warn("node: too many connections; closed one from " + s.peer_address());
            continue;
        }
        Connection& c = connections_.emplace_back();
        c.fd = s.fd();
        c.thread = std::thread([this, &c, sock = std::move(s)]() mutable {
            try {
                serve_connection(std::move(sock));
            } catch (const std::exception& e) {
                log_warn(std::string("node: connection ended: ") + e.what());
            }
            c.done = true;
        });
    }
}

void NodeService::serve_connection(Socket sock) {
    std::string from = sock.peer_address();
    Record first;
    try {
        first = read_record(sock, Clock::now() + cfg_.channel.handshake_timeout);
    } catch (const ClosedError&) {
        return;
    } catch (const Error& e) {
        log_warn("node: refused " + from + ": " + e.what());
        send_refusal(sock, RefusalCode::BadMessage, e.what());
        return;
    }
    switch (first.kind) {
        case RecordKind::Info: {
            write_record(sock, RecordKind::Info, encode_beacon(beacon(), identity_),
                         Clock::now() + cfg_.channel.handshake_timeout);
            return;
        }
        case RecordKind::Pairing: {
            if (!cfg_.accept_pairing) {
                log_warn("pairing: refused " + from + ": this node does not accept pairing");
                send_refusal(sock, RefusalCode::PairingUnavailable,
                             "this node does not accept pairing");
                return;
            }
            serve_pairing(sock, first.body, identity_, cfg_.name, gate_, peers_, Millis(10'000));
            return;
        }
        case RecordKind::Channel: {
            std::unique_ptr<SecureChannel> ch;
            try {
                ch = SecureChannel::accept(std::move(sock), first.body, identity_, peers_, replays_,
                                           cfg_.channel);
            } catch (const RefusedError&) {
                return;  // already logged with its reason
            }
            try {
                if (handler_) handler_(*ch);
            } catch (const std::exception& e) {
                log_warn("channel " + ch->describe() + ": " + e.what());
            }
            return;
        }
        case RecordKind::Refusal:
            return;
    }
}

}  // namespace tandem::net

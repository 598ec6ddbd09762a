// The short-lived subcommands of tandem-node (pair, peers, unpair, discover, info, ping, id).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "node_commands.h"
#include "tandem/common/error.h"
#include "tandem/net/net_version.h"
#include "tandem/net/pairing_session.h"

namespace tandem::node {

namespace {

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "tandem-node";
    return buf;
}

void print_peer(const net::DiscoveredPeer& p) {
    std::printf("%s  %-20s %-24s v%s proto %u%s%s\n", p.node_id.c_str(), p.beacon.name.c_str(),
                p.addresses.empty() ? "-" : p.addresses.front().c_str(),
                p.beacon.app_version.c_str(), p.beacon.protocol_version,
                p.beacon.accepts_pairing ? " [pairing open]" : "",
                p.compatible ? "" : (" [cannot join: " + p.incompatibility + "]").c_str());
    for (const auto& b : p.beacon.backends)
        for (const auto& d : b.devices)
            std::printf("    %-7s %s  %.1f GiB free\n", b.name.c_str(), d.name.c_str(),
                        double(d.memory_free) / (1024.0 * 1024.0 * 1024.0));
}

}  // namespace

int run_pair(const CommonOptions& common, const std::string& address, const std::string& code,
             const std::string& expect_id) {
    auto home = home_of(common);
    net::Identity self = net::Identity::load_or_create(home);
    net::PeerStore peers(home / "peers.json");
    net::PairOptions opts;
    opts.expect_node_id = expect_id;
    auto peer = net::pair_with(net::parse_host_port(address, 47401), self,
                               common.name.empty() ? host_name() : common.name, code, peers, opts);
    std::printf("paired with %s (%s)\n", peer.node_id.c_str(), peer.name.c_str());
    return 0;
}

int run_peers(const CommonOptions& common) {
    net::PeerStore peers(home_of(common) / "peers.json");
    for (const auto& p : peers.list())
        std::printf("%s  %-20s %s\n", p.node_id.c_str(), p.name.c_str(), p.address.c_str());
    return 0;
}

int run_unpair(const CommonOptions& common, const std::string& node_id) {
    net::PeerStore peers(home_of(common) / "peers.json");
    if (!peers.remove(node_id)) throw Error("unpair: " + node_id + " is not a paired node");
    std::printf("unpaired %s\n", node_id.c_str());
    return 0;
}

int run_discover(const CommonOptions& common, int seconds) {
    net::Browser browser(discovery_config(common));
    browser.start();
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    for (const auto& p : browser.peers()) print_peer(p);
    return 0;
}

int run_info(const std::string& address) {
    print_peer(net::probe_node(net::parse_host_port(address, 47401)));
    return 0;
}

int run_ping(const CommonOptions& common, const std::string& address, int count, size_t size) {
    auto home = home_of(common);
    net::Identity self = net::Identity::load_or_create(home);
    net::PeerStore peers(home / "peers.json");
    auto at = net::parse_host_port(address, 47401);
    // Which node answers there decides which pinned key the handshake expects.
    auto seen = net::probe_node(at);
    auto peer = peers.find(seen.node_id);
    if (!peer)
        throw Error("ping: node " + seen.node_id + " at " + at.str() +
                    " is not paired; run tandem-node pair first");
    auto ch = net::SecureChannel::connect(at, self, *peer);
    std::vector<uint8_t> msg(size);
    for (size_t i = 0; i < size; ++i) msg[i] = uint8_t(i);
    std::vector<double> us;
    for (int k = 0; k < count; ++k) {
        auto t0 = net::Clock::now();
        ch->send(msg, net::Millis(5000));
        if (ch->recv(net::Millis(5000)) != msg)
            throw Error("ping: echo differs from what was sent");
        us.push_back(std::chrono::duration<double, std::micro>(net::Clock::now() - t0).count());
    }
    std::sort(us.begin(), us.end());
    std::printf(
        "%d echoes of %zu bytes over an encrypted channel to %s: median %.1f us, min %.1f us\n",
        count, size, peer->name.c_str(), us.empty() ? 0.0 : us[us.size() / 2],
        us.empty() ? 0.0 : us.front());
    return 0;
}

int run_id(const CommonOptions& common) {
    std::printf("%s\n", net::Identity::load_or_create(home_of(common)).node_id().c_str());
    return 0;
}

}  // namespace tandem::node

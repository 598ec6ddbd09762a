#include <arpa/inet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "discovery/interfaces.h"
#include "tandem/common/log.h"
#include "tandem/net/discovery.h"

#ifndef IPV6_MULTICAST_ALL
#define IPV6_MULTICAST_ALL 29
#endif

namespace tandem::net {

namespace {

int open_receiver(int family, uint16_t port) {
    int fd = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1, zero = 0;
    // Several nodes (or a node and a browsing CLI) on one host all receive the beacons.
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    int rc;
    if (family == AF_INET) {
        ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof zero);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_ALL, &zero, sizeof zero);
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(port);
        a.sin6_addr = in6addr_any;
        rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rc != 0) {
        log_warn("discovery: cannot listen on UDP port " + std::to_string(port) +
                 (family == AF_INET ? " (IPv4)" : " (IPv6)") + ": " + std::strerror(errno));
        ::close(fd);
        return -1;
    }
    return fd;
}

}  // namespace

Browser::Browser(DiscoveryConfig cfg, std::string self_node_id)
    : cfg_(std::move(cfg)), self_(std::move(self_node_id)) {}

Browser::~Browser() {
    stop();
}

void Browser::start() {
    if (thread_.joinable()) return;
    if (cfg_.ipv4) fd4_ = open_receiver(AF_INET, cfg_.port);
    if (cfg_.ipv6) fd6_ = open_receiver(AF_INET6, cfg_.port);
    if (fd4_ < 0 && fd6_ < 0)
        throw Error("discovery: cannot listen for beacons on UDP port " +
                    std::to_string(cfg_.port));
    join_groups();
    stop_ = false;
    thread_ = std::thread([this] { run(); });
}

void Browser::stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd4_ >= 0) ::close(fd4_);
    if (fd6_ >= 0) ::close(fd6_);
    fd4_ = fd6_ = -1;
}

// Joins the groups on interfaces that came up since the last call (interfaces appear later,
// e.g. a cable plugged in, a veth created after start).
void Browser::join_groups() {
    for (const auto& nif : multicast_interfaces(cfg_.loopback)) {
        if (fd4_ >= 0 && nif.has_ipv4 &&
            std::find(joined4_.begin(), joined4_.end(), nif.index) == joined4_.end()) {
            ip_mreqn m{};
            inet_pton(AF_INET, cfg_.group4.c_str(), &m.imr_multiaddr);
            m.imr_ifindex = int(nif.index);
            if (::setsockopt(fd4_, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) == 0 ||
                errno == EADDRINUSE)
                joined4_.push_back(nif.index);
        }
        if (fd6_ >= 0 && nif.has_ipv6 &&
            std::find(joined6_.begin(), joined6_.end(), nif.index) == joined6_.end()) {
            ipv6_mreq m{};
            inet_pton(AF_INET6, cfg_.group6.c_str(), &m.ipv6mr_multiaddr);
            m.ipv6mr_interface = nif.index;
            if (::setsockopt(fd6_, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof m) == 0 ||
                errno == EADDRINUSE)
                joined6_.push_back(nif.index);
        }
    }
}

void Browser::run() {
    std::vector<uint8_t> buf(kMaxBeaconSize + 1);
    auto next_join = Clock::now();
    while (!stop_) {
        if (Clock::now() >= next_join) {
            // Interfaces that went away lose their membership in the kernel; forget them so
            // they are joined again when they come back.
            auto now_ifs = multicast_interfaces(cfg_.loopback);
            auto gone = [&](unsigned idx) {
                return std::none_of(now_ifs.begin(), now_ifs.end(),
                                    [&](const NetInterface& n) { return n.index == idx; });
            };
            std::erase_if(joined4_, gone);
            std::erase_if(joined6_, gone);
            join_groups();
            next_join = Clock::now() + std::chrono::seconds(2);
        }
        pollfd fds[2] = {{fd4_, POLLIN, 0}, {fd6_, POLLIN, 0}};
        int rc = ::poll(fds, 2, 200);
        auto now = Clock::now();
        if (rc > 0) {
            for (auto& p : fds) {
                if (p.fd < 0 || !(p.revents & POLLIN)) continue;
                sockaddr_storage from{};
                socklen_t len = sizeof from;
                ssize_t n = ::recvfrom(p.fd, buf.data(), buf.size(), MSG_DONTWAIT,
                                       reinterpret_cast<sockaddr*>(&from), &len);
                if (n <= 0) continue;
                handle_datagram(std::span(buf).first(size_t(n)), sockaddr_to_string(&from, false),
                                now);
            }
        }
        expire(now);
    }
}

void Browser::handle_datagram(std::span<const uint8_t> datagram, const std::string& from_host,
                              Clock::time_point now) {
    Beacon b;
    try {
        b = parse_beacon(datagram);
    } catch (const Error& e) {
        ++rejected_;
        std::lock_guard g(mutex_);
        if (!warned_sources_[from_host] && warned_sources_.size() < 1024) {
            warned_sources_[from_host] = true;
            log_warn("discovery: ignored a bad beacon from " + from_host + ": " + e.what());
        }
        return;
    }
    std::string id = b.node_id();
    if (id == self_) return;
    std::string address = HostPort{from_host, b.tcp_port}.str();
    std::function<void(const DiscoveredPeer&)> notify;
    DiscoveredPeer snapshot;
    {
        std::lock_guard g(mutex_);
        auto it = table_.find(id);
        if (b.leaving) {
            if (it != table_.end() && b.sequence > it->second.peer.beacon.sequence) {
                snapshot = it->second.peer;
                table_.erase(it);
                notify = on_lost;
                log_info("discovery: node " + short_id(id) + " (" + b.name + ") left");
            }
        } else if (it == table_.end()) {
            Entry e;
            e.peer.node_id = id;
            e.peer.beacon = b;
            e.peer.first_seen = e.peer.last_seen = now;
            e.peer.incompatibility = incompatibility_of(b);
            e.peer.compatible = e.peer.incompatibility.empty();
            e.peer.addresses = {address};
            e.address_seen[address] = now;
            snapshot = e.peer;
            table_.emplace(id, std::move(e));
            notify = on_found;
            log_info(
                "discovery: found node " + short_id(id) + " (" + b.name + ") at " + address +
                (snapshot.compatible ? "" : " [incompatible: " + snapshot.incompatibility + "]"));
        } else {
            Entry& e = it->second;
            // Only a newer beacon keeps a node alive: a replayed old one cannot resurrect it.
            if (b.sequence > e.peer.beacon.sequence) {
                e.peer.beacon = b;
                e.peer.last_seen = now;
                e.peer.incompatibility = incompatibility_of(b);
                e.peer.compatible = e.peer.incompatibility.empty();
            }
            // The same beacon arrives over IPv4 and IPv6 and over several interfaces.
            if (b.sequence >= e.peer.beacon.sequence) e.address_seen[address] = now;
        }
    }
    if (notify) notify(snapshot);
}

void Browser::expire(Clock::time_point now) {
    std::vector<DiscoveredPeer> lost;
    {
        std::lock_guard g(mutex_);
        for (auto it = table_.begin(); it != table_.end();) {
            Entry& e = it->second;
            std::erase_if(e.address_seen,
                          [&](const auto& kv) { return now - kv.second > cfg_.expiry; });
            if (now - e.peer.last_seen > cfg_.expiry || e.address_seen.empty()) {
                log_info("discovery: lost node " + short_id(it->first) + " (" + e.peer.beacon.name +
                         "): no beacon for " +
                         std::to_string(
                             std::chrono::duration_cast<Millis>(now - e.peer.last_seen).count()) +
                         " ms");
                lost.push_back(e.peer);
                it = table_.erase(it);
                continue;
            }
            e.peer.addresses.clear();
            for (const auto& [addr, seen] : e.address_seen) e.peer.addresses.push_back(addr);
            ++it;
        }
    }
    if (on_lost)
        for (const auto& p : lost) on_lost(p);
}

std::vector<DiscoveredPeer> Browser::peers() {
    expire(Clock::now());
    std::lock_guard g(mutex_);
    std::vector<DiscoveredPeer> out;
    for (const auto& [id, e] : table_) out.push_back(e.peer);
    std::sort(out.begin(), out.end(), [](const DiscoveredPeer& a, const DiscoveredPeer& b) {
        return std::tie(a.beacon.name, a.node_id) < std::tie(b.beacon.name, b.node_id);
    });
    return out;
}

}  // namespace tandem::net

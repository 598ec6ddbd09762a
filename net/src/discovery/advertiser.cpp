#include <arpa/inet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "discovery/interfaces.h"
#include "tandem/common/log.h"
#include "tandem/net/discovery.h"
#include "tandem/net/net_version.h"

namespace tandem::net {

std::string incompatibility_of(const Beacon& b) {
    if (b.protocol_version != kProtocolVersion)
        return "protocol " + std::to_string(b.protocol_version) + ", this node speaks " +
               std::to_string(kProtocolVersion);
    return "";
}

Advertiser::Advertiser(DiscoveryConfig cfg, const Identity& self,
                       std::function<Beacon()> make_beacon)
    : cfg_(std::move(cfg)), self_(self), make_(std::move(make_beacon)) {
    // Sequence numbers start at the wall-clock time in ms, so a restarted node's beacons are
    // newer than any beacon of its previous run a browser might still hold (or see replayed).
    sequence_ = uint64_t(std::time(nullptr)) * 1000;
}

Advertiser::~Advertiser() {
    stop();
}

void Advertiser::start() {
    if (thread_.joinable()) return;
    int one = 1, ttl = 1;
    if (cfg_.ipv4) {
        fd4_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd4_ >= 0) {
            // TTL 1: beacons stay on the local link.
            ::setsockopt(fd4_, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl);
            ::setsockopt(fd4_, IPPROTO_IP, IP_MULTICAST_LOOP, &one, sizeof one);
        }
    }
    if (cfg_.ipv6) {
        fd6_ = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd6_ >= 0) {
            ::setsockopt(fd6_, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &ttl, sizeof ttl);
            ::setsockopt(fd6_, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &one, sizeof one);
        }
    }
    stop_ = false;
    thread_ = std::thread([this] { run(); });
}

void Advertiser::send_all(const std::vector<uint8_t>& datagram) {
    for (const auto& nif : multicast_interfaces(cfg_.loopback)) {
        if (fd4_ >= 0 && nif.has_ipv4) {
            ip_mreqn m{};
            m.imr_ifindex = int(nif.index);
            m.imr_address = nif.ipv4;
            sockaddr_in to{};
            to.sin_family = AF_INET;
            to.sin_port = htons(cfg_.port);
            inet_pton(AF_INET, cfg_.group4.c_str(), &to.sin_addr);
            if (::setsockopt(fd4_, IPPROTO_IP, IP_MULTICAST_IF, &m, sizeof m) == 0 &&
                ::sendto(fd4_, datagram.data(), datagram.size(), 0,
                         reinterpret_cast<sockaddr*>(&to), sizeof to) >= 0)
                ++sent_;
        }
        if (fd6_ >= 0 && nif.has_ipv6) {
            unsigned idx = nif.index;
            sockaddr_in6 to{};
            to.sin6_family = AF_INET6;
            to.sin6_port = htons(cfg_.port);
            to.sin6_scope_id = idx;
            inet_pton(AF_INET6, cfg_.group6.c_str(), &to.sin6_addr);
            if (::setsockopt(fd6_, IPPROTO_IPV6, IPV6_MULTICAST_IF, &idx, sizeof idx) == 0 &&
                ::sendto(fd6_, datagram.data(), datagram.size(), 0,
                         reinterpret_cast<sockaddr*>(&to), sizeof to) >= 0)
                ++sent_;
        }
    }
}

void Advertiser::run() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
        lock.unlock();
        try {
            Beacon b = make_();
            b.sequence = ++sequence_;
            send_all(encode_beacon(b, self_));
        } catch (const std::exception& e) {
            log_warn(std::string("discovery: cannot send beacon: ") + e.what());
        }
        lock.lock();
        cv_.wait_for(lock, cfg_.interval, [this] { return stop_; });
    }
}

void Advertiser::stop() {
    {
        std::lock_guard g(mutex_);
        if (stop_ && !thread_.joinable()) return;
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
        try {
            Beacon b = make_();
            b.leaving = true;
            b.sequence = ++sequence_;
            send_all(encode_beacon(b, self_));
        } catch (const std::exception&) {
        }
    }
    if (fd4_ >= 0) ::close(fd4_);
    if (fd6_ >= 0) ::close(fd6_);
    fd4_ = fd6_ = -1;
}

}  // namespace tandem::net

#pragma once
// LAN discovery: an Advertiser multicasts the node's signed beacon on every up interface (IPv4
// and IPv6, TTL/hops 1, so beacons never leave the link) once per interval; a Browser listens
// and keeps the live peer list, dropping a node when its beacons stop for `expiry` or at once
// when it says it is leaving. probe_node() is the manual host:port fallback.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tandem/net/beacon.h"
#include "tandem/net/socket.h"

namespace tandem::net {

struct DiscoveryConfig {
    uint16_t port = 47400;
    std::string group4 = "239.255.84.68";    // administratively scoped (RFC 2365)
    std::string group6 = "ff02::5444:4e44";  // link-local scope
    Millis interval{1000};
    Millis expiry{4000};
    bool ipv4 = true;
    bool ipv6 = true;
    // Also use the loopback interface (single-host tests and demos).
    bool loopback = false;
};

struct DiscoveredPeer {
    std::string node_id;
    Beacon beacon;
    std::vector<std::string> addresses;  // "10.0.0.2:47401", "[fe80::1%veth0]:47401"
    Clock::time_point first_seen{}, last_seen{};
    bool compatible = true;
    std::string incompatibility;  // why it cannot join ("protocol 2, this node speaks 1")
};

// Compatibility of a beacon with this build; empty when it can join.
std::string incompatibility_of(const Beacon& b);

class Advertiser {
  public:
    // `make_beacon` is called before every send (free memory changes); the advertiser fills in
    // keys and sequence.
    Advertiser(DiscoveryConfig cfg, const Identity& self, std::function<Beacon()> make_beacon);
    ~Advertiser();
    void start();
    // Sends a "leaving" beacon, then stops.
    void stop();
    uint64_t sent() const { return sent_; }

  private:
    void run();
    void send_all(const std::vector<uint8_t>& datagram);
    DiscoveryConfig cfg_;
    const Identity& self_;
    std::function<Beacon()> make_;
    uint64_t sequence_;
    int fd4_ = -1, fd6_ = -1;
    std::atomic<uint64_t> sent_{0};
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;
};

class Browser {
  public:
    explicit Browser(DiscoveryConfig cfg, std::string self_node_id = "");
    ~Browser();
    void start();
    void stop();
    // The live list (expired entries removed first), sorted by name.
    std::vector<DiscoveredPeer> peers();
    // Feeds one datagram as if received from `from_host`; used by the receive loop and tests.
    // Bad datagrams are counted and logged (once per source).
    void handle_datagram(std::span<const uint8_t> datagram, const std::string& from_host,
                         Clock::time_point now);
    void expire(Clock::time_point now);
    uint64_t rejected() const { return rejected_; }

    std::function<void(const DiscoveredPeer&)> on_found;
    std::function<void(const DiscoveredPeer&)> on_lost;

  private:
    void run();
    void join_groups();
    DiscoveryConfig cfg_;
    std::string self_;
    int fd4_ = -1, fd6_ = -1;
    std::mutex mutex_;
    struct Entry {
        DiscoveredPeer peer;
        std::map<std::string, Clock::time_point> address_seen;
    };
    std::map<std::string, Entry> table_;
    std::map<std::string, bool> warned_sources_;
    std::vector<unsigned> joined4_, joined6_;
    std::atomic<uint64_t> rejected_{0};
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// Asks a node at host:port for its signed beacon over TCP (the manual-entry fallback when
// multicast does not cross the network). The address is the one given.
DiscoveredPeer probe_node(const HostPort& at, Millis timeout = Millis(3000));

}  // namespace tandem::net

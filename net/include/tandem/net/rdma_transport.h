#pragma once
// Choosing RDMA or TCP for one connection. Right after two ranks connect over TCP, both call
// negotiate_transport(): each end sets up a queue pair and registered ring if it can and sends an
// offer (its GID, QPN, rkey, ring address, MTU, and the subnet it is on) or the reason it cannot.
// RDMA is used when both ends offered and share a subnet; otherwise, or when bringing the queue
// pairs up fails on either end, both keep TCP and the reason is logged once per process.
//
// Pinned memory: each RDMA connection registers 2 x ring_bytes (our ring + the mirror of the
// peer's). Without CAP_IPC_LOCK that counts against RLIMIT_MEMLOCK; the offer reports a shortfall
// with how to raise the limit (memlock_shortfall).
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tandem/net/rdma_ring.h"
#include "tandem/net/socket.h"
#include "tandem/net/transport.h"

namespace tandem::net {

struct RdmaOptions {
    bool enabled = true;
    size_t ring_bytes = size_t(1) << 20;  // per direction and peer; pinned twice (ring + mirror)
    size_t granule = 1024;                // raised when the device's queues are too short
    std::string device;                   // only this verbs device ("" = any)
    RingOptions ring;
};

// One end's half of the connection set-up, as sent over TCP.
struct RdmaOffer {
    std::string unavailable;  // why this end cannot do RDMA; "" = it offers the fields below
    uint8_t link_layer = 0;   // 1 InfiniBand, 2 Ethernet (RoCE v2)
    uint8_t port = 0;
    uint8_t mtu = 0;  // enum ibv_mtu
    uint16_t lid = 0;
    std::array<uint8_t, 16> gid{};
    uint32_t qpn = 0, psn = 0, rkey = 0;
    uint64_t ring_addr = 0;
    uint32_t ring_bytes = 0, granule = 0;
    std::array<uint8_t, 16> ip{};  // the TCP connection's local address (IPv4 as ::ffff:a.b.c.d)
    uint8_t prefix_len = 0;        // of that address's interface, in IPv6 bits
};

std::vector<uint8_t> encode_offer(const RdmaOffer& offer);
// Throws tandem::Error on bytes that are not an offer of this version.
RdmaOffer decode_offer(std::span<const uint8_t> bytes);

// "" when the two ends can connect, else why not. The same answer on both ends.
std::string rdma_mismatch(const RdmaOffer& mine, const RdmaOffer& theirs);

// How to raise RLIMIT_MEMLOCK (shell, systemd unit, limits.conf), as one sentence.
std::string memlock_advice();
// "" when `needed` more bytes can be pinned, else what is short and how to raise the limit.
// limit: RLIMIT_MEMLOCK soft limit (UINT64_MAX = unlimited); already: bytes locked or pinned now.
std::string memlock_shortfall(uint64_t limit, uint64_t already, uint64_t needed,
                              bool has_cap_ipc_lock);

// "10.0.0.2", "::ffff:10.0.0.2", "fe80::1%eth0" -> 16 bytes (IPv4 mapped); false if unparsable.
bool ip_to_bytes(const std::string& text, std::array<uint8_t, 16>& out);
// Our address on a connected socket, without port ("10.0.0.1").
std::string local_ip_of(const Socket& connected);

struct TransportChoice {
    std::unique_ptr<Transport> transport;
    std::string rdma_refused;  // "" when `transport` is RDMA
};

// Both ends call this on a freshly connected TCP transport; `local_ip` = local_ip_of(socket).
// Throws tandem::Error only when the peer does not speak the protocol or the TCP exchange fails.
TransportChoice negotiate_transport(std::unique_ptr<Transport> tcp, const std::string& local_ip,
                                    const RdmaOptions& opts, Millis timeout);

// "" when this host has a verbs device, else why not (for tests and `tandem-cli` diagnostics).
std::string rdma_device_problem();

}  // namespace tandem::net

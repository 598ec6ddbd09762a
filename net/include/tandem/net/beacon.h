#pragma once
// The discovery beacon: what a node announces on the LAN once per interval. Signed with the
// node's Ed25519 key, and the node id is recomputed from the keys it carries, so a forged beacon
// cannot claim another node's id. The beacon format itself never changes incompatibly (magic +
// format 1); the protocol version inside says whether the node can join.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tandem/net/identity.h"

namespace tandem::net {

inline constexpr size_t kMaxBeaconSize = 1232;  // fits an IPv6 minimum-MTU datagram
inline constexpr size_t kMaxBeaconBackends = 8;
inline constexpr size_t kMaxBeaconDevices = 16;  // per backend

struct BeaconDevice {
    std::string name;
    uint64_t memory_free = 0;  // bytes
    uint64_t memory_total = 0;
    bool operator==(const BeaconDevice&) const = default;
};

struct BeaconBackend {
    std::string name;  // "cpu", "vulkan", "hip"
    std::vector<BeaconDevice> devices;
    bool operator==(const BeaconBackend&) const = default;
};

struct Beacon {
    PublicKeys keys;
    std::string name;         // user-visible node name (host name by default)
    std::string app_version;  // "0.1.0"
    uint32_t protocol_version = 0;
    bool accepts_pairing = false;
    bool leaving = false;  // sent once on shutdown so browsers drop the node at once
    uint16_t tcp_port = 0;
    bool rdma = false;
    std::array<uint8_t, 16> rdma_gid{};
    std::vector<BeaconBackend> backends;
    uint64_t sequence = 0;  // increases per beacon sent

    std::string node_id() const { return node_id_of(keys); }
    bool operator==(const Beacon&) const = default;
};

// Signs with `signer` (whose public keys replace beacon.keys). Throws if the result would not
// fit kMaxBeaconSize (too many devices or names too long).
std::vector<uint8_t> encode_beacon(const Beacon& beacon, const Identity& signer);
// Parses and verifies the signature; throws tandem::Error naming the bad field.
Beacon parse_beacon(std::span<const uint8_t> datagram);

}  // namespace tandem::net

#include "tandem/net/beacon.h"

#include "tandem/common/error.h"
#include "tandem/net/wire.h"

namespace tandem::net {

namespace {
constexpr uint8_t kMagic[4] = {'T', 'N', 'D', 'B'};
constexpr uint8_t kFormat = 1;
constexpr uint8_t kFlagPairing = 1, kFlagLeaving = 2, kFlagRdma = 4;
}  // namespace

std::vector<uint8_t> encode_beacon(const Beacon& b, const Identity& signer) {
    if (b.backends.size() > kMaxBeaconBackends)
        throw Error("beacon: more than " + std::to_string(kMaxBeaconBackends) + " backends");
    WireWriter w;
    w.bytes(kMagic);
    w.u8(kFormat);
    w.bytes(signer.public_keys().sign_pk);
    w.bytes(signer.public_keys().kx_pk);
    w.str8(b.name, "name");
    w.str8(b.app_version, "app_version");
    w.u32(b.protocol_version);
    w.u8(uint8_t((b.accepts_pairing ? kFlagPairing : 0) | (b.leaving ? kFlagLeaving : 0) |
                 (b.rdma ? kFlagRdma : 0)));
    w.u16(b.tcp_port);
    w.bytes(b.rdma_gid);
    w.u64(b.sequence);
    w.u8(uint8_t(b.backends.size()));
    for (const auto& be : b.backends) {
        if (be.devices.size() > kMaxBeaconDevices)
            throw Error("beacon: backend '" + be.name + "' has more than " +
                        std::to_string(kMaxBeaconDevices) + " devices");
        w.str8(be.name, "backend name");
        w.u8(uint8_t(be.devices.size()));
        for (const auto& d : be.devices) {
            w.str8(d.name, "device name");
            w.u64(d.memory_free);
            w.u64(d.memory_total);
        }
    }
    Signature sig = signer.sign(w.data());
    w.bytes(sig);
    if (w.size() > kMaxBeaconSize)
        throw Error("beacon: " + std::to_string(w.size()) + " bytes exceeds the " +
                    std::to_string(kMaxBeaconSize) + "-byte limit (shorten names or drop devices)");
    return w.take();
}

Beacon parse_beacon(std::span<const uint8_t> datagram) {
    if (datagram.size() > kMaxBeaconSize)
        throw Error("beacon: " + std::to_string(datagram.size()) + " bytes exceeds the limit of " +
                    std::to_string(kMaxBeaconSize));
    if (datagram.size() < sizeof(Signature))
        throw Error("beacon: " + std::to_string(datagram.size()) + " bytes is too short");
    auto body = datagram.first(datagram.size() - sizeof(Signature));
    WireReader r(body, "beacon");
    auto magic = r.fixed<4>("magic");
    if (!std::equal(magic.begin(), magic.end(), kMagic)) r.fail("magic", "not a Tandem beacon");
    uint8_t format = r.u8("format");
    if (format != kFormat) r.fail("format", "unknown beacon format " + std::to_string(format));
    Beacon b;
    b.keys.sign_pk = r.fixed<32>("ed25519 key");
    b.keys.kx_pk = r.fixed<32>("x25519 key");
    b.name = r.str8("name");
    b.app_version = r.str8("app_version", 64);
    b.protocol_version = r.u32("protocol_version");
    uint8_t flags = r.u8("flags");
    if (flags & ~(kFlagPairing | kFlagLeaving | kFlagRdma)) r.fail("flags", "unknown flag bits");
    b.accepts_pairing = flags & kFlagPairing;
    b.leaving = flags & kFlagLeaving;
    b.rdma = flags & kFlagRdma;
    b.tcp_port = r.u16("tcp_port");
    if (b.tcp_port == 0) r.fail("tcp_port", "port 0");
    b.rdma_gid = r.fixed<16>("rdma_gid");
    b.sequence = r.u64("sequence");
    size_t n_backends = r.u8("backend count");
    if (n_backends > kMaxBeaconBackends)
        r.fail("backend count", std::to_string(n_backends) + " is too many");
    for (size_t i = 0; i < n_backends; ++i) {
        BeaconBackend be;
        be.name = r.str8("backend name", 32);
        size_t n_dev = r.u8("device count");
        if (n_dev > kMaxBeaconDevices)
            r.fail("device count", std::to_string(n_dev) + " is too many");
        for (size_t k = 0; k < n_dev; ++k) {
            BeaconDevice d;
            d.name = r.str8("device name");
            d.memory_free = r.u64("memory_free");
            d.memory_total = r.u64("memory_total");
            be.devices.push_back(std::move(d));
        }
        b.backends.push_back(std::move(be));
    }
    r.expect_end();
    Signature sig;
    std::copy(datagram.end() - sig.size(), datagram.end(), sig.begin());
    if (!verify_signature(b.keys.sign_pk, body, sig))
        throw Error("beacon: signature does not verify (forged or corrupted, claimed node " +
                    node_id_of(b.keys) + ")");
    return b;
}

}  // namespace tandem::net

// RDMA-or-TCP choice for one connection: offers, the subnet check, the memlock check, and the
// exchange itself (see rdma_transport.h).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <mutex>
#include <set>

#include "tandem/common/log.h"
#include "tandem/net/rdma_transport.h"
#include "verbs_endpoint.h"

namespace tandem::net {
namespace {

constexpr char kOfferMagic[4] = {'T', 'R', 'D', 'M'};
constexpr uint8_t kOfferVersion = 1;
constexpr size_t kOfferBody = 3 + 2 + 16 + 4 * 3 + 8 + 4 * 2 + 16 + 1;

struct Writer {
    std::vector<uint8_t>& out;
    void u(uint64_t v, int bytes) {
        for (int i = 0; i < bytes; ++i) out.push_back(uint8_t(v >> (8 * i)));
    }
    // resize + memcpy rather than insert(): GCC 12 at -O3 reports a false overflow for the
    // inlined insert into a vector it believes empty.
    void raw(const void* p, size_t n) {
        const size_t at = out.size();
        out.resize(at + n);
        if (n) std::memcpy(out.data() + at, p, n);
    }
};

struct Reader {
    std::span<const uint8_t> in;
    size_t at = 0;
    uint64_t u(int bytes) {
        uint64_t v = 0;
        for (int i = 0; i < bytes; ++i) v |= uint64_t(in[at++]) << (8 * i);
        return v;
    }
    void raw(void* p, size_t n) {
        std::memcpy(p, in.data() + at, n);
        at += n;
    }
};

// Bits of `a` and `b` equal under a prefix of `bits`.
bool same_prefix(const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b, int bits) {
    for (int i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
        const uint8_t mask = bits >= 8 ? 0xff : uint8_t(0xff << (8 - bits));
        if ((a[i] & mask) != (b[i] & mask)) return false;
    }
    return true;
}

std::string ip_text(const std::array<uint8_t, 16>& ip) {
    char buf[INET6_ADDRSTRLEN] = {};
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(ip.data(), mapped, 12) == 0)
        inet_ntop(AF_INET, ip.data() + 12, buf, sizeof buf);
    else
        inet_ntop(AF_INET6, ip.data(), buf, sizeof buf);
    return buf;
}

// Prefix length (IPv6 bits) of the interface that holds `ip`; 128 when none is found.
uint8_t prefix_len_of(const std::array<uint8_t, 16>& ip) {
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return 128;
    uint8_t found = 128;
    for (ifaddrs* a = list; a; a = a->ifa_next) {
        if (!a->ifa_addr || !a->ifa_netmask) continue;
        std::array<uint8_t, 16> addr{}, mask{};
        if (a->ifa_addr->sa_family == AF_INET) {
            addr[10] = addr[11] = 0xff;
            std::memcpy(addr.data() + 12,
                        &reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr, 4);
            std::memset(mask.data(), 0xff, 12);
            std::memcpy(mask.data() + 12,
                        &reinterpret_cast<const sockaddr_in*>(a->ifa_netmask)->sin_addr, 4);
        } else if (a->ifa_addr->sa_family == AF_INET6) {
            std::memcpy(addr.data(), &reinterpret_cast<const sockaddr_in6*>(a->ifa_addr)->sin6_addr,
                        16);
            std::memcpy(mask.data(),
                        &reinterpret_cast<const sockaddr_in6*>(a->ifa_netmask)->sin6_addr, 16);
        } else {
            continue;
        }
        if (addr != ip) continue;
        int bits = 0;
        for (uint8_t m : mask) bits += __builtin_popcount(m);
        found = static_cast<uint8_t>(bits);
        break;
    }
    freeifaddrs(list);
    return found;
}

// One log line per distinct reason per process: a group of 4 ranks does not repeat it 3 times.
void log_fallback_once(const std::string& peer, const std::string& reason) {
    static std::mutex mu;
    static std::set<std::string> said;
    {
        std::lock_guard l(mu);
        if (!said.insert(reason).second) return;
    }
    log_info("cluster: using TCP to " + peer + ", not RDMA: " + reason);
}

std::vector<uint8_t> status_message(const std::string& failure) {
    const std::string m = std::string("TRD") + (failure.empty() ? 'Y' : 'N') + failure;
    return std::vector<uint8_t>(m.begin(), m.end());
}

}  // namespace

std::vector<uint8_t> encode_offer(const RdmaOffer& o) {
    std::vector<uint8_t> out;
    Writer w{out};
    w.raw(kOfferMagic, 4);
    w.u(kOfferVersion, 1);
    w.u(o.unavailable.empty() ? 1 : 0, 1);
    if (!o.unavailable.empty()) {
        const size_t n = std::min<size_t>(o.unavailable.size(), 4000);
        w.u(n, 2);
        w.raw(o.unavailable.data(), n);
        return out;
    }
    w.u(o.link_layer, 1);
    w.u(o.port, 1);
    w.u(o.mtu, 1);
    w.u(o.lid, 2);
    w.raw(o.gid.data(), 16);
    w.u(o.qpn, 4);
    w.u(o.psn, 4);
    w.u(o.rkey, 4);
    w.u(o.ring_addr, 8);
    w.u(o.ring_bytes, 4);
    w.u(o.granule, 4);
    w.raw(o.ip.data(), 16);
    w.u(o.prefix_len, 1);
    return out;
}

RdmaOffer decode_offer(std::span<const uint8_t> bytes) {
    if (bytes.size() < 6 || std::memcmp(bytes.data(), kOfferMagic, 4) != 0)
        throw Error("rdma negotiation: the peer sent no transport offer (older tandem?)");
    if (bytes[4] != kOfferVersion)
        throw Error("rdma negotiation: offer version " + std::to_string(bytes[4]) +
                    ", this build speaks " + std::to_string(kOfferVersion));
    RdmaOffer o;
    Reader r{bytes, 6};
    if (bytes[5] == 0) {
        if (bytes.size() < 8) throw Error("rdma negotiation: truncated offer");
        const size_t n = r.u(2);
        if (bytes.size() != 8 + n) throw Error("rdma negotiation: malformed offer");
        o.unavailable.assign(reinterpret_cast<const char*>(bytes.data() + 8), n);
        if (o.unavailable.empty()) o.unavailable = "unavailable (no reason given)";
        return o;
    }
    if (bytes.size() != 6 + kOfferBody) throw Error("rdma negotiation: malformed offer");
    o.link_layer = static_cast<uint8_t>(r.u(1));
    o.port = static_cast<uint8_t>(r.u(1));
    o.mtu = static_cast<uint8_t>(r.u(1));
    o.lid = static_cast<uint16_t>(r.u(2));
    r.raw(o.gid.data(), 16);
    o.qpn = static_cast<uint32_t>(r.u(4));
    o.psn = static_cast<uint32_t>(r.u(4));
    o.rkey = static_cast<uint32_t>(r.u(4));
    o.ring_addr = r.u(8);
    o.ring_bytes = static_cast<uint32_t>(r.u(4));
    o.granule = static_cast<uint32_t>(r.u(4));
    r.raw(o.ip.data(), 16);
    o.prefix_len = static_cast<uint8_t>(r.u(1));
    return o;
}

std::string rdma_mismatch(const RdmaOffer& mine, const RdmaOffer& theirs) {
    if (!mine.unavailable.empty()) return "this host: " + mine.unavailable;
    if (!theirs.unavailable.empty()) return "peer: " + theirs.unavailable;
    if (mine.link_layer != theirs.link_layer)
        return "one end is on InfiniBand, the other on RoCE (Ethernet)";
    if (mine.link_layer == 1) {  // InfiniBand: the GID's upper 64 bits are the subnet prefix
        if (std::memcmp(mine.gid.data(), theirs.gid.data(), 8) != 0)
            return "the InfiniBand ports are on different subnets (GID prefixes differ)";
    } else if (!same_prefix(mine.ip, theirs.ip, mine.prefix_len) ||
               !same_prefix(mine.ip, theirs.ip, theirs.prefix_len)) {
        return ip_text(mine.ip) + "/" + std::to_string(mine.prefix_len) + " and " +
               ip_text(theirs.ip) + "/" + std::to_string(theirs.prefix_len) +
               " are not on one subnet (RoCE is used only within one)";
    }
    if (mine.ring_bytes != theirs.ring_bytes || mine.granule != theirs.granule)
        return "ring geometry differs (" + std::to_string(mine.ring_bytes) + " B / " +
               std::to_string(mine.granule) + " B granules here, " +
               std::to_string(theirs.ring_bytes) + " / " + std::to_string(theirs.granule) +
               " there): give every rank the same RdmaOptions";
    return "";
}

std::string memlock_advice() {
    return "raise the locked-memory limit: `ulimit -l unlimited` in the shell that starts tandem "
           "(as root, or after raising the hard limit), `LimitMEMLOCK=infinity` in a systemd "
           "unit, or `* - memlock unlimited` in /etc/security/limits.conf (log in again)";
}

std::string memlock_shortfall(uint64_t limit, uint64_t already, uint64_t needed,
                              bool has_cap_ipc_lock) {
    if (has_cap_ipc_lock || limit == UINT64_MAX) return "";
    if (already <= limit && needed <= limit - already) return "";
    return "RLIMIT_MEMLOCK is " + std::to_string(limit >> 10) + " KiB with " +
           std::to_string(already >> 10) + " KiB already locked; RDMA needs " +
           std::to_string(needed >> 10) + " KiB more to pin its rings: " + memlock_advice();
}

bool ip_to_bytes(const std::string& text, std::array<uint8_t, 16>& out) {
    std::string t = text.substr(0, text.find('%'));  // drop an IPv6 zone
    if (t.size() > 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
    out = {};
    in_addr v4{};
    if (inet_pton(AF_INET, t.c_str(), &v4) == 1) {
        out[10] = out[11] = 0xff;
        std::memcpy(out.data() + 12, &v4, 4);
        return true;
    }
    return inet_pton(AF_INET6, t.c_str(), out.data()) == 1;
}

std::string local_ip_of(const Socket& connected) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getsockname(connected.fd(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
    return sockaddr_to_string(&ss, false);
}

std::string rdma_device_problem() {
    return verbs_device_problem();
}

TransportChoice negotiate_transport(std::unique_ptr<Transport> tcp, const std::string& local_ip,
                                    const RdmaOptions& opts, Millis timeout) {
    const std::string peer = tcp->describe();
    RdmaOffer mine;
    std::unique_ptr<VerbsEndpoint> ep;
    if (!opts.enabled) {
        mine.unavailable = "RDMA is switched off on this rank (RdmaOptions::enabled)";
    } else {
        std::string why;
        ep = VerbsEndpoint::open(local_ip, opts, why);
        if (ep) {
            mine = ep->offer();
            ip_to_bytes(local_ip, mine.ip);
            mine.prefix_len = prefix_len_of(mine.ip);
        } else {
            mine.unavailable = why;
        }
    }
    std::vector<uint8_t> msg;
    tcp->send(encode_offer(mine), timeout);
    tcp->recv(msg, timeout);
    const RdmaOffer theirs = decode_offer(msg);
    std::string reason = rdma_mismatch(mine, theirs);
    if (reason.empty()) {
        // Both offered: bring the queue pair up, then agree that both ends made it.
        std::string failure;
        try {
            ep->connect(theirs);
        } catch (const std::exception& e) {
            failure = e.what();
        }
        tcp->send(status_message(failure), timeout);
        tcp->recv(msg, timeout);
        if (msg.size() < 4 || std::memcmp(msg.data(), "TRD", 3) != 0)
            throw Error("rdma negotiation: bad status message from " + peer);
        if (!failure.empty())
            reason = "this host: " + failure;
        else if (msg[3] != 'Y')
            reason = "peer: " + std::string(msg.begin() + 4, msg.end());
    }
    if (!reason.empty()) {
        log_fallback_once(peer, reason);
        return {std::move(tcp), reason};
    }
    return {make_ring_transport(make_verbs_link(std::move(ep), std::move(tcp)), opts.ring), ""};
}

}  // namespace tandem::net

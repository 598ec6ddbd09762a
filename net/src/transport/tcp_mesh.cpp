// Builds the full mesh of one group: connect down, accept up, hello on every connection.
#include <cstring>

#include "tandem/net/rdma_transport.h"
#include "tandem/net/transport_mesh.h"

namespace tandem::net {
namespace {

constexpr char kMagic[4] = {'T', 'N', 'T', 'P'};

// hello = magic, u32 rank (little-endian), secret bytes.
std::vector<uint8_t> hello(int rank, const std::string& secret) {
    std::vector<uint8_t> m(8 + secret.size());
    std::memcpy(m.data(), kMagic, 4);
    for (int i = 0; i < 4; ++i) m[4 + i] = uint8_t(uint32_t(rank) >> (8 * i));
    std::memcpy(m.data() + 8, secret.data(), secret.size());
    return m;
}

// The rank named by a hello; throws when the magic or the secret does not match.
int check_hello(const std::vector<uint8_t>& m, const std::string& secret, const std::string& from) {
    if (m.size() < 8 || std::memcmp(m.data(), kMagic, 4) != 0)
        throw Error("cluster mesh: " + from + " is not a tandem tensor-parallel peer (bad hello)");
    if (m.size() != 8 + secret.size() ||
        std::memcmp(m.data() + 8, secret.data(), secret.size()) != 0)
        throw Error("cluster mesh: " + from + " sent a wrong group secret");
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) r |= uint32_t(m[4 + i]) << (8 * i);
    return static_cast<int>(r);
}

}  // namespace

std::vector<std::unique_ptr<Transport>> connect_mesh(int rank,
                                                     const std::vector<HostPort>& addresses,
                                                     Listener& listener, const MeshOptions& opts) {
    const int n = static_cast<int>(addresses.size());
    if (rank < 0 || rank >= n)
        throw Error("cluster mesh: rank " + std::to_string(rank) + " outside 0.." +
                    std::to_string(n - 1));
    std::vector<std::unique_ptr<Transport>> peers(static_cast<size_t>(n));
    std::vector<uint8_t> msg;
    for (int k = 0; k < rank; ++k) {
        Socket s;
        try {
            s = Socket::connect(addresses[k], opts.timeout);
        } catch (const std::exception& e) {
            throw Error("cluster mesh: cannot reach rank " + std::to_string(k) + " at " +
                        addresses[k].str() + ": " + e.what());
        }
        const std::string local_ip = local_ip_of(s);
        auto t = make_tcp_transport(std::move(s), opts.tcp);
        t->send(hello(rank, opts.secret), opts.timeout);
        t->recv(msg, opts.timeout);
        if (check_hello(msg, opts.secret, addresses[k].str()) != k)
            throw Error("cluster mesh: " + addresses[k].str() + " is not rank " +
                        std::to_string(k));
        peers[k] = negotiate_transport(std::move(t), local_ip, opts.rdma, opts.timeout).transport;
    }
    for (int accepted = rank + 1; accepted < n; ++accepted) {
        Socket s = listener.accept(opts.timeout);
        if (!s.valid())
            throw Error("cluster mesh: rank " + std::to_string(rank) + " waited " +
                        std::to_string(opts.timeout.count()) +
                        " ms for the higher ranks to connect");
        const std::string from = s.peer_address();
        const std::string local_ip = local_ip_of(s);
        auto t = make_tcp_transport(std::move(s), opts.tcp);
        t->recv(msg, opts.timeout);
        const int k = check_hello(msg, opts.secret, from);
        if (k <= rank || k >= n || peers[k])
            throw Error("cluster mesh: " + from + " claims rank " + std::to_string(k) +
                        ", which is not expected here");
        t->send(hello(rank, opts.secret), opts.timeout);
        peers[k] = negotiate_transport(std::move(t), local_ip, opts.rdma, opts.timeout).transport;
    }
    return peers;
}

}  // namespace tandem::net

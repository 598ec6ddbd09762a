#include "tandem/net/discovery.h"
#include "tandem/net/record.h"

namespace tandem::net {

DiscoveredPeer probe_node(const HostPort& at, Millis timeout) {
    auto deadline = Clock::now() + timeout;
    Socket s = Socket::connect(at, timeout);
    write_record(s, RecordKind::Info, {}, deadline);
    auto body = expect_record(s, RecordKind::Info, deadline, at.str());
    DiscoveredPeer p;
    p.beacon = parse_beacon(body);
    p.node_id = p.beacon.node_id();
    p.addresses = {at.str()};
    p.first_seen = p.last_seen = Clock::now();
    p.incompatibility = incompatibility_of(p.beacon);
    p.compatible = p.incompatibility.empty();
    return p;
}

}  // namespace tandem::net

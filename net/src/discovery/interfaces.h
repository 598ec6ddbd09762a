#pragma once
// The interfaces discovery uses: up and multicast-capable (loopback only when asked).
#include <netinet/in.h>

#include <string>
#include <vector>

namespace tandem::net {

struct NetInterface {
    std::string name;
    unsigned index = 0;
    bool has_ipv4 = false;
    in_addr ipv4{};
    bool has_ipv6 = false;  // a link-local or global IPv6 address is configured
};

std::vector<NetInterface> multicast_interfaces(bool include_loopback);

}  // namespace tandem::net

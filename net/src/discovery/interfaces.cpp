#include "discovery/interfaces.h"

#include <ifaddrs.h>
#include <net/if.h>

#include <map>

namespace tandem::net {

std::vector<NetInterface> multicast_interfaces(bool include_loopback) {
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return {};
    std::map<std::string, NetInterface> by_name;
    for (ifaddrs* a = list; a; a = a->ifa_next) {
        if (!a->ifa_addr || !(a->ifa_flags & IFF_UP)) continue;
        bool loop = a->ifa_flags & IFF_LOOPBACK;
        if (loop ? !include_loopback : !(a->ifa_flags & IFF_MULTICAST)) continue;
        NetInterface& nif = by_name[a->ifa_name];
        nif.name = a->ifa_name;
        nif.index = ::if_nametoindex(a->ifa_name);
        if (a->ifa_addr->sa_family == AF_INET && !nif.has_ipv4) {
            nif.has_ipv4 = true;
            nif.ipv4 = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr;
        } else if (a->ifa_addr->sa_family == AF_INET6) {
            nif.has_ipv6 = true;
        }
    }
    ::freeifaddrs(list);
    std::vector<NetInterface> out;
    for (auto& [name, nif] : by_name)
        if (nif.index) out.push_back(nif);
    return out;
}

}  // namespace tandem::net

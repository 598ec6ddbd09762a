#include "tandem/net/local_backends.h"

#include "tandem/backend/registry.h"

namespace tandem::net {

std::vector<BeaconBackend> local_beacon_backends() {
    std::vector<BeaconBackend> out;
    for (const auto& b : BackendRegistry::instance().backends()) {
        if (!b.available || out.size() >= kMaxBeaconBackends) continue;
        BeaconBackend be{b.name, {}};
        for (const auto& d : b.devices) {
            if (be.devices.size() >= kMaxBeaconDevices) break;
            be.devices.push_back({d.name.substr(0, 80), d.memory_free, d.memory_total});
        }
        out.push_back(std::move(be));
    }
    return out;
}

}  // namespace tandem::net

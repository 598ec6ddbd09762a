#pragma once
// What this machine announces about its compute: the available backends of the registry and
// their devices, cut to what a beacon carries. The node command and the app's node service both
// announce it.
#include <vector>

#include "tandem/net/beacon.h"

namespace tandem::net {

// At most kMaxBeaconBackends backends of kMaxBeaconDevices devices, names cut to 80 bytes.
std::vector<BeaconBackend> local_beacon_backends();

}  // namespace tandem::net

// What a node announces about its compute: every available backend of the registry in its order
// (the CPU one always), none that is unavailable, each device's name and memory as the registry
// reports them, and the whole list fits a signed beacon.
#include <gtest/gtest.h>

#include "tandem/backend/registry.h"
#include "tandem/net/local_backends.h"
#include "tandem/net/net_version.h"

namespace tandem::net {
namespace {

TEST(LocalBackends, AvailableRegistryBackendsFitABeacon) {
    const auto announced = local_beacon_backends();
    std::vector<const BackendStatus*> available;
    for (const auto& b : BackendRegistry::instance().backends())
        if (b.available) available.push_back(&b);
    ASSERT_FALSE(available.empty());
    ASSERT_EQ(announced.size(), std::min(available.size(), kMaxBeaconBackends));
    EXPECT_EQ(announced.front().name, "cpu");
    for (size_t k = 0; k < announced.size(); ++k) {
        const auto& want = *available[k];
        const auto& got = announced[k];
        EXPECT_EQ(got.name, want.name);
        ASSERT_EQ(got.devices.size(), std::min(want.devices.size(), kMaxBeaconDevices));
        for (size_t d = 0; d < got.devices.size(); ++d) {
            EXPECT_EQ(got.devices[d].name, want.devices[d].name.substr(0, 80));
            EXPECT_EQ(got.devices[d].memory_free, want.devices[d].memory_free);
            EXPECT_EQ(got.devices[d].memory_total, want.devices[d].memory_total);
        }
    }
    Beacon b;
    b.name = "node";
    b.tcp_port = 47401;
    b.protocol_version = kProtocolVersion;
    b.backends = announced;
    const auto id = Identity::generate();
    EXPECT_EQ(parse_beacon(encode_beacon(b, id)).backends, announced);
}

}  // namespace
}  // namespace tandem::net

// Fuzzes the beacon parser: any datagram either parses or throws tandem::Error.
#include "fuzz_seeds.h"
#include "tandem/net/beacon.h"
#include "tandem/net/net_version.h"

using namespace tandem::net;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    Identity id = Identity::generate();
    Beacon b;
    b.name = "seed";
    b.app_version = "0.1.0";
    b.protocol_version = kProtocolVersion;
    b.tcp_port = 47401;
    b.backends = {{"cpu", {{"cpu0", 1, 2}}}, {"vulkan", {{"gpu0", 3, 4}, {"gpu1", 5, 6}}}};
    fuzz::write_seed("beacon-full", encode_beacon(b, id));
    b.backends.clear();
    b.leaving = true;
    fuzz::write_seed("beacon-leaving", encode_beacon(b, id));
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        Beacon b = parse_beacon({data, size});
        (void)b.node_id();
    } catch (const tandem::Error&) {
    }
    return 0;
}

// tandem-node: the headless cluster node (discovery, pairing and the tensor-parallel runtime
// arrive with the cluster issues).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "tandem/backend/registry.h"
#include "tandem/net/net_version.h"
#include "tandem/version.h"

int main(int argc, char** argv) {
    CLI::App app{"Tandem cluster node"};
    app.name("tandem-node");
    app.set_version_flag("--version", std::string("tandem-node ") + tandem::version() + " (protocol " +
                                          std::to_string(tandem::net::kProtocolVersion) + ")");
    bool list = false;
    app.add_flag("--list-devices", list, "Print the devices this node would offer and exit");
    CLI11_PARSE(app, argc, argv);
    if (list) {
        for (const auto& d : tandem::BackendRegistry::instance().all_devices())
            std::printf("%s %d %s\n", d.backend.c_str(), d.index, d.name.c_str());
        return 0;
    }
    std::fprintf(stderr, "tandem-node: serving is not available yet in this build\n");
    return 2;
}

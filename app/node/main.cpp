// tandem-node: the headless cluster node. `tandem-node serve` advertises the node, accepts
// pairing and serves paired peers; the other subcommands pair, list, un-pair and probe.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "node_commands.h"
#include "tandem/backend/registry.h"
#include "tandem/common/error.h"
#include "tandem/net/net_version.h"
#include "tandem/net/record.h"
#include "tandem/version.h"

using namespace tandem::node;

int main(int argc, char** argv) {
    CLI::App app{"Tandem cluster node"};
    app.name("tandem-node");
    app.set_version_flag("--version", std::string("tandem-node ") + tandem::version() +
                                          " (protocol " +
                                          std::to_string(tandem::net::kProtocolVersion) + ")");
    app.require_subcommand(0, 1);
    bool list = false;
    app.add_flag("--list-devices", list, "Print the devices this node would offer and exit");

    CommonOptions common;
    auto add_common = [&](CLI::App* sub) {
        sub->add_option(
            "--home", common.home,
            "Identity and peers folder (default $TANDEM_HOME or ~/.local/share/tandem)");
        sub->add_option("--name", common.name, "Name shown to other nodes (default: host name)");
        sub->add_option("--discovery-port", common.discovery_port, "UDP port of the beacons");
        sub->add_option("--interval-ms", common.interval_ms, "Beacon interval");
        sub->add_option("--expiry-ms", common.expiry_ms,
                        "Drop a node after this long without a beacon");
        sub->add_flag("--loopback", common.loopback,
                      "Also use the loopback interface for discovery");
    };

    ServeOptions serve;
    auto* s =
        app.add_subcommand("serve", "Advertise this node, accept pairing and serve paired peers");
    add_common(s);
    s->add_option("--port", serve.port, "TCP port (0: any)");
    s->add_flag("--no-pairing", serve.no_pairing, "Do not accept pairing");
    s->add_flag("--no-devices", serve.no_devices, "Announce no devices (skip loading backends)");
    s->add_option("--state-file", serve.state_file,
                  "Write a JSON snapshot (peers, code) here on change");
    s->add_flag("--no-cluster", serve.no_cluster, "Do not serve tensor-parallel sessions");
    s->add_option("--cluster-port", serve.cluster_port,
                  "Also serve cluster sessions over plain TCP on this port (shared secret)");
    s->add_option("--cluster-secret", serve.cluster_secret, "Shared secret for --cluster-port");
    s->add_option("--cluster-secret-file", serve.cluster_secret_file,
                  "File holding the shared secret (first line)");
    s->add_flag("--static-only", serve.static_only,
                "Serve only --cluster-port (no discovery, pairing or encrypted channels)");
    s->add_option("--backend", serve.backend, "Backend for cluster shards: cpu, vulkan or hip")
        ->capture_default_str();
    s->add_option("--device", serve.device, "Device index within the backend");
    s->add_option("--threads", serve.threads, "CPU threads (0: physical cores)");
    s->add_option("--models", serve.model_dirs,
                  "Folder with model files (a shard is read locally when the file matches)");
    s->add_option("--shard-cache", serve.shard_cache,
                  "Folder for shards streamed by a coordinator (default ~/.cache/tandem/shards)");

    std::string address, code, expect, node_id;
    auto* p = app.add_subcommand("pair", "Pair with a node: type the code it shows");
    add_common(p);
    p->add_option("address", address, "host:port of the joining node")->required();
    p->add_option("code", code, "The code the joining node shows (1234-5678)")->required();
    p->add_option("--expect", expect, "Fail unless the node has this node id");

    auto* peers = app.add_subcommand("peers", "List paired nodes");
    add_common(peers);
    auto* unpair = app.add_subcommand("unpair", "Forget a paired node; it can no longer connect");
    add_common(unpair);
    unpair->add_option("node_id", node_id)->required();

    int seconds = 3;
    auto* discover =
        app.add_subcommand("discover", "List the nodes announcing themselves on the LAN");
    add_common(discover);
    discover->add_option("--seconds", seconds, "How long to listen");

    auto* info =
        app.add_subcommand("info", "Ask a node for its announcement (manual host:port entry)");
    add_common(info);
    info->add_option("address", address)->required();

    int count = 10;
    size_t size = 64;
    auto* ping =
        app.add_subcommand("ping", "Open an encrypted channel to a paired node and time echoes");
    add_common(ping);
    ping->add_option("address", address)->required();
    ping->add_option("--count", count);
    ping->add_option("--size", size, "Message size in bytes");

    auto* id = app.add_subcommand("id", "Print this node's id (creating the identity if needed)");
    add_common(id);

    CLI11_PARSE(app, argc, argv);
    if (list) {
        for (const auto& d : tandem::BackendRegistry::instance().all_devices())
            std::printf("%s %d %s\n", d.backend.c_str(), d.index, d.name.c_str());
        return 0;
    }
    try {
        if (*p) return run_pair(common, address, code, expect);
        if (*peers) return run_peers(common);
        if (*unpair) return run_unpair(common, node_id);
        if (*discover) return run_discover(common, seconds);
        if (*info) return run_info(address);
        if (*ping) return run_ping(common, address, count, size);
        if (*id) return run_id(common);
        return run_serve(common, serve);  // `serve`, or no subcommand
    } catch (const tandem::net::RefusedError& e) {
        std::fprintf(stderr, "refused: %s\n", e.what());
        return kExitRefused;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}

#pragma once
// tandem-node's subcommands, one function each; each returns the process exit code.
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/net/node_service.h"

namespace tandem::node {

struct CommonOptions {
    std::string home;  // --home; default_home() when empty
    std::string name;  // --name; host name when empty
    uint16_t discovery_port = 47400;
    int interval_ms = 1000;
    int expiry_ms = 4000;
    bool loopback = false;
};

net::DiscoveryConfig discovery_config(const CommonOptions& o);
std::filesystem::path home_of(const CommonOptions& o);

struct ServeOptions {
    uint16_t port = 47401;
    bool no_pairing = false;
    bool no_devices = false;
    std::string state_file;  // JSON snapshot for scripts and tests, rewritten on change
    // Cluster sessions (tensor parallel): to paired peers over their SecureChannels, and with
    // --cluster-port also over plain TCP to coordinators that know the shared secret.
    bool no_cluster = false;
    bool static_only = false;  // only the plain TCP cluster port: no discovery, no pairing
    uint16_t cluster_port = 0;
    std::string cluster_secret, cluster_secret_file;
    std::string backend = "cpu";
    int device = 0, threads = 0;
    std::vector<std::string> model_dirs;
    std::string shard_cache;  // default: $XDG_CACHE_HOME/tandem/shards
};

int run_serve(const CommonOptions& common, const ServeOptions& serve);
int run_pair(const CommonOptions& common, const std::string& address, const std::string& code,
             const std::string& expect_id);
int run_peers(const CommonOptions& common);
int run_unpair(const CommonOptions& common, const std::string& node_id);
int run_discover(const CommonOptions& common, int seconds);
int run_info(const std::string& address);
int run_ping(const CommonOptions& common, const std::string& address, int count, size_t size);
int run_id(const CommonOptions& common);

// Exit code for a refusal by the other node (wrong code, not paired...), distinct from errors.
inline constexpr int kExitRefused = 3;

}  // namespace tandem::node

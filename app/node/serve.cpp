// `tandem-node serve`: runs the node service until SIGINT/SIGTERM.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>

#include "node_commands.h"
#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "tandem/net/cluster_worker.h"
#include "tandem/net/local_backends.h"

namespace tandem::node {

namespace fs = std::filesystem;

net::DiscoveryConfig discovery_config(const CommonOptions& o) {
    net::DiscoveryConfig d;
    d.port = o.discovery_port;
    d.interval = net::Millis(o.interval_ms);
    d.expiry = net::Millis(o.expiry_ms);
    d.loopback = o.loopback;
    return d;
}

fs::path home_of(const CommonOptions& o) {
    return o.home.empty() ? net::default_home() : fs::path(o.home);
}

namespace {

nlohmann::json backends_json(const std::vector<net::BeaconBackend>& backends) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& b : backends) {
        nlohmann::json devs = nlohmann::json::array();
        for (const auto& d : b.devices)
            devs.push_back({{"name", d.name},
                            {"memory_free", d.memory_free},
                            {"memory_total", d.memory_total}});
        arr.push_back({{"backend", b.name}, {"devices", devs}});
    }
    return arr;
}

nlohmann::json snapshot(net::NodeService& node) {
    nlohmann::json discovered = nlohmann::json::array();
    for (const auto& p : node.discovered())
        discovered.push_back({{"node_id", p.node_id},
                              {"name", p.beacon.name},
                              {"addresses", p.addresses},
                              {"version", p.beacon.app_version},
                              {"protocol_version", p.beacon.protocol_version},
                              {"compatible", p.compatible},
                              {"incompatibility", p.incompatibility},
                              {"accepts_pairing", p.beacon.accepts_pairing},
                              {"rdma", p.beacon.rdma},
                              {"backends", backends_json(p.beacon.backends)}});
    nlohmann::json paired = nlohmann::json::array();
    for (const auto& p : node.peers().list())
        paired.push_back({{"node_id", p.node_id}, {"name", p.name}});
    auto code = node.pairing_code();
    return {{"node_id", node.identity().node_id()},
            {"name", node.name()},
            {"port", node.port()},
            {"pairing_code", code ? nlohmann::json(*code) : nlohmann::json(nullptr)},
            {"discovered", discovered},
            {"paired", paired}};
}

// Atomic replace, 0600: the file holds the live pairing code.
void write_state(const std::string& file, const std::string& text) {
    std::string tmp = file + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
    ::close(fd);
    if (ok) ::rename(tmp.c_str(), file.c_str());
}

net::WorkerOptions worker_options(const CommonOptions& common, const ServeOptions& serve) {
    net::WorkerOptions wo;
    wo.name = common.name;
    wo.backend = serve.backend;
    wo.device = serve.device;
    wo.threads = serve.threads;
    for (const auto& d : serve.model_dirs) wo.model_dirs.emplace_back(d);
    wo.secret = serve.cluster_secret;
    if (!serve.cluster_secret_file.empty()) {
        std::ifstream in(serve.cluster_secret_file);
        if (!in) throw Error("cannot read " + serve.cluster_secret_file);
        std::getline(in, wo.secret);
    }
    if (!serve.shard_cache.empty()) {
        wo.cache_dir = serve.shard_cache;
    } else {
        const char* xdg = std::getenv("XDG_CACHE_HOME");
        const char* home = std::getenv("HOME");
        wo.cache_dir = xdg && *xdg ? fs::path(xdg) / "tandem" / "shards"
                       : home      ? fs::path(home) / ".cache" / "tandem" / "shards"
                                   : fs::temp_directory_path() / "tandem-shards";
    }
    return wo;
}

}  // namespace

int run_serve(const CommonOptions& common, const ServeOptions& serve) {
    // Signals are taken synchronously below; block them before any thread starts.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

    std::unique_ptr<net::ClusterWorker> worker;
    std::unique_ptr<net::Listener> cluster_listener;
    if (!serve.no_cluster) {
        net::WorkerOptions wo = worker_options(common, serve);
        worker = std::make_unique<net::ClusterWorker>(wo);
        if (serve.cluster_port != 0 || serve.static_only) {
            if (wo.secret.empty())
                throw Error("--cluster-port needs --cluster-secret or --cluster-secret-file");
            cluster_listener = std::make_unique<net::Listener>(serve.cluster_port, "");
            worker->start_tcp(*cluster_listener);
            std::printf("cluster port %u (shared secret)\n", unsigned(cluster_listener->port()));
            std::fflush(stdout);
        }
    }
    if (serve.static_only) {
        if (!worker) throw Error("--static-only needs cluster sessions (drop --no-cluster)");
        int sig = 0;
        sigwait(&sigs, &sig);
        log_info("node: stopping");
        worker->stop();
        return 0;
    }

    net::NodeConfig cfg;
    cfg.home = home_of(common);
    cfg.name = common.name;
    cfg.port = serve.port;
    cfg.accept_pairing = !serve.no_pairing;
    cfg.discovery = discovery_config(common);
    if (!serve.no_devices) cfg.backends = net::local_beacon_backends();
    net::NodeService node(cfg);
    if (worker) {
        // Sessions from paired peers reach the other workers over SecureChannels too.
        worker->set_paired(&node.identity(), &node.peers());
        node.set_channel_handler(net::cluster_channel_handler(*worker));
    }
    node.start();
    std::printf("node %s (%s) serving on TCP port %u\n", node.identity().node_id().c_str(),
                node.name().c_str(), unsigned(node.port()));
    std::fflush(stdout);

    std::string last_code, last_state;
    for (;;) {
        timespec tick{0, 250'000'000};
        int sig = sigtimedwait(&sigs, nullptr, &tick);
        if (sig == SIGINT || sig == SIGTERM) break;
        auto code = node.pairing_code();
        if (code && *code != last_code) {
            // The one place the code is shown on a headless node: its log (journal).
            std::printf("pairing code: %s (one-time, valid 5 min, 5 attempts)\n",
                        net::format_pairing_code(*code).c_str());
            // What the app renders as a QR code.
            std::printf("pairing link: tandem-pair:%s?code=%s\n", node.identity().node_id().c_str(),
                        code->c_str());
            std::fflush(stdout);
            last_code = *code;
        }
        if (!serve.state_file.empty()) {
            std::string text = snapshot(node).dump(2) + "\n";
            if (text != last_state) {
                write_state(serve.state_file, text);
                last_state = text;
            }
        }
    }
    log_info("node: stopping");
    node.stop();
    return 0;
}

}  // namespace tandem::node

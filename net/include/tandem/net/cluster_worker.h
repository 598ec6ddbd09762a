#pragma once
// The worker side of cluster mode (what `tandem-node serve` runs): accepts a shard assignment
// from a coordinator, loads its shard from a local copy of the model (same fingerprint), from
// its shard cache, or from the coordinator's stream (then caches it), builds an Engine on its
// backend, joins the other ranks, and runs the steps the coordinator sends (the same
// Engine::decode calls on the same tokens on every rank).
//
// Connections arrive either as plain TCP with a shared secret in the hello (static addresses),
// or as paired, encrypted SecureChannels handed over by the NodeService.
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "tandem/net/socket.h"
#include "tandem/net/transport.h"

namespace tandem::net {

class Identity;
class PeerStore;
class SecureChannel;

struct WorkerOptions {
    std::string name;    // shown to the coordinator (default: host name)
    std::string secret;  // static mode: every hello must carry it
    std::string backend = "cpu";
    int device = 0;
    int threads = 0;
    std::vector<std::filesystem::path> model_dirs;  // where a local copy may be
    std::filesystem::path cache_dir;                // streamed shards
    Millis idle_timeout{10000};  // no message (not even a heartbeat) this long: session over
    // Paired mode: the other workers are reached over SecureChannels with these.
    const Identity* identity = nullptr;
    PeerStore* peers = nullptr;
};

class ClusterWorker {
  public:
    explicit ClusterWorker(WorkerOptions options);
    ~ClusterWorker();

    // Serves one connection until it ends; its first message (`first`, or the first received
    // when empty) must be a hello. `paired`: the transport is an authenticated channel (the
    // secret is then not required).
    void serve(Transport& transport, bool paired, std::vector<uint8_t> first = {});
    // Static mode: accepts plain TCP connections on `listener`, one thread each, until stop().
    void start_tcp(Listener& listener);
    void stop();
    // Paired mode: the keys used to reach other workers (set before sessions arrive).
    void set_paired(const Identity* identity, PeerStore* peers) {
        opts_.identity = identity;
        opts_.peers = peers;
    }

    // Sessions served so far (tests, logs).
    int sessions() const { return sessions_.load(); }

  private:
    struct PeerLink;
    void run_session(Transport& control);
    void accept_loop(Listener* listener);
    std::unique_ptr<Transport> take_peer(uint64_t session, int rank, Millis timeout);

    WorkerOptions opts_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::map<std::pair<uint64_t, int>, PeerLink*> waiting_;  // peer links not yet taken
    std::atomic<bool> stop_{false};
    std::atomic<int> sessions_{0};
    std::thread accept_thread_;
    std::vector<std::thread> conn_threads_;
    std::string info_;  // encoded NodeInfo (calibrated once)
};

// The NodeService channel handler of a node that serves cluster sessions to paired peers: a
// channel whose first message is a cluster hello goes to `worker`; anything else is echoed
// (what `tandem-node ping` expects).
std::function<void(SecureChannel&)> cluster_channel_handler(ClusterWorker& worker);

// True when `msg` starts like a cluster hello.
bool is_cluster_hello(std::span<const uint8_t> msg);

}  // namespace tandem::net

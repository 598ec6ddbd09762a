#pragma once
// The coordinator of cluster mode: rank 0 of a tensor-parallel group whose other ranks are
// tandem-node workers. It calibrates every node (timed matvec, free memory), splits the model
// with shares proportional to speed (checked against each node's memory plan), sends each
// worker its assignment (streaming the shard to nodes without the model), and then runs an
// ordinary Engine on its own shard: every decode() is forwarded to the workers first (the same
// tokens on every rank), and the logits are all-gathered over the collective.
//
// Faults: a heartbeat pings idle workers; a node that dies or stalls fails the current step
// (within the collective timeout) with an error naming the node, and the cluster is then marked
// broken. recover() replaces the engine in place with one on the nodes that still answer, or
// with the whole model on this machine; what was generated before stays with the caller.
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tandem/engine/engine.h"
#include "tandem/net/collective_group.h"
#include "tandem/net/transport.h"

namespace tandem::net {

namespace cluster {
class TimedTransport;
}

struct ClusterOptions {
    std::vector<std::string> nodes;  // host:port of every worker
    std::string secret;              // static mode: shared by the workers
    bool paired = false;             // paired mode: SecureChannels with the keys in `home`
    std::filesystem::path home;      // identity + peers.json (empty: default_home())
    WireType wire = WireType::F32;
    Millis timeout{1500};        // a step waits this long for a node, then fails
    Millis heartbeat{500};       // ping interval while idle (0: off)
    std::vector<double> shares;  // fixed shares (coordinator first); empty: calibrate
    // Simulation for benchmarks: every rank delays each collective message by this much.
    std::chrono::microseconds simulated_delay{0};
    // Local rank 0 (and the local fallback).
    std::string backend = "cpu";
    int device = 0, threads = 0;
    engine::EngineOptions engine;
};

struct ClusterNodeReport {
    std::string address;  // "local" for rank 0
    std::string name, backend, device;
    double matvec_gbps = 0;
    uint64_t memory_free = 0;
    double share = 0;
    std::string shard;   // heads / columns / experts / vocab held
    std::string source;  // where its shard came from
    double load_seconds = 0;
};

// Live timings of the running group, measured by the coordinator (rank 0) on its own clock and
// averaged over the recent steps (exponential, weight 1/4 for the newest), so they follow a
// change within a few tokens.
struct ClusterRankHealth {
    std::string address;  // "local" for rank 0
    std::string name;
    double share = 0;
    // One step graph as this rank took it: from the step's start on rank 0 until this rank's
    // last contribution (the logits gather) arrived; for rank 0 until its gather returned.
    double step_ms = 0;
    // Per all-reduce: time rank 0 spent exchanging with this rank (send + wait for its part);
    // for rank 0, the whole all-reduce call.
    double all_reduce_us = 0;
};

struct ClusterHealth {
    bool clustered = false;  // false: the whole model runs here (no group, or after recover())
    bool broken = false;
    uint64_t steps = 0;        // step graphs timed since the group was (re)built
    uint64_t all_reduces = 0;  // all-reduces timed since then
    std::vector<ClusterRankHealth> ranks;
};

class ClusterCoordinator : private engine::StepListener {
  public:
    // Connects to every node, plans, distributes and builds the engine. Throws tandem::Error
    // naming the node that could not be reached or refused.
    ClusterCoordinator(std::filesystem::path model, ClusterOptions options);
    ~ClusterCoordinator() override;

    // The engine to run (rank 0 of the group, or the local one after recover()). Its address
    // stays the same for the coordinator's life.
    engine::Engine& engine() { return *engine_; }
    // For owners that need the engine by unique_ptr (the API server). The coordinator keeps
    // driving it (and recover() rebuilds it in place), so the owner keeps it alive as long as
    // it uses this coordinator.
    std::unique_ptr<engine::Engine> take_engine();

    bool clustered() const { return clustered_; }
    bool broken() const { return broken_; }
    std::string broken_reason() const;
    int n_ranks() const { return static_cast<int>(reports_.size()); }
    const std::vector<ClusterNodeReport>& nodes() const { return reports_; }
    std::string describe() const;  // one line per rank
    // Thread-safe snapshot of the live timings (zeros until the first step).
    ClusterHealth health() const;

    // After a failure: re-plans on the nodes that still answer (>= 1 worker), else loads the
    // whole model locally. Returns a line saying which. The engine keeps its address; its
    // cache is empty afterwards.
    std::string recover();

  private:
    class StepCollective;
    struct Worker;
    void connect_all(const std::vector<std::string>& nodes);
    void build_local();
    void teardown();
    void on_decode(int64_t n_past, std::span<const int32_t> ids, bool all_logits) override;
    void heartbeat_loop();
    [[noreturn]] void fail_step(const std::string& what);
    std::string diagnose(const std::string& error);
    void note_all_reduce(int64_t t0_ns, int64_t t1_ns, const std::vector<int64_t>& busy_before);
    void note_step_end(int64_t t_ns);

    std::filesystem::path model_path_;
    ClusterOptions opts_;
    std::unique_ptr<engine::Engine> owned_engine_;
    engine::Engine* engine_ = nullptr;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::unique_ptr<StepCollective> collective_;
    std::vector<ClusterNodeReport> reports_;
    bool clustered_ = false;

    mutable std::mutex mu_;  // steps vs heartbeat
    std::condition_variable cv_;
    int pending_steps_ = 0;  // graphs started whose final all-gather has not returned
    std::atomic<bool> broken_{false};
    std::string broken_reason_;
    std::atomic<bool> stop_{false};
    std::thread heartbeat_;

    // Health: the timed links (by rank, nullptr at 0; owned by the collective) and the averages.
    std::vector<cluster::TimedTransport*> timed_;
    mutable std::mutex health_mu_;
    std::vector<double> step_ms_, all_reduce_us_;  // by rank
    uint64_t steps_ = 0, all_reduces_ = 0;
    int64_t step_start_ns_ = 0;  // engine thread only
};

}  // namespace tandem::net

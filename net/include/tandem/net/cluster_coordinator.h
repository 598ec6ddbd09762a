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
};

}  // namespace tandem::net

#pragma once
// --cluster on the model-running subcommands: the model runs tensor-parallel over this process
// (rank 0) and tandem-node workers (see docs/cluster.md).
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "tandem/server/api.h"

namespace tandem::cli {

struct RuntimeOptions;
struct OpenModel;

struct ClusterCliOptions {
    std::string nodes;  // host:port,host:port (or node-id@host:port with --cluster-paired)
    std::string secret, secret_file;
    bool paired = false;
    std::string home;    // identity + peers.json for --cluster-paired
    std::string shares;  // "2,1,1": fixed shares, coordinator first (default: calibrated)
    std::string wire = "f32";
    int timeout_ms = 1500;
};

void add_cluster_options(CLI::App& sub, ClusterCliOptions& o);

// open_model for --cluster: the whole model mapped here (tokenizer, hyper-parameters) and an
// engine that is rank 0 of the group.
OpenModel open_cluster_model(const RuntimeOptions& o, bool with_tokenizer);

// After a failed request: when the cluster broke, re-plan on the nodes left or go local, and
// say so on stderr. Returns true when it recovered (the next request can run).
bool recover_cluster(OpenModel& m);

// The API server's generator for a cluster model: a request that fails because a node failed
// gets its error, and the cluster recovers before the next one.
std::unique_ptr<server::Generator> recovering_generator(std::unique_ptr<server::Generator> inner,
                                                        OpenModel& m);

}  // namespace tandem::cli

#pragma once
// Options every model-running subcommand shares (--backend, --device, --threads, --ctx,
// --kv-type), and opening a model with them.
#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>

#include "cluster_options.h"
#include "tandem/engine/engine.h"
#include "tandem/tokenizer/tokenizer.h"

namespace tandem::net {
class ClusterCoordinator;
}

namespace tandem::cli {

struct RuntimeOptions {
    std::string model;
    std::string backend = "cpu";
    int device = 0;
    int threads = 0;     // 0: all physical cores
    int64_t ctx = 4096;  // 0: the model's training context
    std::string kv_type = "f16";
    int64_t batch = 512;
    ClusterCliOptions cluster;  // --cluster...
};

// Adds -m/--model (required) and the runtime options to a subcommand.
void add_runtime_options(CLI::App& sub, RuntimeOptions& opts);

struct OpenModel {
    std::shared_ptr<net::ClusterCoordinator> cluster;  // --cluster: drives `engine` (rank 0)
    std::shared_ptr<engine::Model> model;
    std::unique_ptr<engine::Engine> engine;
    std::optional<tokenizer::Tokenizer> tok;        // absent when the file has no vocabulary
    const tokenizer::Tokenizer& tokenizer() const;  // throws when absent
};

// Loads the model and creates the engine on the chosen backend; with_tokenizer loads the
// vocabulary too (optional: synthetic models have none).
OpenModel open_model(const RuntimeOptions& opts, bool with_tokenizer);

// Parses "1,2,3" (spaces allowed); throws tandem::Error naming the bad item.
std::vector<int32_t> parse_ids(const std::string& text);

}  // namespace tandem::cli

#include "tandem/engine/sampler.h"

namespace tandem::cli {
// --temp, --top-k, --top-p, --min-p, --repeat-penalty, --presence-penalty, --seed.
void add_sampling_options(CLI::App& sub, engine::SamplingParams& p);
}  // namespace tandem::cli

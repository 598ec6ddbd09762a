#pragma once
// Fit hints for the model lists (tandem-cli list, pull --list, the desktop app's library and
// search pages): whether a model fits this machine, and a cluster, at a default context.
//
// A local file gets the memory planner's exact plan (weights, KV, scratch, overhead) from its
// GGUF header (nothing else is read). A file not downloaded yet is known only by its size, so
// its hint is an estimate: it cannot fit when its weights alone exceed the free memory, and is
// called likely to fit when they leave room for a KV cache and scratch (20 % of the memory).
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/library/model_record.h"
#include "tandem/planner/fit.h"

namespace tandem::library {

enum class FitVerdict {
    Fits,     // planned: fits at n_ctx
    TooBig,   // does not fit even at the smallest context / weights alone exceed the memory
    Likely,   // estimate only (remote file): weights leave room for context
    Tight,    // estimate only: weights fit but may not leave room for the context
    Unknown,  // the file could not be read (error in `text`)
};

struct FitHint {
    FitVerdict verdict = FitVerdict::Unknown;
    int64_t n_ctx = 0;        // context the plan used (planned verdicts)
    uint64_t need_bytes = 0;  // planned total on the most loaded device, or the weights (estimate)
    uint64_t free_bytes = 0;  // free memory of that device (sum over devices for a cluster)
    std::string text;         // one line for people: "fits: 1.2 GiB of 30.1 GiB at 4096 tokens"
};

struct FitHintOptions {
    int64_t n_ctx = 4096;  // the default context (capped at the model's training context)
    DType kv_type = DType::F16;
    // The devices the model would run on; empty: this machine's available RAM (this_machine()).
    std::vector<planner::DeviceBudget> local;
    // A cluster to plan a tensor-parallel split over (this machine and its paired peers, with the
    // free memory their discovery beacons announce); empty: no cluster hint.
    std::vector<planner::DeviceBudget> cluster;
};

// This machine's budget: available RAM (MemAvailable) with the CPU runtime overhead.
std::vector<planner::DeviceBudget> this_machine();

// Short label for a table column: "yes", "no", "likely", "tight", "?".
std::string fit_label(FitVerdict v);

// Local model: the planner's plan at min(n_ctx, training context) on options.local. Never throws:
// an unreadable file gives Unknown with the reason.
FitHint fit_hint(const ModelRecord& model, const FitHintOptions& options);
// The same for the cluster in options.cluster (Unknown with "no cluster" when it is empty).
FitHint cluster_fit_hint(const ModelRecord& model, const FitHintOptions& options);
// A file of `bytes` not downloaded yet (repo listing, search): the size-only estimate against
// options.local (or options.cluster when `cluster` is true: the sum of its memory).
FitHint fit_hint_for_download(uint64_t bytes, const FitHintOptions& options, bool cluster = false);

}  // namespace tandem::library

// Fit hints: the planner's verdict for local files, a size-only estimate for remote ones.
#include "tandem/library/fit_hint.h"

#include <algorithm>

#include "tandem/common/error.h"
#include "tandem/common/sysinfo.h"
#include "tandem/engine/model.h"
#include "tandem/planner/memory_plan.h"

namespace tandem::library {
namespace {

// A remote file is "likely" to fit when its weights use at most this share of usable memory.
constexpr double kLikelyShare = 0.8;
constexpr double kMargin = 0.05;  // the planner's default safety margin

FitHint planned(const ModelRecord& m, const std::vector<planner::DeviceBudget>& devices,
                const FitHintOptions& o) {
    FitHint h;
    try {
        const auto whole = engine::load_model(m.path());
        planner::FitOptions fo;
        fo.n_ctx =
            std::min<int64_t>(o.n_ctx, whole->hp.n_ctx_train > 0 ? whole->hp.n_ctx_train : o.n_ctx);
        fo.kv_type = o.kv_type;
        fo.margin = kMargin;
        h.n_ctx = fo.n_ctx;
        for (const auto& d : devices) h.free_bytes += d.free_bytes;
        try {
            const auto r = planner::fit(*whole, devices, fo);
            h.verdict = FitVerdict::Fits;
            for (const auto& p : r.devices) h.need_bytes = std::max(h.need_bytes, p.total());
            uint64_t total = 0;
            for (const auto& p : r.devices) total += p.total();
            h.text =
                "fits: " + planner::format_gib(total) + " of " + planner::format_gib(h.free_bytes) +
                " free at " + std::to_string(h.n_ctx) + " tokens" +
                (devices.size() > 1 ? " over " + std::to_string(devices.size()) + " devices" : "");
        } catch (const Error& e) {
            h.verdict = FitVerdict::TooBig;
            h.text = e.what();
        }
    } catch (const std::exception& e) {
        h.verdict = FitVerdict::Unknown;
        h.text = e.what();
    }
    return h;
}

}  // namespace

std::vector<planner::DeviceBudget> this_machine() {
    return {{"this machine", host_memory().available, planner::runtime_overhead(DeviceType::Cpu)}};
}

std::string fit_label(FitVerdict v) {
    switch (v) {
        case FitVerdict::Fits:
            return "yes";
        case FitVerdict::TooBig:
            return "no";
        case FitVerdict::Likely:
            return "likely";
        case FitVerdict::Tight:
            return "tight";
        case FitVerdict::Unknown:
            break;
    }
    return "?";
}

FitHint fit_hint(const ModelRecord& model, const FitHintOptions& options) {
    return planned(model, options.local.empty() ? this_machine() : options.local, options);
}

FitHint cluster_fit_hint(const ModelRecord& model, const FitHintOptions& options) {
    if (options.cluster.empty()) {
        FitHint h;
        h.text = "no cluster: pair peers (tandem-node pair) to plan a split";
        return h;
    }
    return planned(model, options.cluster, options);
}

FitHint fit_hint_for_download(uint64_t bytes, const FitHintOptions& options, bool cluster) {
    const auto devices =
        cluster ? options.cluster : (options.local.empty() ? this_machine() : options.local);
    FitHint h;
    if (devices.empty()) {
        h.text = "no cluster: pair peers (tandem-node pair) to plan a split";
        return h;
    }
    uint64_t usable = 0, overhead = 0;
    for (const auto& d : devices) {
        h.free_bytes += d.free_bytes;
        usable += planner::usable_bytes(d, kMargin);
        overhead += d.overhead_bytes;
    }
    h.need_bytes = bytes;
    const double need = double(bytes) + double(overhead);
    if (need > double(usable)) {
        h.verdict = FitVerdict::TooBig;
        h.text = "no: weights alone need " + planner::format_gib(bytes) + ", " +
                 planner::format_gib(h.free_bytes) + " free";
    } else if (need <= kLikelyShare * double(usable)) {
        h.verdict = FitVerdict::Likely;
        h.text = "likely: weights " + planner::format_gib(bytes) + " of " +
                 planner::format_gib(h.free_bytes) + " free (context not planned until downloaded)";
    } else {
        h.verdict = FitVerdict::Tight;
        h.text = "tight: weights " + planner::format_gib(bytes) + " of " +
                 planner::format_gib(h.free_bytes) + " free leave little room for context";
    }
    return h;
}

}  // namespace tandem::library

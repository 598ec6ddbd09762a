#include "tandem/planner/fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tandem/common/error.h"
#include "tandem/planner/shard_shape.h"

namespace tandem::planner {

uint64_t usable_bytes(const DeviceBudget& d, double margin) {
    return static_cast<uint64_t>(double(d.free_bytes) * std::clamp(1.0 - margin, 0.0, 1.0));
}

DeviceBudget budget_of(const DeviceInfo& d) {
    return {d.backend + ":" + std::to_string(d.index), d.memory_free, runtime_overhead(d.type)};
}

namespace {

struct Attempt {
    std::vector<DevicePlan> plans;
    int worst = -1;         // device most over its usable bytes (-1: all fit)
    double worst_over = 0;  // need / usable of that device
};

Attempt try_plan(const engine::Model& whole, const std::vector<DeviceBudget>& devices,
                 const std::vector<double>& shares, int64_t n_ctx, const FitOptions& o) {
    PlanOptions po{n_ctx, o.n_batch, o.kv_type, o.all_logits};
    Attempt a;
    const int n = static_cast<int>(devices.size());
    for (int k = 0; k < n; ++k) {
        const auto& dev = devices[static_cast<size_t>(k)];
        const engine::ShardSpec shard = n == 1 ? engine::ShardSpec::whole(whole.hp)
                                               : shard_by_shares(whole.hp, k, shares, o.ff_align);
        DevicePlan p = plan_device(whole, shard, po, dev.overhead_bytes);
        p.device = dev.name;
        const double usable = double(usable_bytes(dev, o.margin));
        const double over = usable > 0 ? double(p.total()) / usable : 1e30;
        if (over > 1.0 && over > a.worst_over) {
            a.worst = k;
            a.worst_over = over;
        }
        a.plans.push_back(std::move(p));
    }
    return a;
}

// Largest multiple of step in [step, max_ctx] that fits (0 when even `step` does not).
int64_t largest_ctx(const engine::Model& whole, const std::vector<DeviceBudget>& devices,
                    const std::vector<double>& shares, const FitOptions& o, int64_t max_ctx) {
    int64_t lo = 0, hi = max_ctx / o.ctx_step;  // in steps; lo fits (0 = nothing)
    while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (try_plan(whole, devices, shares, mid * o.ctx_step, o).worst < 0)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo * o.ctx_step;
}

std::string refusal(const Attempt& a, const std::vector<DeviceBudget>& devices, int64_t n_ctx,
                    const FitOptions& o) {
    const DevicePlan& p = a.plans[static_cast<size_t>(a.worst)];
    const DeviceBudget& d = devices[static_cast<size_t>(a.worst)];
    char margin[32];
    std::snprintf(margin, sizeof margin, "%.0f%%", o.margin * 100.0);
    return "does not fit: needs " + format_gib(p.total()) + " on " + d.name + ", " +
           format_gib(d.free_bytes) + " free (weights " + format_gib(p.weight_bytes) + ", KV " +
           format_gib(p.kv_bytes) + " for " + std::to_string(n_ctx) + " tokens, scratch " +
           format_gib(p.scratch_bytes) + ", overhead " + format_gib(p.overhead_bytes) +
           "; safety margin " + margin + ")";
}

}  // namespace

FitResult fit(const engine::Model& whole, const std::vector<DeviceBudget>& devices,
              const FitOptions& o) {
    if (devices.empty()) throw Error("fit: no devices given");
    if (o.ctx_step < 1) throw Error("fit: ctx_step must be positive");
    const int64_t max_ctx = o.max_ctx > 0 ? o.max_ctx : whole.hp.n_ctx_train;
    const size_t n = devices.size();

    // Candidate splits: proportional to usable memory, and even.
    std::vector<std::vector<double>> candidates;
    std::vector<double> prop(n), even(n, 1.0 / double(n));
    double sum = 0;
    for (size_t k = 0; k < n; ++k) sum += std::max(1.0, double(usable_bytes(devices[k], o.margin)));
    for (size_t k = 0; k < n; ++k)
        prop[k] = std::max(1.0, double(usable_bytes(devices[k], o.margin))) / sum;
    candidates.push_back(prop);
    if (n > 1 && prop != even) candidates.push_back(even);

    FitResult best;
    std::string first_error;
    for (const auto& shares : candidates) {
        const int64_t want = o.n_ctx > 0 ? o.n_ctx : o.ctx_step;
        Attempt a = try_plan(whole, devices, shares, want, o);
        if (a.worst >= 0) {
            if (first_error.empty()) first_error = refusal(a, devices, want, o);
            continue;
        }
        const int64_t ctx = o.n_ctx > 0 ? o.n_ctx : largest_ctx(whole, devices, shares, o, max_ctx);
        if (ctx > best.n_ctx) {
            best.n_ctx = ctx;
            best.shares = shares;
            best.devices = try_plan(whole, devices, shares, ctx, o).plans;
        }
    }
    if (best.n_ctx == 0) throw Error(first_error);
    return best;
}

}  // namespace tandem::planner

#pragma once
// Fit: given the free memory of each device, the largest context (and, for a split over several
// devices, the shares) whose plan fits every device with a safety margin; or a refusal naming
// the device that is short, before anything is allocated.
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/planner/memory_plan.h"

namespace tandem::planner {

struct DeviceBudget {
    std::string name;             // "cpu", "A", "node B"
    uint64_t free_bytes = 0;      // what the backend reports free (Vulkan budget, HIP+GTT, RAM)
    uint64_t overhead_bytes = 0;  // runtime_overhead() of its kind
};

struct FitOptions {
    int64_t n_ctx = 0;       // > 0: exactly this context (refused if it does not fit)
    int64_t max_ctx = 0;     // largest context to consider (0: the model's training context)
    int64_t ctx_step = 256;  // contexts tried are multiples of this
    int64_t n_batch = 512;
    DType kv_type = DType::F16;
    bool all_logits = false;
    double margin = 0.05;    // fraction of each device's free memory kept unused
    int64_t ff_align = 256;  // FFN columns per shard in multiples of this (a quant block)
};

struct FitResult {
    int64_t n_ctx = 0;
    std::vector<double> shares;       // per device (sum 1)
    std::vector<DevicePlan> devices;  // per device, in the order given
};

// Usable bytes of a device: free minus the margin.
uint64_t usable_bytes(const DeviceBudget& d, double margin);

// The budget of a device as its backend reports it (DeviceInfo::memory_free: Vulkan's heap
// budgets less usage, every heap on unified memory; HIP's free memory, on an APU the carve-out's
// free part plus GTT's room up to the host's available memory; MemAvailable for the CPU) with
// the runtime overhead of its kind. Named "backend:index".
DeviceBudget budget_of(const DeviceInfo& device);

// One device: the whole model. Several: a tensor-parallel split, shares chosen among splits
// proportional to usable memory and the even split (whichever allows the larger context).
// Throws tandem::Error "does not fit: needs 71.2 GiB on node B, 64.0 GiB free ..." when no
// context of at least ctx_step (or exactly n_ctx) fits.
FitResult fit(const engine::Model& whole, const std::vector<DeviceBudget>& devices,
              const FitOptions& options);

}  // namespace tandem::planner

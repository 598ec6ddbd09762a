#pragma once
// Whether a model fits this machine before it is loaded: the memory planner's plan of the whole
// model at the wanted context against the free memory of the chosen device. Reads the GGUF
// header and tensor table only; call it off the UI thread.
#include <QString>

#include <cstdint>
#include <string>
#include <vector>

#include "tandem/planner/fit.h"

namespace tandem::ui {

struct FitVerdict {
    bool fits = false;
    int64_t nCtx = 0;        // the context planned
    uint64_t needBytes = 0;  // the plan's total on the device (0 when it does not fit)
    uint64_t freeBytes = 0;  // free on the device
    QString message;         // "fits: 1.2 GiB of 30.1 GiB" / the planner's refusal
};

// Free memory of the device a model would run on: the host's available RAM for "cpu" (no
// backend plugins are loaded for that), else the device the backend reports. Throws
// tandem::Error for an unknown backend or device.
planner::DeviceBudget deviceBudget(const std::string& backend, int device);

// The plan of `gguf` at min(ctx, the model's training context) on `budget`.
FitVerdict checkFit(const std::string& gguf, int64_t ctx, const planner::DeviceBudget& budget);

// The plan of `gguf` split over `devices` (tensor parallel): the largest context up to `ctx`
// and each device's share. Throws tandem::Error (the planner's message) when it does not fit.
planner::FitResult planSplit(const std::string& gguf, int64_t ctx,
                             const std::vector<planner::DeviceBudget>& devices);

}  // namespace tandem::ui

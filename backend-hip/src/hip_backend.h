#pragma once
// The HIP backend: weights, KV cache and scratch in device memory, step inputs/outputs through
// one pinned staging buffer, every node of a step enqueued on one stream (a captured graph once
// a step shape repeats) and waited for once. Every op of the forward pass runs here (docs/hip.md).
#include <memory>

#include "tandem/backend/backend.h"

namespace tandem::hip {

std::unique_ptr<Backend> make_hip_backend(DeviceInfo info);

}  // namespace tandem::hip

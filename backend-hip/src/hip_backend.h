#pragma once
// The HIP backend: weights, KV cache and scratch in device memory, step inputs/outputs through
// one pinned staging buffer, every node of a step enqueued on one stream and waited for once.
// can_compute() stays false until every op of the forward pass runs here (docs/hip.md); the ops
// that exist run through compute() and are tested directly against the CPU backend.
#include <memory>

#include "tandem/backend/backend.h"

namespace tandem::hip {

std::unique_ptr<Backend> make_hip_backend(DeviceInfo info);

}  // namespace tandem::hip

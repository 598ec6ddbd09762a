#pragma once
// Exact per-device memory plan of one model shard before anything is allocated: the shard's
// weight bytes, its KV cache, the scratch peak of the largest step graph (activations placed by
// liveness, buffers reused: Graph::plan_scratch) and a runtime overhead per device kind.
#include <cstdint>
#include <string>

#include "tandem/backend/device.h"
#include "tandem/common/dtype.h"
#include "tandem/engine/model.h"

namespace tandem::planner {

struct PlanOptions {
    int64_t n_ctx = 4096;        // KV rows (0: the model's training context)
    int64_t n_batch = 512;       // most tokens per prefill step (capped at n_ctx, as the engine)
    DType kv_type = DType::F16;  // F16 or F32
    bool all_logits = false;     // steps return every token's logits (eval) rather than the last
};

struct DevicePlan {
    std::string device;  // "cpu", "A", "node B", ...
    engine::ShardSpec shard;
    int64_t n_ctx = 0;
    uint64_t weight_bytes = 0;
    uint64_t kv_bytes = 0;
    uint64_t scratch_bytes = 0;  // peak of the planned scratch buffer (largest step graph)
    uint64_t overhead_bytes = 0;
    uint64_t total() const { return weight_bytes + kv_bytes + scratch_bytes + overhead_bytes; }
};

// Bytes a backend needs beyond weights/KV/scratch (driver context, command buffers, staging,
// per-thread activation buffers). An estimate per device kind, documented in docs/memory.md.
uint64_t runtime_overhead(DeviceType type);

// The plan of shard `shard` of `whole` (a model loaded with ShardSpec::whole; nothing of its
// data is read). Throws tandem::Error for a bad KV type or shard.
DevicePlan plan_device(const engine::Model& whole, const engine::ShardSpec& shard,
                       const PlanOptions& options, uint64_t overhead_bytes);

// "71.2 GiB" (below 1 GiB: "312.5 MiB")
std::string format_gib(uint64_t bytes);

}  // namespace tandem::planner

#include "tandem/planner/memory_plan.h"

#include <algorithm>
#include <cstdio>

#include "tandem/common/error.h"
#include "tandem/engine/graph_builder.h"
#include "tandem/planner/shard_shape.h"

namespace tandem::planner {

uint64_t runtime_overhead(DeviceType type) {
    constexpr uint64_t MiB = 1024 * 1024;
    // CPU: thread pool stacks and the quant kernels' per-thread activation buffers. GPUs: the
    // driver context, descriptor pools, command buffers and a staging buffer for uploads.
    return type == DeviceType::Cpu ? 64 * MiB : 512 * MiB;
}

DevicePlan plan_device(const engine::Model& whole, const engine::ShardSpec& shard,
                       const PlanOptions& options, uint64_t overhead_bytes) {
    auto shaped = shape_shard(whole, shard);
    engine::CacheConfig cache;
    cache.n_ctx = options.n_ctx > 0 ? options.n_ctx : whole.hp.n_ctx_train;
    cache.kv_type = options.kv_type;
    if (cache.n_ctx <= 0) throw Error("planner: context length must be positive");

    DevicePlan p;
    p.shard = shard;
    p.n_ctx = cache.n_ctx;
    p.weight_bytes = shaped->weight_bytes();
    for (const KvDesc& d : engine::kv_layout(*shaped, cache))
        p.kv_bytes += row_bytes(d.type, uint64_t(d.width)) * uint64_t(d.n_ctx);
    // The engine builds one graph per token count it meets and reserves the largest; a decode
    // step (1 token) and a full prefill batch bound every count in between.
    const int64_t batch = std::max<int64_t>(1, std::min(options.n_batch, cache.n_ctx));
    for (int64_t n_tokens : {int64_t(1), batch}) {
        Graph g = engine::build_step_graph(*shaped, cache, {n_tokens, options.all_logits});
        p.scratch_bytes = std::max(p.scratch_bytes, g.scratch_bytes());
    }
    p.overhead_bytes = overhead_bytes;
    return p;
}

std::string format_gib(uint64_t bytes) {
    char buf[32];
    const double gib = double(bytes) / (1024.0 * 1024.0 * 1024.0);
    // Small figures in MiB so they do not all read "0.0 GiB".
    if (gib < 1.0)
        std::snprintf(buf, sizeof buf, "%.1f MiB", gib * 1024.0);
    else
        std::snprintf(buf, sizeof buf, "%.1f GiB", gib);
    return buf;
}

}  // namespace tandem::planner

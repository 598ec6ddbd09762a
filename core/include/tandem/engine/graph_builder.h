#pragma once
// Emits the step graph of a model (or of one tensor-parallel shard of it) for n_tokens new
// tokens. The graph depends only on the step's shape, so the engine builds it once per token
// count and reuses it; positions and n_past are per-step inputs.
#include <cstdint>

#include "tandem/backend/backend.h"
#include "tandem/backend/graph.h"
#include "tandem/engine/model.h"

namespace tandem::engine {

// Step I/O slots.
inline constexpr int kInputIds = 0;        // i32 [n_tokens]
inline constexpr int kInputPositions = 1;  // i32 [n_tokens]
inline constexpr int kOutputLogits = 0;    // f32 [n_out, n_vocab] (every token or the last)

struct StepShape {
    int64_t n_tokens = 1;
    bool all_logits = false;  // logits of every token (eval) or only the last (generation)
};

struct CacheConfig {
    int64_t n_ctx = 4096;
    DType kv_type = DType::F16;
};

// KV tensors of the model: K then V of each layer (slot 2*il and 2*il+1).
std::vector<KvDesc> kv_layout(const Model& m, const CacheConfig& cache);

Graph build_step_graph(const Model& m, const CacheConfig& cache, const StepShape& shape);

}  // namespace tandem::engine

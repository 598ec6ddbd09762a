#pragma once
// Graph patterns the GPU backends run as one kernel, matched once here so every backend fuses
// the same node runs under the same conditions (each adds only its kernel's own limits).
#include <cstddef>
#include <cstdint>
#include <optional>

#include "tandem/backend/graph.h"

namespace tandem {

// nodes[at..at+6] = MatMul q, k, v of one input, Rope(q), Rope(k), KvStore(roped k),
// KvStore(v), as the graph builder emits an attention block without q/k norms: a matvec over
// q/k/v can rope q and k itself and store k and v straight into the caches. Matched when
// both ropes rotate the whole head (n_rot == head_dim, normal or NeoX) with the same positions,
// frequencies and parameters, both caches have one type (f16 or f32) and the widths of k and v,
// and the raw q, k, v and the roped k are activations nothing outside the run reads (the roped
// q is written: attention reads it).
struct QkvRopeMatch {
    const Node* q;
    const Node* k;
    const Node* v;
    const Node* rope_q;
    const Node* rope_k;
    const Node* store_k;
    const Node* store_v;
    int32_t head_dim;
    bool neox;
    bool cache_f16;
};
std::optional<QkvRopeMatch> match_qkv_rope(const Graph& g, size_t at);

}  // namespace tandem

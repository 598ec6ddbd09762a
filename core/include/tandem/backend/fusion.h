#pragma once
// Graph patterns the GPU backends run as one kernel, matched once here so every backend fuses
// the same node runs under the same conditions (each adds only its kernel's own limits).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tandem/backend/graph.h"

namespace tandem {

// Rope(q), Rope(k), KvStore(roped k), KvStore(v): how an attention block's inputs end, what a
// fused launch that ropes and stores them itself needs of them. Qualified when both ropes rotate
// the whole head (n_rot == head_dim, normal or NeoX) with the same positions, frequencies and
// parameters, and both caches have one type (f16 or f32) and the widths of k and v.
struct RopeStores {
    const Node* rope_q;
    const Node* rope_k;
    const Node* store_k;
    const Node* store_v;
    int32_t head_dim;
    bool neox;
    bool cache_f16;
};

// nodes[at..at+6] = MatMul q, k, v of one input, then the ropes and stores (RopeStores), as the
// graph builder emits an attention block without q/k norms: a matvec over q/k/v can rope q and k
// itself and store k and v straight into the caches. Matched when the raw q, k, v and the roped
// k are activations nothing outside the run reads (the roped q is written: attention reads it).
struct QkvRopeMatch : RopeStores {
    const Node* q;
    const Node* k;
    const Node* v;
};
std::optional<QkvRopeMatch> match_qkv_rope(const Graph& g, size_t at);

// nodes[at..at+5] = RmsNorm(q) and RmsNorm(k) per head, then the ropes and stores (RopeStores),
// as the graph builder emits an attention block with q/k norms (Qwen3, Gemma 3) after the q/k/v
// matmuls: one launch can norm, rope and store every head. Matched when both norms take groups
// of head_dim with the same eps, q, k and v have the same rows, and the normed q and k and the
// roped k are activations nothing outside the run reads.
struct QkNormRopeMatch : RopeStores {
    const Node* norm_q;
    const Node* norm_k;
};
std::optional<QkNormRopeMatch> match_qk_norm_rope(const Graph& g, size_t at);

// Each tensor's last reader and last writer (node indices; 0 where none), computed once per
// step for the matchers that must know where a run's tensors are read or written again.
struct TensorUses {
    std::vector<int32_t> last_read, last_write;
};
TensorUses tensor_uses(const Graph& g);

// nodes[at..]: a MatMul, an AllReduce of its output in place (only where one_rank, where it is an
// identity; optional), the residual Add of its output and another tensor, and the RmsNorm of
// that sum over whole rows, as the graph builder ends an attention or FFN block: a matvec can
// write the sum itself and leave the norm to the matvecs that read it (the GPU backends fold the
// norm into the matvecs around it). Matched when the matmul's output is an activation nothing but
// the all-reduce and the add reads (it is never written), the norm's output is an activation read
// after the run, and nothing writes the sum or the norm's output again (a backend that writes the
// norm's output after all, from the sum, needs the sum as it was). `last`: the norm output's last
// reader; `nodes`: the run's length (3 or 4).
struct MatvecResidNormMatch {
    const Node* mm;
    const Node* add;
    const Node* norm;
    TensorId resid;  // the add's other input
    size_t nodes;
    size_t last;
};
std::optional<MatvecResidNormMatch> match_matvec_resid_norm(const Graph& g, size_t at,
                                                            const TensorUses& uses, bool one_rank);

}  // namespace tandem

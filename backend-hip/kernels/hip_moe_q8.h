#pragma once
// The expert FFN over q8 activations (hip_moe_q8.hip); launch_moe_ffn (hip_moe.hip) takes it
// where it applies and the element-wise kernels elsewhere.
#include <cstdint>

#include "hip_ops.h"

namespace tandem::hip {

inline constexpr int64_t kMoeMaxExperts = 1024;  // experts a rank holds, for the prefill lists

// The local expert of route slot `slot` (token slot / k; route [n_tok, 2k] of (expert id,
// weight) pairs), or -1 where another rank holds it.
__device__ inline int slot_expert(const float* route, int64_t slot, int first, int64_t n_local) {
    const int le = int(route[2 * slot]) - first;
    return le >= 0 && le < n_local ? le : -1;
}

// Whether the q8 path takes these experts: gate and up of one type, all three matrices of a type
// the q8 matvec reads, rows of whole 256-value groups.
bool moe_ffn_q8_supported(DType gate, DType up, DType down, int64_t n_embd, int64_t n_ff,
                          int64_t n_local);
// Scratch bytes launch_moe_ffn_q8 needs (hidden rows, q8 activations, prefill lists).
uint64_t moe_ffn_q8_scratch_bytes(int64_t n_tok, int k, int64_t n_embd, int64_t n_ff,
                                  int64_t n_local);
// False, enqueueing nothing, where it does not apply (types, shapes, alignment, scratch).
bool launch_moe_ffn_q8(const MoeFfnArgs& a, hipStream_t s);

// Prefill on the matrix units (hip_moe_mma.hip): the tiles k_moe_lists listed (tiles[0] = count,
// then (expert, first slot of its run) pairs), each multiplying one expert's rows by the rows of
// up to 64 of its slots. Parts 1 (down) or 2 (gate, up: blockIdx.z picks w / out).
struct MoeMma {
    const uint8_t* w[2];  // [n_local][rows][n_in] of the launch's type
    float* out[2];        // [n_slots, rows]
    int64_t rows;         // rows a part has per expert
    int64_t stride;       // bytes a row
    int64_t n_in;
    const float* x;  // per_token: [n_tok, n_in], row slot / k; else [n_slots, n_in]
    int per_token;
    int weighted;  // out rows times the slot's route weight
    int k;
    const float* route;  // [n_tok, 2k]
    const int* offsets;  // [n_local + 1] into slots
    const int* slots;    // the slots held here, grouped by expert
    const int* tiles;
};
// False, enqueueing nothing, where it does not apply (type, alignment).
bool launch_moe_mma(DType kind, const MoeMma& m, int parts, int64_t max_tiles, hipStream_t s);

}  // namespace tandem::hip

#pragma once
// Where the q8 activations' int8 values lie (k_quantize_q8 and the fused producers write them,
// the decode matvec reads them). Per 256 values (8 blocks of 32): the 8 blocks' first halves
// (values 0..15 of each block, 16 bytes each), then their second halves. A warp whose lanes
// take consecutive blocks then loads one half of each with 16-byte loads that fill whole
// 128-byte lines (4 lines for 32 lanes), where the blocks' plain order (32 bytes a block) made
// every such load touch 8 lines, half used. Local to its 256 values, so a flat buffer of
// several tokens (or rows) keeps the layout when each has a multiple of 256 values.
#include <cstdint>

namespace tandem::hip {

constexpr int kQ8LayoutGroup = 256;  // values per group of halves: rows are multiples of this

// Block b's half h (0, 1) as an index of 16-byte units.
__host__ __device__ inline int64_t q8_half_index(int64_t b, int h) {
    return (b / 8) * 16 + 8 * h + b % 8;
}
// The byte of value i.
__host__ __device__ inline int64_t q8_byte_offset(int64_t i) {
    const int64_t j = i % 32;
    return q8_half_index(i / 32, int(j / 16)) * 16 + j % 16;
}

}  // namespace tandem::hip

#pragma once
// How a prefill matmul whose grid is too small for the device splits its inputs (host side,
// shared by the tiled kernel, hip_matmul.hip, and the matrix-unit one, hip_matmul_mma.hip): each
// block of part z sums inputs z * k_split.. of its rows into part z of a scratch buffer, and
// launch_split_sum adds the parts in order.
#include <algorithm>
#include <cstdint>

namespace tandem::hip {

inline constexpr int64_t kSplitBlocks = 256;  // blocks a split launch aims at
struct InputSplit {
    int64_t k_split, splits;  // {n_in, 1}: unsplit
};
// A launch of `blocks` blocks over rows of n_in inputs, split into at most max_splits parts of
// whole units of `unit` inputs, so that ~kSplitBlocks blocks run; unsplit where the grid is big
// enough already or the rows are not whole units.
inline InputSplit split_inputs(int64_t blocks, int64_t n_in, int64_t unit, int64_t max_splits) {
    if (n_in % unit != 0 || blocks * 2 > kSplitBlocks) return {n_in, 1};
    const int64_t splits = std::min((kSplitBlocks + blocks - 1) / blocks, max_splits);
    if (splits < 2) return {n_in, 1};
    const int64_t k_split = (n_in / unit + splits - 1) / splits * unit;
    return {k_split, (n_in + k_split - 1) / k_split};
}

}  // namespace tandem::hip

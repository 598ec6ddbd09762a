#pragma once
// How a GPU backend's prefill matmul splits its inputs where its grid is too small for the device
// (short prompts; a router's few rows): the workgroups (blocks) of part z sum their rows' inputs
// [z k_split, (z + 1) k_split) into part z of a scratch buffer, and a second pass adds the parts
// in order with the bias. One rule for HIP's tiled and matrix-unit kernels (hip_matmul.hip,
// hip_matmul_mma.hip) and Vulkan's (matmul_tiled.comp, matmul_coopmat.comp).
#include <algorithm>
#include <cstdint>

namespace tandem {

inline constexpr int64_t kSplitAim = 256;  // workgroups a split launch aims at

struct InputSplit {
    int64_t k_split,
        splits;  // inputs a part sums (in the caller's unit of count); {n_in, 1}: unsplit
};

// A launch of `workgroups` over rows of n_in inputs, split into at most max_splits parts of whole
// units of `unit` inputs so that ~aim workgroups run; unsplit where the grid is big enough already
// or the rows are not whole units.
inline InputSplit split_inputs(int64_t workgroups, int64_t n_in, int64_t unit, int64_t max_splits,
                               int64_t aim = kSplitAim) {
    if (n_in % unit != 0 || workgroups * 2 > aim) return {n_in, 1};
    const int64_t splits = std::min((aim + workgroups - 1) / workgroups, max_splits);
    if (splits < 2) return {n_in, 1};
    const int64_t k_split = (n_in / unit + splits - 1) / splits * unit;
    return {k_split, (n_in + k_split - 1) / k_split};
}

// Floats the parts of a split [n_tok, n_out] output take (0: unsplit, no parts).
inline uint64_t split_part_floats(const InputSplit& s, int64_t n_tok, int64_t n_out) {
    return s.splits > 1 ? uint64_t(s.splits) * uint64_t(n_tok) * uint64_t(n_out) : 0;
}

}  // namespace tandem

#pragma once
// How a tensor-parallel shard slices each weight. One rule serves the engine's loader (which
// takes the slice out of the file mapping) and the planner (which sizes a shard and reads its
// byte ranges without mapping the file): Q/K/V (and their biases), FFN gate/up and the output
// head are cut by rows, attn_output and ffn_down by columns (whole quant blocks), expert stacks
// by expert; everything else is replicated.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/common/dtype.h"
#include "tandem/engine/model.h"

namespace tandem::engine {

enum class CutKind { None, Rows, Cols };

// Rows: [begin, end) of dimension `dim` (1: rows of a matrix, 2: experts of a stack, 0: elements
// of a bias). Cols: [begin, end) of every row.
struct WeightCut {
    CutKind kind = CutKind::None;
    int64_t begin = 0, end = 0;
    int dim = 1;
};

// The cut shard `s` takes of the weight named `name`; `is_output` for the output head (which
// is named token_embd.weight when tied to the embedding).
WeightCut weight_cut(std::string_view name, bool is_output, const HParams& hp, const ShardSpec& s);

// [offset, offset + size) relative to the whole tensor's first byte.
struct ByteSpan {
    uint64_t offset = 0, size = 0;
};

// The weight as the shard holds it: local shape and size, and the spans of the whole tensor
// whose bytes, concatenated in order, form it (adjacent spans merged: one span for a row slice
// or an uncut weight, one per row for a column slice).
struct CutLayout {
    std::array<int64_t, 3> ne{1, 1, 1};
    uint64_t nbytes = 0;
    std::vector<ByteSpan> spans;
};

// Throws tandem::Error naming the tensor when the cut is outside the tensor or not in whole
// quant blocks.
CutLayout cut_layout(const std::string& name, DType type, const std::array<int64_t, 3>& ne,
                     const WeightCut& cut);

}  // namespace tandem::engine

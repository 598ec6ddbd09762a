#pragma once
// What one tensor-parallel rank holds, computed from the tensor table alone: the shard's weights
// with their local shapes and sizes, and the byte ranges of the file they come from. The planner
// sizes memory from this before anything is read; the shard loader reads exactly these ranges.
#include <cstdint>
#include <memory>
#include <vector>

#include "tandem/engine/model.h"

namespace tandem::planner {

// [offset, offset+size) of the file (absolute offsets).
struct ByteRange {
    uint64_t offset = 0;
    uint64_t size = 0;
    uint64_t end() const { return offset + size; }
};

// Where the bytes of one shard weight come from: one range for a row slice (or a replicated
// weight), one range per row for a column slice.
struct WeightSource {
    const engine::Weight* weight = nullptr;  // in the shaped model
    std::vector<ByteRange> ranges;           // in order; their bytes concatenated form the weight
};

// A model of shard `shard` whose weights have the local shapes, sizes and slots that
// engine::load_model(file, shard) gives them, without reading or copying any data
// (engine::load_layout of whole's file: every Weight::data is null).
std::shared_ptr<engine::Model> shape_shard(const engine::Model& whole,
                                           const engine::ShardSpec& shard);

// The file ranges of every weight of a shaped model (in the model's weight order), from
// engine::weight_cut/cut_layout: the bytes engine::load_model would slice out of the mapping.
std::vector<WeightSource> weight_sources(const engine::Model& shaped);

// Merges ranges that touch or overlap (sorted by offset first); returns the merged list.
std::vector<ByteRange> merge_ranges(std::vector<ByteRange> ranges);

// Shard `rank` of a split whose ranks hold parts proportional to `shares` (all > 0): KV heads,
// dense FFN columns (in whole blocks of ff_align), experts and vocabulary rows, each rank at
// least one head / block / expert. Throws tandem::Error when the model cannot be split that way.
engine::ShardSpec shard_by_shares(const engine::HParams& hp, int rank,
                                  const std::vector<double>& shares, int64_t ff_align = 256);

}  // namespace tandem::planner

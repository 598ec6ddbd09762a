#pragma once
// Shard-only loading: reads exactly the byte ranges of one tensor-parallel shard (row slices,
// per-row column slices in whole quant blocks), adjacent ranges merged into one read, into one
// buffer of the shard's size. Nothing else of the file is read or stays mapped.
#include <cstdint>
#include <filesystem>
#include <memory>

#include "tandem/engine/model.h"

namespace tandem::planner {

struct ShardLoadStats {
    uint64_t bytes_read = 0;    // bytes pread from the file (== the shard's weight bytes + gaps)
    uint64_t buffer_bytes = 0;  // the one allocation holding the shard
    uint64_t n_ranges = 0;      // ranges before merging
    uint64_t n_reads = 0;       // reads after merging
};

// Loads shard `shard` of the GGUF model at `path`. The returned model owns its weights (in
// Model::owned) and keeps an unmapped gguf::File (header only). Throws tandem::Error naming the
// file on a short read or a bad shard.
std::shared_ptr<engine::Model> load_shard(const std::filesystem::path& path,
                                          const engine::ShardSpec& shard,
                                          ShardLoadStats* stats = nullptr);

}  // namespace tandem::planner

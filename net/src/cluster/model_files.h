#pragma once
// Model files on a node: the fingerprint that says two files are the same model (BLAKE2b-256 of
// every byte), finding a model in the node's folders, and the shard cache. A cached shard is a
// sparse copy of the model file: its GGUF header and only this shard's byte ranges, at their
// original offsets (the rest is a hole), so planner::load_shard reads it exactly like the
// original and the disk holds only the shard.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tandem/engine/model.h"

namespace tandem::net::cluster {

// Hex BLAKE2b-256 of the whole file; remembered per (path, size, mtime) for this process.
std::string model_fingerprint(const std::filesystem::path& file);

// The file named `name` in one of `dirs` whose fingerprint is `fingerprint`, if any.
std::optional<std::filesystem::path> find_model(const std::vector<std::filesystem::path>& dirs,
                                                const std::string& name,
                                                const std::string& fingerprint);

// <dir>/<fingerprint>-<shard ranges>.gguf
std::filesystem::path shard_cache_path(const std::filesystem::path& dir,
                                       const std::string& fingerprint,
                                       const engine::ShardSpec& shard);

// Writes a streamed shard: header, then chunks at their offsets; commit() makes it visible
// under its final name (written to a temporary name first, so a cut stream leaves no entry).
class ShardCacheWriter {
  public:
    ShardCacheWriter(std::filesystem::path final_path, uint64_t file_size);
    ~ShardCacheWriter();
    void write(uint64_t offset, const uint8_t* data, size_t n);
    void commit();
    uint64_t bytes_written() const { return written_; }

  private:
    std::filesystem::path final_, tmp_;
    uint64_t size_;
    uint64_t written_ = 0;
    int fd_ = -1;
};

// The byte ranges of `shard` in `model_path` (GGUF header first), merged: what a node without
// the file needs.
struct ShardRange {
    uint64_t offset = 0, size = 0;
};
std::vector<ShardRange> shard_file_ranges(const std::filesystem::path& model_path,
                                          const engine::ShardSpec& shard);

}  // namespace tandem::net::cluster

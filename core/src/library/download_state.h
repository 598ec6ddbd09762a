#pragma once
// <dest>.part.json: what a resumed download must know (internal to the library module).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tandem::library::detail {

struct SegmentState {
    uint64_t start = 0;
    uint64_t end = 0;   // exclusive
    uint64_t done = 0;  // bytes from start that are on disk
    uint64_t length() const { return end - start; }
    bool complete() const { return done >= length(); }
};

struct DownloadState {
    std::string url;
    std::string etag;  // identity of the remote file (X-Linked-Etag, else ETag)
    uint64_t size = 0;
    std::vector<SegmentState> segments;
    uint64_t done_bytes() const;
};

// Splits [0, size) into at most `connections` segments of at least `min_segment` bytes.
std::vector<SegmentState> plan_segments(uint64_t size, int connections, uint64_t min_segment);

// nullopt when the file is missing or does not describe a consistent download (then the caller
// starts over; a state file is never trusted blindly).
std::optional<DownloadState> load_state(const std::filesystem::path& path);
// Atomic: written beside and renamed over.
void save_state(const std::filesystem::path& path, const DownloadState& state);

}  // namespace tandem::library::detail

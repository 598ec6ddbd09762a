#pragma once
// One HTTP attempt of the downloader: the probe that learns a file's size/identity, and the
// ranged GET of one segment into the .part file (internal to the library module).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "segment_table.h"
#include "tandem/library/downloader.h"

namespace tandem::library::detail {

enum class FailKind {
    Transient,    // connection cut, timeout, 5xx: retry with backoff
    RateLimited,  // 429: retry after Retry-After
    Stalled,      // nothing received for stall_timeout: retry
    Interrupted,  // pause, cancel or another segment's fatal error: not the server's fault
    Changed,      // the remote file is not the one the .part holds: start over
    Permanent,    // 4xx, bad answer, disk full: give up
};

struct AttemptError {
    FailKind kind = FailKind::Transient;
    std::string message;
    std::chrono::milliseconds retry_after{0};
};

struct RemoteInfo {
    uint64_t size = 0;
    std::string etag;
    bool ranges = false;  // the server answered a Range request with 206
};

// Everything an attempt checks to know whether it must stop early.
struct StopFlags {
    DownloadControl* control = nullptr;
    const std::atomic<bool>* fatal = nullptr;
    bool stop_requested() const {
        return fatal->load() || control->cancelled() || control->paused();
    }
};

// GET with "Range: bytes=0-0": size from Content-Range (or Content-Length when the server ignores
// ranges), identity from X-Linked-Etag (set by the hub on its redirect) or ETag.
std::optional<AttemptError> probe(const std::string& url, const HttpOptions& http,
                                  const StopFlags& stop, std::chrono::milliseconds stall_timeout,
                                  RemoteInfo& out);

struct RangeJob {
    std::string url;
    int fd = -1;
    uint64_t file_size = 0;
    bool ranges = true;                  // the server honours Range
    Slot* slot = nullptr;                // the bytes to fetch: [start + done, end)
    std::string etag;                    // expected identity ("" = unchecked)
    std::atomic<uint64_t>* transferred;  // bytes this run wrote to the file (for the result)
};

// Fetches [start + done, end). nullopt: the segment is complete.
std::optional<AttemptError> fetch_range(const RangeJob& job, const HttpOptions& http,
                                        const StopFlags& stop,
                                        std::chrono::milliseconds stall_timeout);

}  // namespace tandem::library::detail

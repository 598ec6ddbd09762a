#pragma once
// Resumable parallel downloader. A file is fetched as ranged segments by parallel connections into
// <dest>.part; <dest>.part.json records the remote identity (ETag, size) and how far each segment
// got, so an interrupted download (cut connection, server restart, our own restart, pause) goes on
// where it stopped. A failed segment is retried with exponential backoff (429 honours
// Retry-After); a segment that receives nothing for stall_timeout is dropped and retried. Disk
// space is checked (and reserved with fallocate) before the transfer starts. The finished file
// is hashed and compared with the expected sha256 *before* <dest>.part is renamed to <dest>
// (atomic rename, fsync'd), so `dest` never holds a partial or bad file.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "tandem/common/error.h"
#include "tandem/library/http.h"

namespace tandem::library {

struct DownloadProgress {
    uint64_t total = 0;           // bytes of the file
    uint64_t done = 0;            // bytes on disk so far (including resumed ones)
    double bytes_per_second = 0;  // over the last few seconds
    double eta_seconds = -1;      // -1 while unknown
    int active_connections = 0;
    bool verifying = false;  // hashing the finished file
};
using ProgressFn = std::function<void(const DownloadProgress&)>;

// Shared between the downloading thread and a UI: cancel stops (keeping the .part for a later
// resume), pause holds the transfer until resume.
class DownloadControl {
  public:
    void cancel();
    void pause();
    void resume();
    bool cancelled() const { return cancelled_.load(); }
    bool paused() const { return paused_.load(); }
    // Sleeps up to `d`; returns early (false) when cancelled. Waits out a pause first.
    bool wait_for(std::chrono::milliseconds d);
    // Blocks while paused; false when cancelled.
    bool wait_while_paused();

  private:
    std::atomic<bool> cancelled_{false};
    std::atomic<bool> paused_{false};
    std::mutex mu_;
    std::condition_variable cv_;
};

// Thrown by a cancelled download (the .part and its state stay for a resume).
class DownloadCancelled : public Error {
  public:
    using Error::Error;
};

struct DownloadOptions {
    HttpOptions http;
    int connections = 8;                    // parallel ranged segments at most
    uint64_t min_segment_bytes = 4u << 20;  // smaller files use fewer connections
    int max_attempts = 8;                   // per segment, counted while no byte arrives
    std::chrono::milliseconds backoff_initial{500};
    std::chrono::milliseconds backoff_max{30000};
    std::chrono::milliseconds stall_timeout{30000};
    std::chrono::milliseconds progress_interval{250};
    std::chrono::milliseconds state_save_interval{2000};  // data is fdatasync'd first
    uint64_t reserve_bytes = 64u << 20;  // left free on the disk beyond the file itself
    // Free bytes on the file system holding `dir`; default: statvfs. Injectable for tests.
    std::function<uint64_t(const std::filesystem::path& dir)> free_space;
};

struct DownloadRequest {
    std::string url;
    std::filesystem::path dest;
    std::optional<uint64_t> expected_size;  // from the repo listing, when known
    std::string expected_sha256;            // lower-case hex; "" skips the comparison
};

struct DownloadResult {
    std::filesystem::path path;
    uint64_t size = 0;
    std::string sha256;              // of the file on disk
    uint64_t bytes_transferred = 0;  // written by this run (resumed bytes are not counted)
    uint64_t bytes_resumed = 0;      // taken over from an earlier run
    int retries = 0;                 // failed attempts that were retried
};

// Downloads req.url to req.dest. Throws tandem::Error with a message naming the file and the cause
// (HTTP status, disk full, sha256 mismatch, too many failures), or DownloadCancelled.
// A sha256 mismatch removes the .part (the bytes are bad); other failures keep it for a resume.
// `progress` is called from the calling thread.
DownloadResult download_file(const DownloadRequest& req, const DownloadOptions& options,
                             const ProgressFn& progress = {},
                             std::shared_ptr<DownloadControl> control = nullptr);

// Files next to dest that a download keeps while running.
std::filesystem::path part_path(const std::filesystem::path& dest);
std::filesystem::path state_path(const std::filesystem::path& dest);

}  // namespace tandem::library

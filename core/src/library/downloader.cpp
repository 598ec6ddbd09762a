#include "tandem/library/downloader.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "download_state.h"
#include "range_fetch.h"
#include "segment_table.h"
#include "tandem/common/log.h"
#include "tandem/library/format.h"
#include "tandem/library/sha256.h"

namespace tandem::library {

using namespace detail;
using Clock = std::chrono::steady_clock;

namespace {

uint64_t statvfs_free(const std::filesystem::path& dir) {
    struct statvfs st {};
    if (::statvfs(dir.c_str(), &st) != 0) return UINT64_MAX;  // unknown: let writes decide
    return uint64_t(st.f_bavail) * uint64_t(st.f_frsize);
}

void fsync_dir(const std::filesystem::path& dir) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

void remove_partial(const std::filesystem::path& dest) {
    std::error_code ec;
    std::filesystem::remove(part_path(dest), ec);
    std::filesystem::remove(state_path(dest), ec);
}

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

std::chrono::milliseconds backoff(const DownloadOptions& o, int attempt) {
    double ms = double(o.backoff_initial.count()) * std::pow(2.0, std::max(0, attempt - 1));
    return std::chrono::milliseconds(long(std::min(ms, double(o.backoff_max.count()))));
}

// The server's Retry-After is honoured as given (it knows its limits better than our backoff),
// within reason.
std::chrono::milliseconds retry_after_wait(const AttemptError& err) {
    return std::min<std::chrono::milliseconds>(err.retry_after, std::chrono::minutes(5));
}

// Retries `attempt_fn` (probe) under the segment retry policy.
template <class Fn>
std::optional<AttemptError> with_retries(const DownloadOptions& o, DownloadControl& control,
                                         std::atomic<int>& retries, Fn attempt_fn) {
    for (int attempt = 1;; ++attempt) {
        if (!control.wait_while_paused()) return AttemptError{FailKind::Interrupted, "cancelled"};
        auto err = attempt_fn();
        if (!err) return std::nullopt;
        if (err->kind == FailKind::Interrupted) {
            if (control.cancelled()) return err;
            --attempt;
            continue;
        }
        if (err->kind == FailKind::Permanent || err->kind == FailKind::Changed ||
            attempt >= o.max_attempts)
            return err;
        ++retries;
        auto wait = err->kind == FailKind::RateLimited && err->retry_after.count() > 0
                        ? retry_after_wait(*err)
                        : backoff(o, attempt);
        log_warn("download: " + err->message + "; retrying in " + std::to_string(wait.count()) +
                 " ms");
        if (!control.wait_for(wait)) return AttemptError{FailKind::Interrupted, "cancelled"};
    }
}

struct Run {
    const DownloadOptions& opt;
    DownloadControl& control;
    std::atomic<bool> fatal{false};
    std::atomic<int> retries{0};
    std::atomic<uint64_t> transferred{0};
    std::atomic<int> active{0};
    std::mutex err_mu;
    std::optional<AttemptError> first_error;

    void fail(AttemptError e) {
        std::lock_guard lock(err_mu);
        if (!first_error) first_error = std::move(e);
        fatal = true;
    }

    // One connection: works on segments (its own, then halves of others') until none is left,
    // a fatal error or a cancel.
    void work(SegmentTable& table, RangeJob base) {
        while (!fatal && !control.cancelled()) {
            Slot* slot = table.claim(base.ranges, opt.min_segment_bytes);
            if (!slot) break;
            RangeJob job = base;
            job.slot = slot;
            run_segment(job);
            table.release(slot);
        }
    }

    // Keeps one segment going until complete, fatal or cancelled.
    void run_segment(const RangeJob& job) {
        StopFlags stop{&control, &fatal};
        int attempt = 0;
        while (job.slot->remaining() > 0 && !fatal && !control.cancelled()) {
            if (!control.wait_while_paused()) break;
            uint64_t before = job.slot->done.load();
            ++active;
            auto err = fetch_range(job, opt.http, stop, opt.stall_timeout);
            --active;
            if (!err) break;
            if (err->kind == FailKind::Interrupted) continue;
            if (err->kind == FailKind::Permanent || err->kind == FailKind::Changed) {
                fail(*err);
                break;
            }
            // Bytes arrived: the connection works, only this attempt failed.
            attempt = job.slot->done.load() > before ? 1 : attempt + 1;
            if (attempt >= opt.max_attempts) {
                fail(AttemptError{err->kind, err->message + " (gave up after " +
                                                 std::to_string(attempt) + " attempts)"});
                break;
            }
            ++retries;
            auto wait = err->kind == FailKind::RateLimited && err->retry_after.count() > 0
                            ? retry_after_wait(*err)
                            : backoff(opt, attempt);
            log_warn("download: " + err->message + "; retrying in " + std::to_string(wait.count()) +
                     " ms");
            auto until = Clock::now() + wait;
            while (Clock::now() < until && !fatal && !control.cancelled())
                control.wait_for(std::min<std::chrono::milliseconds>(
                    std::chrono::milliseconds(50),
                    std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now())));
        }
    }
};

}  // namespace

DownloadResult download_file(const DownloadRequest& req, const DownloadOptions& opt,
                             const ProgressFn& progress, std::shared_ptr<DownloadControl> control) {
    if (!control) control = std::make_shared<DownloadControl>();
    const std::string what = "download " + req.dest.filename().string();
    std::error_code ec;
    auto dir = req.dest.parent_path().empty() ? std::filesystem::path(".") : req.dest.parent_path();
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error(what + ": cannot create " + dir.string() + ": " + ec.message());

    for (int restart = 0;; ++restart) {
        Run run{opt, *control};
        RemoteInfo remote;
        StopFlags stop{control.get(), &run.fatal};
        auto perr = with_retries(opt, *control, run.retries, [&] {
            return probe(req.url, opt.http, stop, opt.stall_timeout, remote);
        });
        if (perr) {
            if (control->cancelled()) throw DownloadCancelled(what + ": cancelled");
            throw Error(what + ": " + perr->message);
        }
        if (req.expected_size && remote.size != *req.expected_size)
            throw Error(what + ": the server reports " + std::to_string(remote.size) +
                        " bytes, the repository listing " + std::to_string(*req.expected_size) +
                        " (file changed upstream?)");

        // Resume only what provably belongs to this remote file.
        DownloadState state;
        bool resumed = false;
        if (auto old = load_state(state_path(req.dest))) {
            uint64_t part_size = std::filesystem::file_size(part_path(req.dest), ec);
            if (!ec && part_size == remote.size && old->size == remote.size &&
                old->etag == remote.etag && (remote.ranges || old->done_bytes() == 0)) {
                state = *old;
                resumed = true;
            } else {
                log_info(what +
                         ": the remote file differs from the partial download; starting over");
            }
        }
        if (!resumed) {
            remove_partial(req.dest);
            state.url = req.url;
            state.etag = remote.etag;
            state.size = remote.size;
            state.segments = plan_segments(remote.size, remote.ranges ? opt.connections : 1,
                                           opt.min_segment_bytes);
        }
        const uint64_t resumed_bytes = state.done_bytes();

        uint64_t need = remote.size - resumed_bytes;
        uint64_t free_bytes = opt.free_space ? opt.free_space(dir) : statvfs_free(dir);
        if (free_bytes < need + opt.reserve_bytes)
            throw Error(what + ": not enough disk space in " + dir.string() + ": need " +
                        human_bytes(need) + " (+" + human_bytes(opt.reserve_bytes) + " reserve), " +
                        human_bytes(free_bytes) + " free");

        Fd fd;
        fd.fd = ::open(part_path(req.dest).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd.fd < 0)
            throw Error(what + ": cannot open " + part_path(req.dest).string() + ": " +
                        std::strerror(errno));
        if (!resumed) {
            if (::ftruncate(fd.fd, off_t(remote.size)) != 0) {
                int e = errno;
                remove_partial(req.dest);
                throw Error(what + ": cannot size " + part_path(req.dest).string() + " to " +
                            human_bytes(remote.size) + ": " + std::strerror(e) +
                            (e == EFBIG ? " (over the file size limit)" : ""));
            }
            // Reserve the blocks now so a full disk shows before the transfer, not at 97%.
            if (remote.size > 0 && ::fallocate(fd.fd, 0, 0, off_t(remote.size)) != 0 &&
                errno != EOPNOTSUPP) {
                int e = errno;
                remove_partial(req.dest);
                throw Error(what + ": cannot reserve " + human_bytes(remote.size) + " in " +
                            dir.string() + ": " + std::strerror(e) +
                            (e == ENOSPC ? " (disk full)" : ""));
            }
        }
        save_state(state_path(req.dest), state);

        SegmentTable table(state.segments);
        auto snapshot = [&] {
            state.segments = table.snapshot();
            return state.done_bytes();
        };

        // Every connection starts on a segment of its own (resumed downloads may have more
        // segments than connections; splits may add more).
        const size_t n_workers = remote.ranges ? size_t(std::max(1, opt.connections)) : 1;
        std::vector<std::thread> workers;
        std::atomic<size_t> finished{0};
        std::mutex finished_mu;
        std::condition_variable finished_cv;
        const RangeJob base{req.url, fd.fd,       remote.size,     remote.ranges,
                            nullptr, remote.etag, &run.transferred};
        for (size_t i = 0; i < n_workers; ++i) {
            workers.emplace_back([&run, &table, &finished, &finished_mu, &finished_cv, base] {
                run.work(table, base);
                std::lock_guard lock(finished_mu);
                ++finished;
                finished_cv.notify_all();
            });
        }

        // Progress and state saving on the calling thread.
        std::deque<std::pair<Clock::time_point, uint64_t>> samples;
        auto last_save = Clock::now();
        auto last_progress = Clock::time_point{};
        for (;;) {
            {
                std::unique_lock lock(finished_mu);
                if (finished_cv.wait_for(
                        lock, std::min(opt.progress_interval, std::chrono::milliseconds(100)),
                        [&] { return finished.load() == workers.size(); }))
                    break;
            }
            auto now = Clock::now();
            uint64_t d = snapshot();
            samples.emplace_back(now, d);
            while (samples.size() > 2 && now - samples.front().first > std::chrono::seconds(5))
                samples.pop_front();
            if (now - last_save >= opt.state_save_interval) {
                // The state may only claim bytes that are on disk: after a power cut a claimed
                // but lost range would fail the final sha256 and cost the whole file.
                ::fdatasync(fd.fd);
                save_state(state_path(req.dest), state);
                last_save = now;
            }
            if (progress && now - last_progress >= opt.progress_interval) {
                last_progress = now;
                DownloadProgress p;
                p.total = remote.size;
                p.done = d;
                double secs = std::chrono::duration<double>(now - samples.front().first).count();
                if (secs > 0.05) p.bytes_per_second = double(d - samples.front().second) / secs;
                if (p.bytes_per_second > 0)
                    p.eta_seconds = double(remote.size - d) / p.bytes_per_second;
                p.active_connections = run.active.load();
                progress(p);
            }
        }
        for (auto& w : workers) w.join();
        snapshot();
        save_state(state_path(req.dest), state);

        if (run.first_error && run.first_error->kind == FailKind::Changed && restart < 2) {
            log_warn(what + ": " + run.first_error->message + "; starting over");
            fd = Fd{};
            remove_partial(req.dest);
            continue;
        }
        if (run.first_error) throw Error(what + ": " + run.first_error->message);
        if (control->cancelled())
            throw DownloadCancelled(what + ": cancelled (" + human_bytes(state.done_bytes()) +
                                    " of " + human_bytes(remote.size) + " kept for resume)");

        if (progress) {
            DownloadProgress p;
            p.total = p.done = remote.size;
            p.verifying = true;
            progress(p);
        }
        // Flushing to disk and hashing (from the page cache) overlap: both must finish before
        // the rename, neither needs the other.
        int fsync_errno = 0;
        std::thread flusher([&] {
            if (::fsync(fd.fd) != 0) fsync_errno = errno;
        });
        std::string hash;
        try {
            hash =
                sha256_file(part_path(req.dest), [&](uint64_t) { return !control->cancelled(); });
        } catch (...) {
            flusher.join();
            throw;
        }
        flusher.join();
        if (fsync_errno != 0)
            throw Error(what + ": cannot flush " + part_path(req.dest).string() + ": " +
                        std::strerror(fsync_errno));
        ::close(fd.fd);
        fd.fd = -1;
        if (!req.expected_sha256.empty() && hash != req.expected_sha256) {
            remove_partial(req.dest);
            throw Error(what + ": sha256 mismatch: expected " + req.expected_sha256 + ", got " +
                        hash + " (the downloaded bytes were discarded)");
        }
        std::filesystem::rename(part_path(req.dest), req.dest, ec);
        if (ec) throw Error(what + ": cannot rename into place: " + ec.message());
        fsync_dir(dir);
        std::filesystem::remove(state_path(req.dest), ec);

        DownloadResult r;
        r.path = req.dest;
        r.size = remote.size;
        r.sha256 = hash;
        r.bytes_transferred = run.transferred.load();
        r.bytes_resumed = resumed_bytes;
        r.retries = run.retries.load();
        return r;
    }
}

}  // namespace tandem::library

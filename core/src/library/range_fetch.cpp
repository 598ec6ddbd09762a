#include "range_fetch.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "curl_easy.h"

namespace tandem::library::detail {
namespace {

using Clock = std::chrono::steady_clock;

std::string normalize_etag(std::string e) {
    if (e.rfind("W/", 0) == 0) e = e.substr(2);
    if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
    return e;
}

std::string identity_of(const CurlEasy& easy) {
    auto it = easy.linked().find("x-linked-etag");
    if (it != easy.linked().end()) return normalize_etag(it->second);
    auto e = easy.headers().find("etag");
    return e == easy.headers().end() ? "" : normalize_etag(e->second);
}

// libcurl calls this at least once a second, also while no data flows: the place to notice a
// stall, a pause, a cancel or another segment's fatal error.
struct Watch {
    const StopFlags* stop;
    std::chrono::milliseconds stall_timeout;
    curl_off_t last_bytes = -1;
    Clock::time_point last_change = Clock::now();
    bool stalled = false;

    static int on_progress(void* self_ptr, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t) {
        auto* w = static_cast<Watch*>(self_ptr);
        auto now = Clock::now();
        if (dlnow != w->last_bytes) {
            w->last_bytes = dlnow;
            w->last_change = now;
        } else if (now - w->last_change > w->stall_timeout) {
            w->stalled = true;
            return 1;
        }
        return w->stop->stop_requested() ? 1 : 0;
    }
    void attach(CURL* c) {
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &Watch::on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, this);
    }
};

std::chrono::milliseconds parse_retry_after(const std::map<std::string, std::string>& headers) {
    auto it = headers.find("retry-after");
    if (it == headers.end()) return std::chrono::milliseconds(0);
    try {
        return std::chrono::milliseconds(long(std::stod(it->second) * 1000.0));
    } catch (const std::exception&) {
        return std::chrono::milliseconds(0);  // an HTTP date: fall back to our backoff
    }
}

std::optional<AttemptError> classify_status(long status, const std::string& url,
                                            const std::map<std::string, std::string>& headers) {
    if (status >= 200 && status < 300) return std::nullopt;
    std::string s = "HTTP " + std::to_string(status) + " from " + url;
    if (status == 429)
        return AttemptError{FailKind::RateLimited, s + " (rate limited)",
                            parse_retry_after(headers)};
    if (status == 408 || status >= 500) return AttemptError{FailKind::Transient, s};
    if (status == 404) return AttemptError{FailKind::Permanent, s + " (file not found)"};
    if (status == 401 || status == 403)
        return AttemptError{FailKind::Permanent,
                            s + " (access denied: gated or private repository, set HF_TOKEN)"};
    if (status == 416) return AttemptError{FailKind::Changed, s + " (range no longer valid)"};
    return AttemptError{FailKind::Permanent, s};
}

AttemptError classify_curl(CURLcode rc, const CurlEasy& easy, const Watch& watch,
                           const std::string& url) {
    std::string msg = "transfer from " + url + " failed: " + easy.error_text(rc);
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        if (watch.stalled)
            return {FailKind::Stalled, "transfer from " + url + " stalled (no data for " +
                                           std::to_string(watch.stall_timeout.count()) + " ms)"};
        return {FailKind::Interrupted, "interrupted"};
    }
    switch (rc) {
        case CURLE_UNSUPPORTED_PROTOCOL:
        case CURLE_URL_MALFORMAT:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_TOO_MANY_REDIRECTS:
            return {FailKind::Permanent, msg};
        default:
            return {FailKind::Transient, msg};
    }
}

struct RangeSink {
    const RangeJob* job;
    CurlEasy* easy;
    bool checked = false;
    bool discard = false;  // an error body: not file data
    std::optional<AttemptError> error;
    int write_errno = 0;

    // The first body bytes: is this the range we asked for, of the file we have?
    bool check_response() {
        checked = true;
        long status = easy->status();
        if (status < 200 || status >= 300) {
            discard = true;
            return true;
        }
        std::string id = identity_of(*easy);
        if (!job->etag.empty() && !id.empty() && id != job->etag) {
            error = AttemptError{FailKind::Changed, "the remote file changed (ETag " + id +
                                                        ", expected " + job->etag + ")"};
            return false;
        }
        const Slot& slot = *job->slot;
        uint64_t want = slot.start + slot.done.load();
        if (status == 206) {
            auto it = easy->headers().find("content-range");
            unsigned long long a = 0, b = 0, total = 0;
            if (it == easy->headers().end() ||
                std::sscanf(it->second.c_str(), "bytes %llu-%llu/%llu", &a, &b, &total) != 3) {
                error =
                    AttemptError{FailKind::Permanent, "206 answer without a valid Content-Range"};
                return false;
            }
            if (total != job->file_size) {
                error = AttemptError{FailKind::Changed, "the remote file changed (size " +
                                                            std::to_string(total) + ", expected " +
                                                            std::to_string(job->file_size) + ")"};
                return false;
            }
            if (a != want) {
                error = AttemptError{FailKind::Permanent, "server sent range starting at " +
                                                              std::to_string(a) + ", asked for " +
                                                              std::to_string(want)};
                return false;
            }
            return true;
        }
        if (!job->ranges && want == 0) return true;  // whole file, no range needed
        error = AttemptError{FailKind::Permanent, "server ignored the Range request (HTTP " +
                                                      std::to_string(status) + ")"};
        return false;
    }

    static size_t on_data(char* data, size_t size, size_t n, void* self_ptr) {
        auto* s = static_cast<RangeSink*>(self_ptr);
        size_t bytes = size * n;
        if (!s->checked && !s->check_response()) return 0;
        if (s->discard) return bytes;
        Slot& slot = *s->job->slot;
        // Under the slot's lock: a split (another connection taking our tail) sees either all
        // of this write or none of it, so no byte is written twice.
        std::lock_guard lock(slot.write_mu);
        size_t take = size_t(std::min<uint64_t>(bytes, slot.remaining()));
        size_t off = 0;
        while (off < take) {
            uint64_t pos = slot.start + slot.done.load();
            ssize_t w = ::pwrite(s->job->fd, data + off, take - off, off_t(pos));
            if (w < 0) {
                if (errno == EINTR) continue;
                s->write_errno = errno;
                return 0;
            }
            off += size_t(w);
            slot.done.fetch_add(uint64_t(w));
            s->job->transferred->fetch_add(uint64_t(w));
        }
        return take == bytes ? bytes : 0;  // more than asked for: stop, the segment is complete
    }
};

}  // namespace

std::optional<AttemptError> probe(const std::string& url, const HttpOptions& http,
                                  const StopFlags& stop, std::chrono::milliseconds stall_timeout,
                                  RemoteInfo& out) {
    CurlEasy easy(url, http);
    easy.capture_headers();
    easy.add_header("Range: bytes=0-0");
    Watch watch{&stop, stall_timeout};
    watch.attach(easy.get());
    std::string body;
    curl_easy_setopt(
        easy.get(), CURLOPT_WRITEFUNCTION, +[](char* d, size_t s, size_t n, void* b) -> size_t {
            auto* str = static_cast<std::string*>(b);
            if (str->size() < 4096) str->append(d, s * n);
            return s * n;
        });
    curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &body);
    CURLcode rc = curl_easy_perform(easy.get());
    if (rc != CURLE_OK) return classify_curl(rc, easy, watch, url);
    long status = easy.status();
    if (status == 416) {  // an empty file has no byte 0; the answer still tells the size
        auto it = easy.headers().find("content-range");
        unsigned long long total = 0;
        if (it != easy.headers().end() &&
            std::sscanf(it->second.c_str(), "bytes */%llu", &total) == 1 && total == 0) {
            out = RemoteInfo{0, identity_of(easy), true};
            return std::nullopt;
        }
    }
    if (auto err = classify_status(status, url, easy.headers())) return err;
    out = RemoteInfo{};
    out.etag = identity_of(easy);
    const auto& h = easy.headers();
    if (status == 206) {
        auto it = h.find("content-range");
        unsigned long long a = 0, b = 0, total = 0;
        if (it == h.end() ||
            std::sscanf(it->second.c_str(), "bytes %llu-%llu/%llu", &a, &b, &total) != 3)
            return AttemptError{FailKind::Permanent,
                                "206 answer from " + url + " without a valid Content-Range"};
        out.size = total;
        out.ranges = true;
        return std::nullopt;
    }
    curl_off_t len = -1;
    curl_easy_getinfo(easy.get(), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
    if (len < 0) {
        auto linked = easy.linked().find("x-linked-size");
        if (linked == easy.linked().end())
            return AttemptError{FailKind::Permanent, "the size of " + url + " is unknown"};
        len = curl_off_t(std::stoull(linked->second));
    }
    out.size = uint64_t(len);
    out.ranges = false;
    return std::nullopt;
}

std::optional<AttemptError> fetch_range(const RangeJob& job, const HttpOptions& http,
                                        const StopFlags& stop,
                                        std::chrono::milliseconds stall_timeout) {
    const Slot& slot = *job.slot;
    if (slot.remaining() == 0) return std::nullopt;
    CurlEasy easy(job.url, http);
    easy.capture_headers();
    uint64_t from = slot.start + slot.done.load();
    // Without Range support the only request is the whole file from byte 0.
    if (job.ranges || from > 0)
        easy.add_header("Range: bytes=" + std::to_string(from) + "-" +
                        std::to_string(slot.end.load() - 1));
    Watch watch{&stop, stall_timeout};
    watch.attach(easy.get());
    RangeSink sink{&job, &easy};
    curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, &RangeSink::on_data);
    curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(easy.get(), CURLOPT_BUFFERSIZE, 256L * 1024L);
    CURLcode rc = curl_easy_perform(easy.get());
    if (sink.error) return sink.error;
    if (sink.write_errno) {
        int e = sink.write_errno;
        std::string why = std::strerror(e);
        if (e == ENOSPC || e == EDQUOT || e == EFBIG) why = "disk full (" + why + ")";
        return AttemptError{FailKind::Permanent, "cannot write the download: " + why};
    }
    if (slot.remaining() == 0 && !sink.discard) return std::nullopt;
    if (sink.discard || rc == CURLE_OK) {
        if (auto err = classify_status(easy.status(), job.url, easy.headers())) return err;
        return AttemptError{FailKind::Transient, "transfer from " + job.url + " ended after " +
                                                     std::to_string(slot.done.load()) + " of " +
                                                     std::to_string(slot.length()) + " bytes"};
    }
    return classify_curl(rc, easy, watch, job.url);
}

}  // namespace tandem::library::detail

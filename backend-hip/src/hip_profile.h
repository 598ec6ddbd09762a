#pragma once
// Per-node GPU time (TANDEM_HIP_PROFILE=1, step graphs off): an event before and after every node
// of a step, a table on stderr when the backend goes away (at the end of `tandem-cli bench`): op,
// calls, total and per-call microseconds, share, and GB/s for matmuls (weight bytes / time).
// The backend holds the stream before each chunk of nodes until the host has enqueued it
// (HipBackend::enqueue_nodes_profiled), so the times are the kernels' own, not gaps waiting for
// the host's launches.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace tandem::hip {

class NodeProfile {
  public:
    struct Stat {
        int64_t calls = 0;
        double us = 0, bytes = 0;
    };
    explicit NodeProfile(bool on) : on_(on) {}
    NodeProfile(const NodeProfile&) = delete;
    NodeProfile& operator=(const NodeProfile&) = delete;
    ~NodeProfile() {
        print();
        for (hipEvent_t e : begin_) (void)hipEventDestroy(e);
        for (hipEvent_t e : end_) (void)hipEventDestroy(e);
    }
    bool on() const { return on_; }

    // Node i's events on the stream: before its launches, after them.
    void begin(size_t i, hipStream_t s) { record(begin_, i, s); }
    void end(size_t i, hipStream_t s) { record(end_, i, s); }
    // Node i's table key and the bytes it streams ("": no row, run by an earlier node's launch).
    void node(size_t i, std::string key, double bytes) {
        if (keys_.size() <= i) keys_.resize(i + 1), bytes_.resize(i + 1);
        keys_[i] = std::move(key);
        bytes_[i] = bytes;
    }
    // After the step's synchronisation: n nodes' times into the table.
    void collect(size_t n) {
        for (size_t i = 0; i < n && i < begin_.size() && i < end_.size() && i < keys_.size(); ++i) {
            float ms = 0;
            if (keys_[i].empty()) continue;  // run by an earlier node's launch (fused)
            if (hipEventElapsedTime(&ms, begin_[i], end_[i]) != hipSuccess) continue;
            Stat& st = stats_[keys_[i]];
            ++st.calls;
            st.us += 1e3 * ms;
            st.bytes += bytes_[i];
        }
    }

    void print() const {
        if (stats_.empty()) return;
        std::vector<std::pair<std::string, Stat>> rows(stats_.begin(), stats_.end());
        std::sort(rows.begin(), rows.end(),
                  [](const auto& a, const auto& b) { return a.second.us > b.second.us; });
        double total = 0;
        for (const auto& r : rows) total += r.second.us;
        std::fprintf(stderr,
                     "\nhip profile (TANDEM_HIP_PROFILE=1, graphs off; GPU time per node)\n");
        std::fprintf(stderr, "| op | calls | total us | us/call | share | GB/s |\n");
        std::fprintf(stderr, "|---|---:|---:|---:|---:|---:|\n");
        for (const auto& [key, st] : rows) {
            char gbs[32] = "";
            if (st.bytes > 0 && st.us > 0)
                std::snprintf(gbs, sizeof gbs, "%.0f", st.bytes / st.us / 1e3);
            std::fprintf(stderr, "| %s | %lld | %.0f | %.2f | %.1f%% | %s |\n", key.c_str(),
                         static_cast<long long>(st.calls), st.us, st.us / double(st.calls),
                         total > 0 ? 100.0 * st.us / total : 0.0, gbs);
        }
        std::fprintf(stderr, "| total | | %.0f | | 100%% | |\n", total);
    }

  private:
    static void record(std::vector<hipEvent_t>& events, size_t i, hipStream_t s) {
        while (events.size() <= i) {
            hipEvent_t e = nullptr;
            if (hipEventCreate(&e) != hipSuccess) return;
            events.push_back(e);
        }
        (void)hipEventRecord(events[i], s);
    }

    bool on_;
    std::vector<hipEvent_t> begin_, end_;  // per node
    std::vector<std::string> keys_;
    std::vector<double> bytes_;
    std::map<std::string, Stat> stats_;
};

}  // namespace tandem::hip

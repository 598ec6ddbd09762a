#pragma once
// The segments of one download and who works on them (internal to the library module). A
// connection that finishes its segment takes over the second half of the largest remaining one,
// so one slow connection does not hold up the end of a download.
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "download_state.h"

namespace tandem::library::detail {

struct Slot {
    Slot(uint64_t s, uint64_t e, uint64_t d) : start(s), end(e), done(d) {}
    const uint64_t start;
    std::atomic<uint64_t> end;   // exclusive; only ever lowered, by a split
    std::atomic<uint64_t> done;  // bytes from start that are on disk
    std::mutex write_mu;         // held while writing, so a split never overlaps a write
    bool claimed = false;        // guarded by the table's mutex

    uint64_t length() const { return end.load() - start; }
    uint64_t remaining() const {
        uint64_t l = length(), d = done.load();
        return d >= l ? 0 : l - d;
    }
};

class SegmentTable {
  public:
    explicit SegmentTable(const std::vector<SegmentState>& segments);

    // An unclaimed unfinished segment; else (allow_split) the upper half of the claimed segment
    // with the most bytes left, when at least 2 * min_split remain; nullptr: nothing to do.
    Slot* claim(bool allow_split, uint64_t min_split);
    void release(Slot* slot);
    std::vector<SegmentState> snapshot() const;  // ordered by start, tiling the file

  private:
    mutable std::mutex mu_;
    std::deque<Slot> slots_;  // a deque: slots never move while workers hold pointers
};

}  // namespace tandem::library::detail

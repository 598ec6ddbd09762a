#pragma once
// Unified memory (APUs): which host pages the HIP backend registers with the runtime so the GPU
// reads weights in place from the file mapping. Only the weights this process uses count: each
// weight's byte range is widened to whole pages, and ranges that touch or share a page are
// merged (the runtime refuses to register a page twice). Never a bounding box over the file:
// a gap of untouched pages between two weights (another rank's shard, skipped tensors) stays
// out. Plain C++ with no HIP dependency, so CI tests it without a GPU.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace tandem::hip {

struct HostRange {
    uintptr_t begin = 0, end = 0;  // [begin, end)
    bool operator==(const HostRange&) const = default;
};

// Page-aligned, sorted, disjoint, non-adjacent ranges covering every non-empty input range.
// `page` must be a power of two.
inline std::vector<HostRange> page_ranges(std::vector<HostRange> used, uintptr_t page) {
    if (page == 0 || (page & (page - 1)) != 0)
        throw std::invalid_argument("page_ranges: page size must be a power of two");
    std::vector<HostRange> pages;
    pages.reserve(used.size());
    for (const HostRange& r : used) {
        if (r.end < r.begin)
            throw std::invalid_argument("page_ranges: range ends before it begins");
        if (r.end == r.begin) continue;
        const uintptr_t b = r.begin & ~(page - 1);
        const uintptr_t e = r.end > UINTPTR_MAX - (page - 1) ? UINTPTR_MAX & ~(page - 1)
                                                             : (r.end + page - 1) & ~(page - 1);
        pages.push_back({b, e});
    }
    std::sort(pages.begin(), pages.end(),
              [](const HostRange& a, const HostRange& b) { return a.begin < b.begin; });
    std::vector<HostRange> merged;
    for (const HostRange& r : pages) {
        if (!merged.empty() && r.begin <= merged.back().end)
            merged.back().end = std::max(merged.back().end, r.end);
        else
            merged.push_back(r);
    }
    return merged;
}

// Index of the range in `ranges` (as page_ranges returns them) that holds address p, or -1.
inline int64_t range_holding(const std::vector<HostRange>& ranges, uintptr_t p) {
    auto it = std::upper_bound(ranges.begin(), ranges.end(), p,
                               [](uintptr_t v, const HostRange& r) { return v < r.begin; });
    if (it == ranges.begin()) return -1;
    --it;
    return p < it->end ? int64_t(it - ranges.begin()) : -1;
}

inline uint64_t total_bytes(const std::vector<HostRange>& ranges) {
    uint64_t n = 0;
    for (const HostRange& r : ranges) n += r.end - r.begin;
    return n;
}

}  // namespace tandem::hip

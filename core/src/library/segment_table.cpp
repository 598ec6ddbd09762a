#include "segment_table.h"

#include <algorithm>

namespace tandem::library::detail {

SegmentTable::SegmentTable(const std::vector<SegmentState>& segments) {
    for (const auto& s : segments) slots_.emplace_back(s.start, s.end, s.done);
}

Slot* SegmentTable::claim(bool allow_split, uint64_t min_split) {
    std::lock_guard lock(mu_);
    for (auto& s : slots_)
        if (!s.claimed && s.remaining() > 0) {
            s.claimed = true;
            return &s;
        }
    if (!allow_split) return nullptr;
    Slot* victim = nullptr;
    for (auto& s : slots_)
        if (s.claimed && (!victim || s.remaining() > victim->remaining())) victim = &s;
    if (!victim) return nullptr;
    std::lock_guard write_lock(victim->write_mu);
    const uint64_t left = victim->remaining();
    if (left < 2 * std::max<uint64_t>(min_split, 1)) return nullptr;
    const uint64_t split = victim->start + victim->done.load() + left / 2;
    Slot& taken = slots_.emplace_back(split, victim->end.load(), 0);
    taken.claimed = true;
    victim->end.store(split);
    return &taken;
}

void SegmentTable::release(Slot* slot) {
    std::lock_guard lock(mu_);
    slot->claimed = false;
}

std::vector<SegmentState> SegmentTable::snapshot() const {
    std::lock_guard lock(mu_);
    std::vector<SegmentState> out;
    for (const auto& s : slots_) {
        uint64_t len = s.length();
        out.push_back({s.start, s.start + len, std::min(s.done.load(), len)});
    }
    std::sort(out.begin(), out.end(),
              [](const SegmentState& a, const SegmentState& b) { return a.start < b.start; });
    return out;
}

}  // namespace tandem::library::detail

#include "vk_profiler.h"

#include <algorithm>
#include <cstdio>

#include "vk_context.h"

namespace tandem::vk {

namespace {
constexpr uint32_t kQueries = 8192;  // timestamps per submission (nodes + 1)
}

Profiler::Profiler(VkDevice device, float timestamp_period_ns)
    : device_(device), period_ns_(timestamp_period_ns) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = kQueries;
    check(vkCreateQueryPool(device_, &qi, nullptr, &pool_), "vkCreateQueryPool");
}

Profiler::~Profiler() {
    if (pool_) vkDestroyQueryPool(device_, pool_, nullptr);
}

void Profiler::begin(VkCommandBuffer cb) {
    vkCmdResetQueryPool(cb, pool_, 0, kQueries);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 0);
    used_ = 1;
    labels_.assign(1, "");
}

void Profiler::mark(VkCommandBuffer cb, const std::string& label) {
    if (used_ == 0 || used_ >= kQueries) return;
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, used_);
    labels_.push_back(label);
    ++used_;
}

void Profiler::collect() {
    if (used_ < 2) return;
    std::vector<uint64_t> ts(used_);
    check(
        vkGetQueryPoolResults(device_, pool_, 0, used_, ts.size() * sizeof(uint64_t), ts.data(),
                              sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
    for (uint32_t i = 1; i < used_; ++i) {
        Total& t = totals_[labels_[i]];
        t.ns += double(ts[i] - ts[i - 1]) * period_ns_;
        ++t.calls;
    }
    used_ = 0;
}

void Profiler::print(FILE* out) const {
    std::vector<std::pair<std::string, Total>> rows(totals_.begin(), totals_.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    double sum = 0;
    for (const auto& r : rows) sum += r.second.ns;
    std::fprintf(out,
                 "\n| op (vulkan GPU time, serialised) | calls | total ms | avg us | share |\n");
    std::fprintf(out, "|---|---|---|---|---|\n");
    for (const auto& [label, t] : rows)
        std::fprintf(out, "| %s | %llu | %.2f | %.1f | %.1f%% |\n", label.c_str(),
                     static_cast<unsigned long long>(t.calls), t.ns / 1e6,
                     t.ns / 1e3 / double(t.calls), sum > 0 ? 100.0 * t.ns / sum : 0.0);
    std::fprintf(out, "| (all GPU) | | %.2f | | |\n", sum / 1e6);
    static const char* const kinds[4] = {"recording, decode", "recording, prefill",
                                         "cached commands, decode", "cached commands, prefill"};
    for (int k = 0; k < 4; ++k) {
        const HostTime& h = host_[k];
        if (h.steps == 0) continue;
        std::fprintf(out, "| (CPU before the submit per step: %s) | %llu | %.2f | %.1f | |\n",
                     kinds[k], static_cast<unsigned long long>(h.steps), h.s * 1e3,
                     h.s * 1e6 / double(h.steps));
        std::fprintf(out, "| (of which inputs and rope tables: %s) | %llu | %.2f | %.1f | |\n",
                     kinds[k], static_cast<unsigned long long>(h.steps), h.io_s * 1e3,
                     h.io_s * 1e6 / double(h.steps));
    }
}

}  // namespace tandem::vk

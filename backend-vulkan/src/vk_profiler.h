#pragma once
// GPU time per op from timestamp queries (TANDEM_VK_PROFILE=1). In profile mode the backend puts
// a barrier before every node, so each node's time is its own (nodes that would overlap run
// one after another: the total is an upper bound of the normal step time). The table goes to
// stderr when the backend is destroyed.
#include <vulkan/vulkan.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace tandem::vk {

class Profiler {
  public:
    Profiler(VkDevice device, float timestamp_period_ns);
    ~Profiler();
    Profiler(const Profiler&) = delete;
    Profiler& operator=(const Profiler&) = delete;

    // Start of a recorded submission: resets the queries, writes the first timestamp.
    void begin(VkCommandBuffer cb);
    // After a node's commands: its time is from the previous timestamp to this one.
    void mark(VkCommandBuffer cb, const std::string& label);
    // After the submission's fence: reads the timestamps into the totals.
    void collect();
    // Labels of the timestamps of the last recorded submission, and replaying a cached one
    // (its commands reset the queries and write the same timestamps again).
    const std::vector<std::string>& labels() const { return labels_; }
    void replay(const std::vector<std::string>& labels) {
        labels_ = labels;
        used_ = static_cast<uint32_t>(labels_.size());
    }
    // CPU time of one step from compute() start to submit: recording its commands, or only
    // writing its inputs when it replays cached command buffers; decode (one token) and
    // prefill steps apart. io_seconds: the part spent laying out its inputs and rope tables.
    void add_record_time(double seconds, double io_seconds, bool replayed, bool one_token) {
        HostTime& h = host_[(replayed ? 2 : 0) + (one_token ? 0 : 1)];
        h.s += seconds;
        h.io_s += io_seconds;
        ++h.steps;
    }
    void print(FILE* out) const;

  private:
    struct Total {
        double ns = 0;
        uint64_t calls = 0;
    };
    VkDevice device_;
    VkQueryPool pool_ = VK_NULL_HANDLE;
    float period_ns_;
    uint32_t used_ = 0;
    std::vector<std::string> labels_;  // label of query i (i >= 1)
    std::map<std::string, Total> totals_;
    struct HostTime {
        double s = 0, io_s = 0;
        uint64_t steps = 0;
    };
    HostTime host_[4];  // recorded decode, recorded prefill, replayed decode, replayed prefill
};

}  // namespace tandem::vk

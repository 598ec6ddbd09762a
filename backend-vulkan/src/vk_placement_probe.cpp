// Where weights imported in place on unified memory live (tandem/backend/weight_placement.h):
// once all weights are in, a read shader is timed over the largest imported weight against a
// device buffer of the same size, and the imported weights are copied where in place reads
// clearly slower and the copies fit. RADV imports host pointers as CPU-cached (snooped) memory;
// how fast an APU's GPU reads that against its own buffers is this machine's to say.
#include <algorithm>
#include <utility>
#include <vector>

#include "tandem/backend/weight_placement.h"
#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "vk_backend.h"

namespace tandem::vk {

void VulkanBackend::settle_weight_placement() {
    if (!placement_probe_) return;
    PlacementProbe probe;
    Weight* largest = nullptr;
    for (Weight& w : weights_)
        if (w.host) {
            probe.weight_bytes += w.desc.nbytes;
            if (!largest || w.desc.nbytes > largest->desc.nbytes) largest = &w;
        }
    if (!largest) return;
    probe.device_free = ctx_->usable_free();
    // Up to kProbeMaxBytes of the largest; below kProbeMinBytes caches would answer, not memory.
    const uint64_t bytes = std::min(largest->desc.nbytes, kProbeMaxBytes) & ~uint64_t(4095);
    if (bytes >= kProbeMinBytes) {
        Buffer dev, sink;
        try {
            dev = ctx_->create_device_buffer(bytes, "weight-placement probe");
            sink = ctx_->create_device_buffer(16, "weight-placement probe sink");
            // Written once, so the driver has its pages in place before the timed reads.
            (void)time_submission([&](VkCommandBuffer cb) {
                vkCmdFillBuffer(cb, dev.buffer, 0, bytes, 0x01010101u);
            });
            probe.in_place_bytes_per_s = read_bandwidth(largest->buf, bytes, sink);
            probe.device_bytes_per_s = read_bandwidth(dev, bytes, sink);
        } catch (const Error& e) {
            log_info(std::string("vulkan: weight-placement probe not run (") + e.what() + ")");
            probe.in_place_bytes_per_s = probe.device_bytes_per_s = 0;
        }
        ctx_->destroy(dev);
        ctx_->destroy(sink);
    }
    const PlacementChoice c = choose_weight_placement(probe, in_place_min_share());
    log_info("vulkan: " + c.why);
    if (!c.copy) return;
    // Copies first, then the imports go: a failed allocation leaves every weight where it was.
    std::vector<std::pair<Weight*, Buffer>> copies;
    try {
        for (Weight& w : weights_)
            if (w.host) {
                copies.push_back({&w, create_weight_buffer(w.desc)});
                ctx_->upload(copies.back().second, 0, w.host, w.desc.nbytes);
            }
    } catch (const Error& e) {
        for (auto& [w, b] : copies) ctx_->destroy(b);
        log_info(std::string("vulkan: copying the weights to device memory failed (") + e.what() +
                 "); they stay in place");
        return;
    }
    vkDeviceWaitIdle(ctx_->device());
    for (auto& [w, b] : copies) {
        weight_bytes_ -= w->buf.allocated;
        ctx_->destroy(w->buf);
        w->buf = b;
        w->host = nullptr;
        weight_bytes_ += w->buf.allocated;
    }
    weights_copied_ += static_cast<uint32_t>(copies.size());
    weights_imported_ = 0;
    ++generation_;  // buffers moved: recorded steps are stale
}

}  // namespace tandem::vk

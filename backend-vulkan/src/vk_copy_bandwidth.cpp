// Device bandwidth probes: the copy bandwidth, the yardstick for decode's achieved GB/s (copies
// between two large device buffers by vkCmdCopyBuffer and by a compute shader with 16-byte
// loads, the faster counts), and the read bandwidth of one buffer (the weight-placement probe).
// Both are timed on the GPU (timestamps) or, without them, by the host.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "vk_backend.h"

namespace tandem::vk {

double VulkanBackend::time_submission(const std::function<void(VkCommandBuffer)>& record) {
    VkQueryPool pool = VK_NULL_HANDLE;
    if (pd_.timestamp_period_ns > 0) {
        VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qi.queryCount = 2;
        check(vkCreateQueryPool(ctx_->device(), &qi, nullptr, &pool), "vkCreateQueryPool");
    }
    double seconds = 0;
    try {
        check(vkResetCommandBuffer(cb_, 0), "vkResetCommandBuffer");
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        check(vkBeginCommandBuffer(cb_, &bi), "vkBeginCommandBuffer");
        if (pool) {
            vkCmdResetQueryPool(cb_, pool, 0, 2);
            vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool, 0);
        }
        record(cb_);
        if (pool) vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 1);
        check(vkEndCommandBuffer(cb_), "vkEndCommandBuffer");
        const auto t0 = std::chrono::steady_clock::now();
        ctx_->submit_and_wait(cb_);
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (pool) {
            uint64_t ts[2] = {0, 0};
            check(vkGetQueryPoolResults(ctx_->device(), pool, 0, 2, sizeof ts, ts, sizeof(uint64_t),
                                        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                  "vkGetQueryPoolResults");
            if (ts[1] > ts[0]) seconds = double(ts[1] - ts[0]) * pd_.timestamp_period_ns * 1e-9;
        }
    } catch (...) {
        if (pool) vkDestroyQueryPool(ctx_->device(), pool, nullptr);
        throw;
    }
    if (pool) vkDestroyQueryPool(ctx_->device(), pool, nullptr);
    return seconds;
}

double VulkanBackend::copy_bandwidth() {
    if (copy_bw_ > 0) return copy_bw_;
    // 1 GiB each on a GPU (far past any cache); 64 MiB on CPU drivers (lavapipe, CI).
    uint64_t size = info_.type == DeviceType::CpuEmulated ? (64ull << 20) : (1ull << 30);
    if (pd_.max_allocation_size) size = std::min(size, pd_.max_allocation_size);
    if (info_.memory_free) size = std::min(size, info_.memory_free / 4);
    size &= ~uint64_t(255);
    if (size == 0) return 0;
    Buffer a = ctx_->create_device_buffer(size, "copy-bandwidth source");
    Buffer b;
    try {
        b = ctx_->create_device_buffer(size, "copy-bandwidth destination");
    } catch (...) {
        ctx_->destroy(a);
        throw;
    }
    constexpr int kCopies = 6;
    // Seconds for kCopies copies a -> b, b -> a, ... (each reads what the previous one wrote),
    // by vkCmdCopyBuffer or by the copy_vec4 shader; the second of two submissions (the first
    // warms up page tables and clocks).
    auto time_copies = [&](bool shader) {
        const auto record = [&](VkCommandBuffer cb) {
            const VkPipelineStageFlags stage =
                shader ? VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT : VK_PIPELINE_STAGE_TRANSFER_BIT;
            if (shader)
                vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE,
                                  pipelines_->get("copy_vec4", {}));
            for (int i = 0; i < kCopies; ++i) {
                const Buffer& src = i % 2 ? b : a;
                const Buffer& dst = i % 2 ? a : b;
                if (shader) {
                    struct {
                        uint64_t src, dst;
                        uint32_t n;
                    } push{src.address, dst.address, static_cast<uint32_t>(size / 16)};
                    vkCmdPushConstants(cb, pipelines_->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                       sizeof push, &push);
                    // Enough workgroups to fill any GPU, each invocation looping.
                    const uint64_t groups = std::min<uint64_t>((size / 16 + 1023) / 1024, 8192);
                    vkCmdDispatch(cb, static_cast<uint32_t>(groups), 1, 1);
                } else {
                    const VkBufferCopy region{0, 0, size};
                    vkCmdCopyBuffer(cb, src.buffer, dst.buffer, 1, &region);
                }
                VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
                mb.srcAccessMask =
                    shader ? VK_ACCESS_SHADER_WRITE_BIT : VK_ACCESS_TRANSFER_WRITE_BIT;
                mb.dstAccessMask = shader
                                       ? VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT
                                       : VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
                vkCmdPipelineBarrier(cb, stage, stage, 0, 1, &mb, 0, nullptr, 0, nullptr);
            }
        };
        (void)time_submission(record);
        return time_submission(record);
    };
    auto rate = [&](double seconds) {
        return seconds > 0 ? 2.0 * double(size) * kCopies / seconds : 0.0;
    };
    double by_copy = 0, by_shader = 0;
    try {
        by_copy = rate(time_copies(false));
        // CPU drivers copy with memcpy; their shaders are far slower and would only add time.
        if (info_.type != DeviceType::CpuEmulated) by_shader = rate(time_copies(true));
    } catch (...) {
        ctx_->destroy(a);
        ctx_->destroy(b);
        throw;
    }
    ctx_->destroy(a);
    ctx_->destroy(b);
    // The faster of the two is what the device's memory can do (NVIDIA's vkCmdCopyBuffer on a
    // compute queue measured 851 GB/s on an H200 whose HIP device copy does 4246 GB/s).
    copy_bw_ = std::max(by_copy, by_shader);
    char line[192];
    if (by_shader > 0)
        std::snprintf(line, sizeof line,
                      "vulkan: device copy %.0f GB/s by shader, %.0f GB/s by vkCmdCopyBuffer "
                      "(2 x %.0f MiB buffers, read + written bytes)",
                      by_shader / 1e9, by_copy / 1e9, double(size) / (1 << 20));
    else
        std::snprintf(line, sizeof line,
                      "vulkan: device copy %.1f GB/s by vkCmdCopyBuffer (2 x %.0f MiB buffers, "
                      "read + written bytes)",
                      by_copy / 1e9, double(size) / (1 << 20));
    log_info(line);
    return copy_bw_;
}

// Bytes/s of the best of 5 read_vec4 passes over `bytes` at src, after one untimed pass.
double VulkanBackend::read_bandwidth(const Buffer& src, uint64_t bytes, const Buffer& sink) {
    const auto record = [&](VkCommandBuffer cb) {
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipelines_->get("read_vec4", {}));
        struct {
            uint64_t src, sink;
            uint32_t n;
        } push{src.address, sink.address, static_cast<uint32_t>(bytes / 16)};
        vkCmdPushConstants(cb, pipelines_->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push,
                           &push);
        // Enough workgroups to fill any GPU, each invocation looping.
        vkCmdDispatch(cb, static_cast<uint32_t>(std::min<uint64_t>(bytes / 16 / 1024, 8192)), 1, 1);
    };
    double best = 0;
    for (int round = 0; round < 6; ++round) {
        const double seconds = time_submission(record);
        if (round > 0 && seconds > 0) best = std::max(best, double(bytes) / seconds);
    }
    return best;
}

// "mat_mul q4_k [4096 -> 14336] T=1 matvec": what the profile table groups by.
std::string VulkanBackend::node_label(const Graph& g, const Node& n) const {
    std::string s = op_name(n.op);
    if (n.op == Op::MatMul) {
        const WeightDesc& w = weight_desc(g, n.src[0]);
        const int64_t T = g.tensor(n.src[1]).rows();
        const MatmulPlan plan = plan_matmul(w, T);
        s += " " + std::string(dtype_name(w.type)) + " [" + std::to_string(w.ne[0]) + " -> " +
             std::to_string(w.ne[1]) + "] " + (T == 1 ? "T=1" : "T>1") +
             (plan.coopmat ? " coopmat"
              : plan.tiled ? " tiled"
                           : " matvec");
    } else if (n.op == Op::Attention) {
        s += g.tensor(n.out).rows() == 1 ? " T=1" : " T>1";
        if (attention_splits(g, n) == 0)
            s += flash_coopmat_fits(g, n)          ? " flash coopmat"
                 : flash_attention_tile(g, n) != 0 ? " flash"
                                                   : "";
    }
    return s;
}

}  // namespace tandem::vk

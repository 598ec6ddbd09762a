// The cooperative-matrix prefill checked once, before any model uses it, against the f32 tiles
// on the same device: a driver that builds the rewritten SPIR-V (tools/spirv_coopmat_rewrite.cpp)
// but runs it wrongly would otherwise give a wrong prefill and no error. Only NVIDIA's driver
// has run the kernel under the tests; RADV and others meet it first on users' machines.
#include <cstring>
#include <random>
#include <vector>

#include "tandem/common/dtype.h"
#include "tandem/common/error.h"
#include "vk_backend.h"
#include "vk_pipelines.h"

namespace tandem::vk {

namespace {
// Rows and tokens past a tile each (128 x 64 for the cooperative matrices, 64 x 64 for the
// tiles), inputs past one 64-input step.
constexpr uint32_t kIn = 288, kOut = 160, kTok = 70;
}  // namespace

std::string VulkanBackend::coopmat_check() {
    const uint32_t type = static_cast<uint32_t>(DType::Q8_0);  // the shaders' id: file layout
    const auto row = static_cast<uint32_t>(row_bytes(DType::Q8_0, kIn));
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> q(-127, 127);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    // [kOut, kIn] Q8_0 blocks: f16 scale 1/64 (0x2400), random quants.
    std::vector<uint8_t> w(size_t(kOut) * row);
    for (size_t b = 0; b < w.size(); b += 34) {
        w[b] = 0x00, w[b + 1] = 0x24;
        for (int i = 0; i < 32; ++i) w[b + 2 + i] = uint8_t(int8_t(q(rng)));
    }
    std::vector<float> x(size_t(kTok) * kIn);  // [kTok, kIn]
    for (float& v : x) v = u(rng);
    const uint64_t y_bytes = uint64_t(kTok) * kOut * 4;  // [kTok, kOut] each

    Buffer wb = ctx_->create_device_buffer(w.size(), "coopmat check weights");
    VkCommandBuffer cb = VK_NULL_HANDLE;
    Buffer xb, yb, host;
    std::string why;
    try {
        xb = ctx_->create_device_buffer(x.size() * 4, "coopmat check activations");
        yb = ctx_->create_device_buffer(2 * y_bytes, "coopmat check outputs");
        host = ctx_->create_host_buffer(2 * y_bytes, "coopmat check readback", true);
        ctx_->upload(wb, 0, w.data(), w.size());
        ctx_->upload(xb, 0, x.data(), x.size() * 4);
        // Its own command buffer: the check runs when a step being recorded first needs the
        // kernel, so cb may hold that step's commands.
        VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        cai.commandPool = ctx_->command_pool();
        cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        cai.commandBufferCount = 1;
        check(vkAllocateCommandBuffers(ctx_->device(), &cai, &cb), "vkAllocateCommandBuffers");
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
        for (int k = 0; k < 2; ++k) {  // 0: cooperative matrices, 1: f32 tiles
            const MatPush p{wb.address, xb.address, yb.address + uint64_t(k) * y_bytes,
                            wb.address, kIn,        kOut,
                            kTok,       row,        0};
            vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE,
                              pipelines_->get(k == 0 ? "matmul_coopmat" : "matmul_tiled", {type}));
            vkCmdPushConstants(cb, pipelines_->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof p,
                               &p);
            const uint32_t rows = k == 0 ? 128 : 64;
            vkCmdDispatch(cb, (kOut + rows - 1) / rows, (kTok + 63) / 64, 1);
        }
        VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
        const VkBufferCopy region{0, 0, 2 * y_bytes};
        vkCmdCopyBuffer(cb, yb.buffer, host.buffer, 1, &region);
        mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                             &mb, 0, nullptr, 0, nullptr);
        check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
        ctx_->submit_and_wait(cb);
        std::vector<float> y(size_t(2) * kTok * kOut);
        std::memcpy(y.data(), host.mapped, 2 * y_bytes);
        // f16 products against f32 ones: NMSE ~1e-7 (docs/vulkan.md, session 17).
        double num = 0, den = 0;
        const size_t n = size_t(kTok) * kOut;
        for (size_t i = 0; i < n; ++i) {
            const double d = double(y[i]) - y[n + i];
            num += d * d;
            den += double(y[n + i]) * y[n + i];
        }
        const double nmse = den > 0 ? num / den : 1.0;
        if (!(nmse < 1e-5))
            why = "its results differ from the f32 tiles' (NMSE " + std::to_string(nmse) + ")";
    } catch (const Error& e) {
        why = e.what();
    }
    if (cb) vkFreeCommandBuffers(ctx_->device(), ctx_->command_pool(), 1, &cb);
    ctx_->destroy(wb);
    ctx_->destroy(xb);
    ctx_->destroy(yb);
    ctx_->destroy(host);
    return why;
}

}  // namespace tandem::vk

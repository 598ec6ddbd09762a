// The cooperative-matrix kernels checked once, before any model uses them, against the f32
// kernels on the same device: a driver that builds the rewritten SPIR-V
// (tools/spirv_coopmat_rewrite.cpp) but runs it wrongly would otherwise give a wrong prefill and
// no error. Only NVIDIA's driver has run them under the tests; RADV and others meet them first
// on users' machines.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tandem/common/dtype.h"
#include "tandem/common/error.h"
#include "tandem/quant/fp16.h"
#include "vk_backend.h"
#include "vk_pipelines.h"

namespace tandem::vk {

namespace {
// Matmul: rows and tokens past a tile each (128 x 64 for the cooperative matrices, 64 x 64 for
// the tiles; 70 tokens fill part of a 128-token tile too), inputs past one 64-input step.
constexpr uint32_t kIn = 288, kOut = 160, kTok = 70;
// Attention: GQA 2:1, 40 new tokens after 30 cached (two 64-row tiles a KV head, positions over
// three 32-position tiles, the causal edge inside them).
constexpr uint32_t kHeads = 4, kKvHeads = 2, kPast = 30, kNew = 40, kCtx = kPast + kNew;
// f16 products against f32 ones: NMSE ~1e-7 (docs/vulkan.md, session 17).
constexpr double kMaxNmse = 1e-5;
}  // namespace

double VulkanBackend::nmse_of_two(const std::function<void(VkCommandBuffer, int)>& record,
                                  const Buffer& out, size_t n) {
    const uint64_t bytes = uint64_t(n) * 8;
    Buffer host;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    double nmse = 1.0;
    try {
        host = ctx_->create_host_buffer(bytes, "coopmat check readback", true);
        // Its own command buffer: the check runs when a step being recorded first needs the
        // kernel, so cb_ may hold that step's commands.
        VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        cai.commandPool = ctx_->command_pool();
        cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        cai.commandBufferCount = 1;
        check(vkAllocateCommandBuffers(ctx_->device(), &cai, &cb), "vkAllocateCommandBuffers");
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
        for (int k = 0; k < 2; ++k) record(cb, k);
        VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
        const VkBufferCopy region{0, 0, bytes};
        vkCmdCopyBuffer(cb, out.buffer, host.buffer, 1, &region);
        mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                             &mb, 0, nullptr, 0, nullptr);
        check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
        ctx_->submit_and_wait(cb);
        std::vector<float> y(2 * n);
        std::memcpy(y.data(), host.mapped, bytes);
        double num = 0, den = 0;
        for (size_t i = 0; i < n; ++i) {
            const double d = double(y[i]) - y[n + i];
            num += d * d;
            den += double(y[n + i]) * y[n + i];
        }
        nmse = den > 0 ? num / den : 1.0;
    } catch (...) {
        if (cb) vkFreeCommandBuffers(ctx_->device(), ctx_->command_pool(), 1, &cb);
        ctx_->destroy(host);
        throw;
    }
    vkFreeCommandBuffers(ctx_->device(), ctx_->command_pool(), 1, &cb);
    ctx_->destroy(host);
    return nmse;
}

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

    Buffer wb, xb, yb;
    std::string why;
    try {
        wb = ctx_->create_device_buffer(w.size(), "coopmat check weights");
        xb = ctx_->create_device_buffer(x.size() * 4, "coopmat check activations");
        yb = ctx_->create_device_buffer(2 * y_bytes, "coopmat check outputs");
        ctx_->upload(wb, 0, w.data(), w.size());
        ctx_->upload(xb, 0, x.data(), x.size() * 4);
        // Both tile widths the dense prefill takes (coopmat_tile_toks).
        for (const uint32_t toks : {64u, 128u}) {
            if (toks == 128 && !coopmat_wide_) break;
            const double nmse = nmse_of_two(
                [&](VkCommandBuffer cb, int k) {  // 0: cooperative matrices, 1: f32 tiles
                    const MatPush p{wb.address, xb.address, yb.address + uint64_t(k) * y_bytes,
                                    wb.address, kIn,        kOut,
                                    kTok,       row,        0};
                    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE,
                                      k == 0
                                          ? pipelines_->get("matmul_coopmat",
                                                            coopmat_spec(type, false, false, toks))
                                          : pipelines_->get("matmul_tiled", {type}));
                    vkCmdPushConstants(cb, pipelines_->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                       sizeof p, &p);
                    const uint32_t rows = k == 0 ? 128 : 64, cols = k == 0 ? toks : 64;
                    vkCmdDispatch(cb, (kOut + rows - 1) / rows, (kTok + cols - 1) / cols, 1);
                },
                yb, size_t(kTok) * kOut);
            if (!(nmse < kMaxNmse)) {
                why = "its results (" + std::to_string(toks) +
                      "-token tiles) differ from the f32 tiles' (NMSE " + std::to_string(nmse) +
                      ")";
                break;
            }
        }
    } catch (const Error& e) {
        why = e.what();
    }
    ctx_->destroy(wb);
    ctx_->destroy(xb);
    ctx_->destroy(yb);
    return why;
}

std::string VulkanBackend::flash_coopmat_check(uint32_t hd) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    const size_t kv_n = size_t(kCtx) * kKvHeads * hd, q_n = size_t(kNew) * kHeads * hd;
    std::vector<uint16_t> kv(2 * kv_n);  // K then V, f16 [kCtx, kKvHeads * hd]
    for (uint16_t& h : kv) h = quant::fp32_to_fp16(u(rng));
    std::vector<float> q(q_n);  // [kNew, kHeads * hd]
    for (float& v : q) v = u(rng);
    const uint32_t n_past = kPast;

    Buffer kvb, qb, yb, stepb;
    std::string why;
    try {
        kvb = ctx_->create_device_buffer(kv.size() * 2, "flash check K / V");
        qb = ctx_->create_device_buffer(q.size() * 4, "flash check q");
        yb = ctx_->create_device_buffer(2 * q.size() * 4, "flash check outputs");
        stepb = ctx_->create_device_buffer(16, "flash check n_past");
        ctx_->upload(kvb, 0, kv.data(), kv.size() * 2);
        ctx_->upload(qb, 0, q.data(), q.size() * 4);
        ctx_->upload(stepb, 0, &n_past, sizeof n_past);
        const double nmse = nmse_of_two(
            [&](VkCommandBuffer cb, int k) {  // 0: cooperative matrices, 1: one row a workgroup
                const AttnPush p{qb.address,
                                 kvb.address,
                                 kvb.address + kv_n * 2,
                                 yb.address + uint64_t(k) * q_n * 4,
                                 stepb.address,
                                 kNew,
                                 kHeads,
                                 kKvHeads,
                                 hd,
                                 0,
                                 1.0f / std::sqrt(float(hd)),
                                 0.0f};
                vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE,
                                  k == 0 ? pipelines_->get("attention_flash_coopmat", {hd / 16})
                                         : pipelines_->get("attention", {1u}));
                vkCmdPushConstants(cb, pipelines_->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                   sizeof p, &p);
                if (k == 0) {
                    const uint32_t rows = kNew * (kHeads / kKvHeads);
                    vkCmdDispatch(cb, (rows + kFlashCoopmatRows - 1) / kFlashCoopmatRows, kKvHeads,
                                  1);
                } else {
                    vkCmdDispatch(cb, kNew * kHeads, 1, 1);
                }
            },
            yb, q_n);
        if (!(nmse < kMaxNmse))
            why = "its results differ from attention.comp's (NMSE " + std::to_string(nmse) + ")";
    } catch (const Error& e) {
        why = e.what();
    }
    ctx_->destroy(kvb);
    ctx_->destroy(qb);
    ctx_->destroy(yb);
    ctx_->destroy(stepb);
    return why;
}

}  // namespace tandem::vk

// Which kernel runs a MatMul node and with what specialisation: matvec (decode and small
// batches; every weight type and row length) or the 64x64 tiled kernel (prefill), within the
// device's workgroup-size and shared-memory limits.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "vk_backend.h"
#include "vk_pipelines.h"
#include "vk_repack.h"

namespace tandem::vk {

namespace {
constexpr int64_t kTiledMinTokens = 9;  // below this, matvec passes over the weights ceil(T/4)x
constexpr uint32_t kSmallMatrixWorkgroups = 128;  // fewer at the default shape: a row each
constexpr uint32_t kSmallMatrixWg = 128;
constexpr uint32_t kTiledShared = 2 * 64 * 33 * 4;
constexpr uint32_t kCoopmatShared = (128 + 64) * 9 * 16 + 8 * 256 * 4;       // matmul_coopmat.comp
constexpr uint32_t kCoopmatWideShared = (128 + 128) * 9 * 16 + 8 * 256 * 4;  // its 128-token form

uint32_t matvec_shared_bytes(uint32_t wg, uint32_t rows, uint32_t tok, uint32_t gpt = 2) {
    return tok * (wg / rows) * gpt * 33 * 4 + tok * wg * 4;  // matvec.comp: xs, red
}
}  // namespace

VulkanBackend::MatmulPlan VulkanBackend::plan_matmul(const WeightDesc& w, int64_t n_tok) const {
    MatmulPlan plan;
    const bool whole_groups = w.ne[0] % 32 == 0;
    if (tiled_ok_ && whole_groups && n_tok >= kTiledMinTokens &&
        pd_.max_workgroup_invocations >= 256 && pd_.max_shared_bytes >= kTiledShared) {
        plan.tiled = true;
        // f16 rounding of the weights: not for f32 ones, nor bf16 (range beyond f16's).
        plan.coopmat = coopmat_ok_ && pd_.coopmat_f16 && w.type != DType::F32 &&
                       w.type != DType::BF16 && pd_.max_shared_bytes >= kCoopmatShared;
        return plan;
    }
    plan.wg = matvec_wg_;
    plan.rows = matvec_rows_;
    // A matrix of few rows (an MoE router: 128 rows of f32) in workgroups of one row each, so it
    // spreads over the device: at 512 x 16 its 8 workgroups read 1 MB on 8 compute units (H200,
    // qwen3-30b-a3b: 21.8 us a call, docs/vulkan.md "Session 21").
    if (!matvec_env_ && w.ne[1] < int64_t(kSmallMatrixWorkgroups) * plan.rows &&
        matvec_shared_bytes(kSmallMatrixWg, 1, 1) <= pd_.max_shared_bytes) {
        plan.wg = kSmallMatrixWg;
        plan.rows = 1;
    }
    plan.tok = n_tok == 1 ? 1 : 4;
    // The direct kernel needs whole groups; its shared memory is only the reduction.
    plan.direct = matvec_direct_ && whole_groups && plan.tok * plan.wg * 4 <= pd_.max_shared_bytes;
    while (!plan.direct && plan.tok > 1 &&
           matvec_shared_bytes(plan.wg, plan.rows, plan.tok) > pd_.max_shared_bytes)
        plan.tok /= 2;
    // More groups per invocation for one token: more weight loads in flight per chunk (the
    // shared chunk grows with it, so several tokens keep 2).
    if (plan.tok == 1 && !plan.direct &&
        matvec_shared_bytes(plan.wg, plan.rows, 1, matvec_gpt1_) <= pd_.max_shared_bytes)
        plan.gpt = matvec_gpt1_;
    const uint32_t tpr = plan.wg / plan.rows;
    plan.subgroup_add = subgroups_tile(tpr) ? 1u : 0u;
    return plan;
}

std::string VulkanBackend::first_use_why_not(bool& checked,
                                             const std::function<std::string()>& check,
                                             const char* shader,
                                             const std::vector<uint32_t>& spec) {
    if (!checked) {
        checked = true;
        if (std::string why = check(); !why.empty()) return why;
    }
    try {
        pipelines_->get(shader, spec);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

bool VulkanBackend::coopmat_pipeline_ok(uint32_t spec_type) {
    if (!coopmat_ok_) return false;
    const std::string why = first_use_why_not(
        coopmat_checked_, [this] { return coopmat_check(); }, "matmul_coopmat",
        coopmat_spec(spec_type, false));
    if (why.empty()) return true;
    coopmat_ok_ = false;
    info_.f16_prefill_matmul = false;
    info_.f16_prefill_attention = false;
    log_info("vulkan: prefill without cooperative matrices (f32 tiles instead): " + why);
    return false;
}

uint32_t VulkanBackend::coopmat_tile_toks(uint32_t spec_type, bool x16, int64_t n_tok) {
    if (n_tok <= 64 || !coopmat_wide_) return 64;
    // Measured per type (H200, 8B pp512 against 64-token tiles, docs/vulkan.md sessions 25-28):
    // repacked Q4_0 (decoded straight to f16) +2-4 %, and decoded 8 at a time (dq_group_f16)
    // repacked Q8_0 +4 %, Q6_K +16 %, Q5_K +13 %; Q4_K only with its groups staged half by half
    // (coopmat_stage: Q4_K_M +11 %, where its 143-register unrolled form lost 1-2 %). Every type
    // through dq_group's 32 floats (live beside the tile's 64 sums) lost 1-9 %. The others keep
    // 64 unless asked for every type.
    const bool q4_0_f16 = coopmat_q4_0_f16(spec_type);
    const bool by8 = spec_type == repacked_type_id(DType::Q8_0) ||
                     spec_type == repacked_type_id(DType::Q6_K) ||
                     spec_type == uint32_t(DType::Q6_K) || spec_type == uint32_t(DType::Q5_K) ||
                     spec_type == uint32_t(DType::Q4_K);
    if (!q4_0_f16 && !by8 && !coopmat_wide_all_) return 64;
    try {
        pipelines_->get("matmul_coopmat", coopmat_spec(spec_type, false, x16, 128));
    } catch (const Error& e) {
        coopmat_wide_ = false;
        log_info(std::string("vulkan: cooperative-matrix prefill in 64-token tiles: ") + e.what());
        return 64;
    }
    return 128;
}

bool VulkanBackend::coopmat_q4_0_f16(uint32_t spec_type) const {
    return spec_type == repacked_type_id(DType::Q4_0) && (coopmat_f16_decode_ & 1u) != 0;
}

bool VulkanBackend::coopmat_q8_0_f16(uint32_t spec_type) const {
    return spec_type == repacked_type_id(DType::Q8_0) && (coopmat_f16_decode_ & 2u) != 0;
}

uint32_t VulkanBackend::coopmat_stage(uint32_t spec_type, uint32_t toks) const {
    if (coopmat_stage_ >= 0) return uint32_t(coopmat_stage_);
    // Only where they took the 128-token tile under 128 registers on the H200 (two workgroups an
    // SM) and were measured faster, with the same bits (docs/vulkan.md, sessions 27-28): the
    // product steps rolled (4) for repacked Q4_0 decoded to f16 (130 -> 122 registers, 8B pp512
    // +12.7 %), repacked Q8_0 decoded to f16 (140 -> 121, +17 %) and repacked Q6_K (130 -> 127,
    // 8B Q6_K +16 %); Q4_K / Q5_K's groups also staged half by half (12: 143 -> 120, Q4_K_M
    // +11 %, Q5_K_M +12 %). The 64-token tiles are faster unrolled (Q4_K_M 7840 -> 7050 rolled).
    if (toks != 128) return 0;
    if (spec_type == uint32_t(DType::Q4_K) || spec_type == uint32_t(DType::Q5_K)) return 12;
    const bool rolled = coopmat_q4_0_f16(spec_type) || coopmat_q8_0_f16(spec_type) ||
                        spec_type == repacked_type_id(DType::Q6_K);
    return rolled ? 4u : 0u;
}

// Chooses the matvec kernel and shape for the device and reads TANDEM_VK_MATVEC ("wg,rows" or
// "wg,rows,direct": workgroup size and rows per workgroup, powers of two with wg/rows >= 1;
// direct 1/0 picks matvec_direct.comp or matvec.comp) and TANDEM_VK_TILED=0, for tuning runs.
void VulkanBackend::read_tuning_env() {
    // Discrete GPUs: 512 invocations x 16 rows (a decode sweep on an H200 measured 180 tok/s
    // against 173 for 256 x 8 on an 8B Q4_0: half the workgroups, each activation chunk staged
    // in shared memory serves twice the rows). Others keep 256 x 8 (integrated GPUs and CPU
    // drivers have fewer, smaller compute units).
    if (info_.type == DeviceType::DiscreteGpu && pd_.max_workgroup_invocations >= 512 &&
        matvec_shared_bytes(512, 16, 1) <= pd_.max_shared_bytes) {
        matvec_wg_ = 512;
        matvec_rows_ = 16;
    }
    // The staged kernel (matvec.comp: activation chunks in shared memory) is the default
    // everywhere: on the H200 (8B Q4_0, tg64) it decodes 209 tok/s at 512 x 16 against 81-87
    // for matvec_direct.comp at every shape tried (512x16, 256x8, 256x4, 128x2, 64x1). The
    // direct kernel stays for tuning runs (TANDEM_VK_MATVEC=wg,rows,1).
    matvec_direct_ = false;
    if (const char* mv = std::getenv("TANDEM_VK_MATVEC")) {
        unsigned wg = 0, rows = 0, direct = matvec_direct_ ? 1 : 0;
        auto pow2 = [](unsigned v) { return v && !(v & (v - 1)); };
        if (std::sscanf(mv, "%u,%u,%u", &wg, &rows, &direct) >= 2 && pow2(wg) && pow2(rows) &&
            rows <= wg && wg <= pd_.max_workgroup_invocations &&
            matvec_shared_bytes(wg, rows, 1) <= pd_.max_shared_bytes) {
            matvec_wg_ = wg;
            matvec_rows_ = rows;
            matvec_direct_ = direct != 0;
            matvec_env_ = true;
        } else {
            std::fprintf(stderr, "vulkan: ignoring TANDEM_VK_MATVEC='%s' (want wg,rows[,direct])\n",
                         mv);
        }
    }
    if (const char* t = std::getenv("TANDEM_VK_TILED")) tiled_ok_ = std::string(t) != "0";
    if (const char* c = std::getenv("TANDEM_VK_COOPMAT")) coopmat_ok_ = std::string(c) != "0";
    if (const char* c = std::getenv("TANDEM_VK_COOPMAT_F16DQ"))
        coopmat_f16_decode_ = uint32_t(std::atoi(c)) & 3u;
    if (const char* c = std::getenv("TANDEM_VK_COOPMAT_X16")) coopmat_x16_ = std::string(c) != "0";
    // matmul_coopmat.comp's STAGE bits (2, 4, 8; 0 for none) for every type, for tuning runs.
    if (const char* c = std::getenv("TANDEM_VK_COOPMAT_STAGE")) coopmat_stage_ = std::atoi(c) & 14;
    // Tiles of 128 tokens (coopmat_tile_toks): TANDEM_VK_COOPMAT_TOKS=64 never, =128 for every
    // weight type.
    coopmat_wide_ = pd_.max_shared_bytes >= kCoopmatWideShared;
    if (const char* c = std::getenv("TANDEM_VK_COOPMAT_TOKS")) {
        if (std::atoi(c) == 64) coopmat_wide_ = false;
        coopmat_wide_all_ = std::atoi(c) == 128;
    }
    info_.f16_prefill_matmul = tiled_ok_ && coopmat_ok_ && pd_.coopmat_f16;
    if (const char* f = std::getenv("TANDEM_VK_FLASH"); f && *f)
        flash_mode_ = std::clamp(std::atoi(f), 0, 2);
    info_.f16_prefill_attention = flash_mode_ == 2 && coopmat_ok_ && pd_.coopmat_f16;
    if (const char* v = std::getenv("TANDEM_VK_Q8_ROWS")) {
        const int n = std::atoi(v);
        if (n == 1 || n == 2 || n == 4 || n == 8) q8_rows_ = uint32_t(n), q8_rows_set_ = true;
    }
    if (const char* v = std::getenv("TANDEM_VK_QKV_ROPE")) q8_rope_ = std::string(v) != "0";
    if (const char* v = std::getenv("TANDEM_VK_NORM_FUSE")) norm_fuse_ = std::string(v) != "0";
    if (const char* v = std::getenv("TANDEM_VK_Q8_SHARE")) q8_share_ = std::string(v) != "0";
    if (const char* v = std::getenv("TANDEM_VK_Q8_FEW")) q8_few_ = std::string(v) != "0";
    if (const char* v = std::getenv("TANDEM_VK_K64")) q8_k64_ = std::string(v) != "0";
    if (const char* v = std::getenv("TANDEM_VK_Q8_WG")) {
        const int n = std::atoi(v);
        if (n == 64 || n == 128 || n == 256) q8_share_wg_ = uint32_t(n);
    }
    if (const char* v = std::getenv("TANDEM_VK_GPT")) {
        const int n = std::atoi(v);
        if (n == 1 || n == 2 || n == 4 || n == 8) matvec_gpt1_ = uint32_t(n);
    }
}

}  // namespace tandem::vk

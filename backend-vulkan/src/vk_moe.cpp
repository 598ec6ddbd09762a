// The expert FFN over q8 activations (moe_q8.comp, moe_lists.comp, moe_slot_sum.comp): which
// MoeFfn nodes take it, where its pieces live in the MoE buffer, and its dispatches. The other
// nodes keep moe_gate_up.comp / moe_down.comp (f32 activations, element-wise dequantisation).
#include <cstdint>

#include "vk_backend.h"
#include "vk_grid.h"

namespace tandem::vk {
namespace {

struct MoeQ8Push {
    uint64_t w, xq, xd, y, route, w1, y1, lists;
    uint32_t n_in, rows, row_bytes, k, first, n_local, flags;
};
static_assert(sizeof(MoeQ8Push) <= kPushConstantBytes);
struct ListsPush {
    uint64_t route, lists;
    uint32_t n_slots, first, n_local;
};
struct SlotSumPush {
    uint64_t ys, route, y;
    uint32_t n, n_embd, k, first, n_local;
};

constexpr uint32_t kRowsWorkgroup = 64, kDownWorkgroup = 256, kRowsPerWorkgroup = 4;
constexpr uint32_t kPrefillSlots = 8;    // moe_q8.comp TOK for prefill
constexpr int64_t kDecodeMaxTokens = 8;  // more: the prefill form (slots grouped by expert)
constexpr int64_t kMaxExperts = 1024;    // moe_lists.comp's shared counters
constexpr uint32_t kPerToken = 1, kWeighted = 2, kLists = 4;

uint64_t align256(uint64_t v) {
    return (v + 255) / 256 * 256;
}

}  // namespace

bool VulkanBackend::record_moe_ffn_q8(const Graph& g, const Node& n) {
    const WeightDesc &gw = weight_desc(g, n.src[2]), &dw = weight_desc(g, n.src[4]);
    const uint32_t gt = shader_type(g, n.src[2]), ut = shader_type(g, n.src[3]),
                   dt = shader_type(g, n.src[4]);
    const GraphTensor& out = g.tensor(n.out);
    const int64_t T = out.rows(), k = g.tensor(n.src[1]).cols() / 2, n_slots = T * k;
    const int64_t n_embd = gw.ne[0], n_ff = gw.ne[1], n_local = gw.ne[2];
    if (!q8_ || !moe_q8_ || gt != ut || n_embd % 256 != 0 || n_ff % 256 != 0 ||
        !q8_items_read(gt, gw.type, n_embd) || !q8_items_read(dt, dw.type, n_ff) ||
        n_local > kMaxExperts || n_slots > 65535 || T < 1)
        return false;
    const bool prefill = T > kDecodeMaxTokens;
    // The q8 activations of `values` values: the int8 values, then (d, s) per 32.
    auto q8_bytes = [](uint64_t values) { return q8_values_bytes(values) + values / 32 * 8; };
    // The MoE buffer: hg, hu [n_slots, n_ff] f32; q8 of x [T, n_embd] and of h; prefill: the
    // slots' weighted down rows [n_slots, n_embd] and the lists.
    const uint64_t nh = uint64_t(n_slots * n_ff) * 4;
    const uint64_t o_hu = align256(nh), o_xq = o_hu + align256(nh);
    const uint64_t o_hq = o_xq + align256(q8_bytes(uint64_t(T * n_embd)));
    const uint64_t o_ys = o_hq + align256(q8_bytes(uint64_t(n_slots * n_ff)));
    const uint64_t o_lists = o_ys + (prefill ? align256(uint64_t(n_slots * n_embd) * 4) : 0);
    const uint64_t end = o_lists + (prefill ? align256(uint64_t(n_local + 1 + n_slots) * 4) : 0);
    ensure_moe_buffer(end);
    const uint64_t base = moe_h_.address;
    auto region = [&](uint64_t off, uint64_t size) { return Ref{kMoeId, base + off, off, size}; };
    const Ref hg = region(0, nh), hu = region(o_hu, nh);
    const Ref xq = region(o_xq, q8_bytes(uint64_t(T * n_embd)));
    const Ref hq = region(o_hq, q8_bytes(uint64_t(n_slots * n_ff)));
    const uint64_t xds = base + o_xq + q8_values_bytes(uint64_t(T * n_embd));
    const uint64_t hds = base + o_hq + q8_values_bytes(uint64_t(n_slots * n_ff));
    const Ref x = ref(g, n.src[0]), route = ref(g, n.src[1]), y = ref(g, n.out);
    const Ref gate = ref(g, n.src[2]), up = ref(g, n.src[3]), down = ref(g, n.src[4]);

    record_quantize_q8(x, x, x, xq, xds, uint64_t(T * n_embd), 0);
    Ref lists{};
    if (prefill) {
        lists = region(o_lists, uint64_t(n_local + 1 + n_slots) * 4);
        const ListsPush lp{route.address, lists.address, u32(n_slots), u32(n.i[0]), u32(n_local)};
        dispatch("moe_lists", {}, &lp, sizeof lp, 1, 1, 1, {route}, {lists});
    }
    const uint32_t tok = prefill ? kPrefillSlots : 1u, gy = u32(prefill ? n_local : n_slots);
    const uint32_t lists_flag = prefill ? kLists : 0u;
    const MoeQ8Push gp{
        gate.address,         xq.address, xds,           hg.address,   route.address,
        up.address,           hu.address, lists.address, u32(n_embd),  u32(n_ff),
        weight_row_bytes(gw), u32(k),     u32(n.i[0]),   u32(n_local), kPerToken | lists_flag};
    dispatch("moe_q8", {gt, kRowsWorkgroup, tok, 0u}, &gp, sizeof gp,
             u32(2 * n_ff / kRowsPerWorkgroup), gy, 1, {xq, route, lists}, {hg, hu});
    record_quantize_q8(hg, hu, hg, hq, hds, uint64_t(n_slots * n_ff), gated_q8_op(n.i[1]));
    MoeQ8Push dp{down.address,
                 hq.address,
                 hds,
                 y.address,
                 route.address,
                 0,
                 0,
                 lists.address,
                 u32(n_ff),
                 u32(n_embd),
                 weight_row_bytes(dw),
                 u32(k),
                 u32(n.i[0]),
                 u32(n_local),
                 0u};
    if (!prefill) {
        dispatch("moe_q8", {dt, kDownWorkgroup, 1u, 1u}, &dp, sizeof dp,
                 u32(n_embd / kRowsPerWorkgroup), u32(T), 1, {hq, route}, {y});
        return true;
    }
    const Ref ys = region(o_ys, uint64_t(n_slots * n_embd) * 4);
    dp.y = ys.address;
    dp.flags = kWeighted | kLists;
    dispatch("moe_q8", {dt, kRowsWorkgroup, kPrefillSlots, 0u}, &dp, sizeof dp,
             u32(n_embd / kRowsPerWorkgroup), gy, 1, {hq, route, lists}, {ys});
    const uint64_t n_out = uint64_t(T * n_embd), groups = (n_out + 255) / 256;
    const SlotSumPush sp{ys.address,  route.address, y.address,   u32(int64_t(n_out)),
                         u32(n_embd), u32(k),        u32(n.i[0]), u32(n_local)};
    dispatch("moe_slot_sum", {}, &sp, sizeof sp, split_x(groups), 1, split_z(groups), {ys, route},
             {y});
    return true;
}

}  // namespace tandem::vk

// The expert FFN over q8 activations (moe_q8.comp, moe_lists.comp, moe_slot_sum.comp): which
// MoeFfn nodes take it, where its pieces live in the MoE buffer, and its dispatches. The other
// nodes keep moe_gate_up.comp / moe_down.comp (f32 activations, element-wise dequantisation).
#include <cstddef>
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
    uint32_t n_slots, first, n_local, tiles;
};
// matmul_coopmat.comp with MOE = 1: MatPush's fields, then the expert ones.
struct MoeCoopmatPush {
    MatPush mat;
    uint64_t lists, route, w1, y1;
    uint32_t k, per_token, weighted, expert_bytes, slots_at, tiles_at;
};
static_assert(offsetof(MoeCoopmatPush, lists) == 56 &&
              sizeof(MoeCoopmatPush) <= kPushConstantBytes);
struct SlotSumPush {
    uint64_t ys, route, y;
    uint32_t n, n_embd, k, first, n_local;
};

constexpr uint32_t kRowsWorkgroup = 64, kDownWorkgroup = 256, kRowsPerWorkgroup = 4;
constexpr uint32_t kPrefillSlots = 8;    // moe_q8.comp TOK for prefill
constexpr int64_t kDecodeMaxTokens = 8;  // more: the prefill form (slots grouped by expert)
constexpr int64_t kMaxExperts = 1024;    // moe_lists.comp's shared counters
constexpr uint32_t kPerToken = 1, kWeighted = 2, kLists = 4;

// Tiles of 64 slots moe_lists.comp may list for the cooperative-matrix experts: one partial
// tile per expert at most.
int64_t max_tiles(int64_t n_slots, int64_t n_local) {
    return (n_slots + 63) / 64 + n_local;
}
// The lists' words: offsets [n_local + 1], the slots, then the tiles (a count and pairs).
uint64_t lists_words(int64_t n_slots, int64_t n_local) {
    return uint64_t(n_local + 1 + n_slots + 1 + 2 * max_tiles(n_slots, n_local));
}

uint64_t align256(uint64_t v) {
    return (v + 255) / 256 * 256;
}

}  // namespace

std::optional<VulkanBackend::MoeQ8Layout> VulkanBackend::moe_q8_layout(const Graph& g,
                                                                       const Node& n) const {
    const WeightDesc &gw = weight_desc(g, n.src[2]), &dw = weight_desc(g, n.src[4]);
    const uint32_t gt = shader_type(g, n.src[2]), ut = shader_type(g, n.src[3]),
                   dt = shader_type(g, n.src[4]);
    const int64_t T = g.tensor(n.out).rows(), k = g.tensor(n.src[1]).cols() / 2, n_slots = T * k;
    const int64_t n_embd = gw.ne[0], n_ff = gw.ne[1], n_local = gw.ne[2];
    if (!q8_ || !moe_q8_ || gt != ut || n_embd % 256 != 0 || n_ff % 256 != 0 ||
        !q8_items_read(gt, gw.type, n_embd) || !q8_items_read(dt, dw.type, n_ff) ||
        n_local > kMaxExperts || n_slots > 65535 || T < 1)
        return std::nullopt;
    // The MoE buffer: hg, hu [n_slots, n_ff] f32; q8 of x [T, n_embd] and of h; prefill: the
    // slots' weighted down rows [n_slots, n_embd] and the lists.
    MoeQ8Layout l{};
    l.prefill = T > kDecodeMaxTokens;
    const uint64_t nh = uint64_t(n_slots * n_ff) * 4;
    l.hu = align256(nh);
    l.xq = l.hu + align256(nh);
    l.hq = l.xq + align256(q8_act_bytes(uint64_t(T * n_embd)));
    l.ys = l.hq + align256(q8_act_bytes(uint64_t(n_slots * n_ff)));
    l.lists = l.ys + (l.prefill ? align256(uint64_t(n_slots * n_embd) * 4) : 0);
    l.end = l.lists + (l.prefill ? align256(lists_words(n_slots, n_local) * 4) : 0);
    return l;
}

bool VulkanBackend::record_moe_ffn_q8(const Graph& g, const Node& n) {
    const auto l = moe_q8_layout(g, n);
    if (!l) return false;
    const WeightDesc &gw = weight_desc(g, n.src[2]), &dw = weight_desc(g, n.src[4]);
    const uint32_t gt = shader_type(g, n.src[2]), dt = shader_type(g, n.src[4]);
    const int64_t T = g.tensor(n.out).rows(), k = g.tensor(n.src[1]).cols() / 2, n_slots = T * k;
    const int64_t n_embd = gw.ne[0], n_ff = gw.ne[1], n_local = gw.ne[2];
    const bool prefill = l->prefill;
    const uint64_t base = moe_h_.address, nh = uint64_t(n_slots * n_ff) * 4;
    auto region = [&](uint64_t off, uint64_t size) { return Ref{kMoeId, base + off, off, size}; };
    const Ref hg = region(0, nh), hu = region(l->hu, nh);
    const Ref xq = region(l->xq, q8_act_bytes(uint64_t(T * n_embd)));
    const Ref hq = region(l->hq, q8_act_bytes(uint64_t(n_slots * n_ff)));
    const uint64_t xds = base + l->xq + q8_values_bytes(uint64_t(T * n_embd));
    const uint64_t hds = base + l->hq + q8_values_bytes(uint64_t(n_slots * n_ff));
    const Ref x = ref(g, n.src[0]), route = ref(g, n.src[1]), y = ref(g, n.out);
    const Ref gate = ref(g, n.src[2]), up = ref(g, n.src[3]), down = ref(g, n.src[4]);

    // Prefill on cooperative matrices (matmul_coopmat.comp MOE) where the device runs its f16
    // prefill: moe_lists.comp then also lists each expert's tiles of 64 slots, and each of the
    // two matmuls below is one dispatch over them (gate and up of the tokens' f32 rows; down of
    // the gated rows, weighted).
    const bool coopmat = prefill && moe_coopmat_ && info_.f16_prefill_matmul &&
                         x.address % 16 == 0 &&  // matmul_coopmat's 16-byte activation loads
                         coopmat_pipeline_ok(gt) && coopmat_pipeline_ok(dt);
    Ref lists{};
    if (prefill) {
        lists = region(l->lists, lists_words(n_slots, n_local) * 4);
        const ListsPush lp{route.address, lists.address, u32(n_slots),
                           u32(n.i[0]),   u32(n_local),  coopmat ? 1u : 0u};
        dispatch("moe_lists", {}, &lp, sizeof lp, 1, 1, 1, {route}, {lists});
    }
    MoeCoopmatPush cp{};
    const auto tiles = u32(max_tiles(n_slots, n_local));
    if (coopmat) {
        cp.lists = lists.address;
        cp.route = route.address;
        cp.k = u32(k);
        cp.slots_at = u32(n_local + 1);
        cp.tiles_at = u32(n_local + 1 + n_slots);
        cp.mat = MatPush{gate.address,
                         x.address,
                         hg.address,
                         gate.address,
                         u32(n_embd),
                         u32(n_ff),
                         u32(T),
                         weight_row_bytes(gw),
                         0u};
        cp.w1 = up.address;
        cp.y1 = hu.address;
        cp.per_token = 1;
        cp.expert_bytes = u32(int64_t(weight_row_bytes(gw)) * n_ff);
        dispatch("matmul_coopmat", coopmat_spec(gt, true), &cp, sizeof cp, u32((n_ff + 127) / 128),
                 tiles, 2, {x, lists}, {hg, hu});
    } else {
        record_quantize_q8(x, x, x, xq, xds, uint64_t(T * n_embd), 0);
        const MoeQ8Push gp{gate.address, xq.address,           xds,
                           hg.address,   route.address,        up.address,
                           hu.address,   lists.address,        u32(n_embd),
                           u32(n_ff),    weight_row_bytes(gw), u32(k),
                           u32(n.i[0]),  u32(n_local),         kPerToken | (prefill ? kLists : 0u)};
        dispatch("moe_q8", {gt, kRowsWorkgroup, prefill ? kPrefillSlots : 1u, 0u}, &gp, sizeof gp,
                 u32(2 * n_ff / kRowsPerWorkgroup), u32(prefill ? n_local : n_slots), 1,
                 {xq, route, lists}, {hg, hu});
    }
    // The gated activation into hg (f32) and hq (its q8 activations; unused by the cooperative
    // matrices, which read hg).
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
    // Prefill: each slot's weighted down rows, then a token's slots summed.
    const Ref ys = region(l->ys, uint64_t(n_slots * n_embd) * 4);
    if (coopmat) {
        cp.mat = MatPush{
            down.address, hg.address,           ys.address, down.address, u32(n_ff), u32(n_embd),
            u32(n_slots), weight_row_bytes(dw), 0u};
        cp.w1 = down.address;
        cp.y1 = ys.address;
        cp.per_token = 0;
        cp.weighted = 1;
        cp.expert_bytes = u32(int64_t(weight_row_bytes(dw)) * n_embd);
        dispatch("matmul_coopmat", coopmat_spec(dt, true), &cp, sizeof cp,
                 u32((n_embd + 127) / 128), tiles, 1, {hg, lists, route}, {ys});
    } else {
        dp.y = ys.address;
        dp.flags = kWeighted | kLists;
        dispatch("moe_q8", {dt, kRowsWorkgroup, kPrefillSlots, 0u}, &dp, sizeof dp,
                 u32(n_embd / kRowsPerWorkgroup), u32(n_local), 1, {hq, route, lists}, {ys});
    }
    const uint64_t n_out = uint64_t(T * n_embd), groups = (n_out + 255) / 256;
    const SlotSumPush sp{ys.address,  route.address, y.address,   u32(int64_t(n_out)),
                         u32(n_embd), u32(k),        u32(n.i[0]), u32(n_local)};
    dispatch("moe_slot_sum", {}, &sp, sizeof sp, split_x(groups), 1, split_z(groups), {ys, route},
             {y});
    return true;
}

}  // namespace tandem::vk

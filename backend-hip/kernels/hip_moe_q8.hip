// The expert FFN over q8 activations (the decode matvec's items, hip_q8_rows.h), for expert
// weights of the q8 matvec's types and rows of whole 256-value groups:
// - the input x and the gated hidden rows h are quantised once (k_quantize_q8's layout);
// - decode (n_tok <= 8): k_moe_rows_q8 runs gate and up for each (token, slot) block, the
//   slot's expert read from the route on the device; k_moe_down_q8 sums a token's slots inside
//   one block (lane group g takes slots g, g + 8, ...; no atomics);
// - prefill: k_moe_lists sorts the slots by expert, then each k_moe_rows_q8 block takes one
//   expert's rows and runs its slots TM at a time, so an expert's weights are read once per TM
//   slots, not once per slot; the down projection writes each slot's weighted rows and
//   k_moe_slot_sum adds a token's slots in slot order.
// The element-wise kernels (hip_moe.hip) keep the other types and shapes.
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdint>

#include "hip_decode.h"
#include "hip_launch_overlap.h"
#include "hip_mma_tile.h"
#include "hip_moe_q8.h"
#include "hip_ops.h"
#include "hip_q8_rows.h"

namespace tandem::hip {
namespace {

constexpr int kMoeR = 4;        // output rows per block
constexpr int kMoeGroups = 2;   // lane groups of k_moe_rows_q8 (2048-input rows: an item each)
constexpr int kDownGroups = 8;  // lane groups of k_moe_down_q8: a slot each
constexpr int kPrefillTM = 8;   // slots per trip of a prefill block
constexpr int kListThreads = 1024;
constexpr int64_t kAlignBytes = 256;

__host__ __device__ inline int64_t align_up(int64_t v) {
    return (v + kAlignBytes - 1) / kAlignBytes * kAlignBytes;
}

__device__ inline Act act_row(const int8_t* q, const float2* ds, int n_in, int64_t row) {
    return {reinterpret_cast<const int4*>(q + row * n_in), ds + row * (n_in / kQ8Block)};
}

// The matrices of a k_moe_rows_q8 launch: gate and up (parts 0, 1: out[p][slot, rows]), or
// down (one part, each slot's rows times its route weight).
struct MoeRows {
    const uint8_t* w[2];  // [n_local][rows][n_in]
    float* out[2];        // [n_slots, rows]
    int64_t rows;         // rows a part has per expert
    int64_t stride;       // bytes a row
    int n_in;
    const int8_t* xq;  // q8 activations: of token slot / k (per_token) or of the slot
    const float2* xds;
    int per_token;
    int weighted;
    const float* route;  // [n_tok, 2k]
    int k, first;
    int64_t n_local;
    const int* offsets;  // prefill: [n_local + 1] into slots; decode: null
    const int* slots;    // prefill: the slots sorted by expert
};

// grid (parts * rows / R, decode: n_slots | prefill: n_local); G lane groups on R rows.
template <uint32_t TypeId, int TM, int G>
__global__ void __launch_bounds__(G* kLaneGroup) k_moe_rows_q8(MoeRows m) {
    constexpr DType T = DType(TypeId);
    constexpr int R = kMoeR, kThreads = G * kLaneGroup;
    __shared__ float part[G][R * TM];
    const int tid = int(threadIdx.x), g = tid / kLaneGroup, lane = tid % kLaneGroup;
    const int64_t first_row = int64_t(blockIdx.x) * R;
    const int p = first_row >= m.rows ? 1 : 0;
    const int64_t r0 = first_row - p * m.rows;
    grid_wait();  // the route and the activations come from the launches before
    grid_launch_dependents();
    int le, count, base = 0;
    int64_t slot0 = blockIdx.y;
    if (m.offsets) {
        le = int(blockIdx.y);
        base = m.offsets[le];
        count = m.offsets[le + 1] - base;
    } else {
        le = slot_expert(m.route, slot0, m.first, m.n_local);
        count = 1;
        if (le < 0) {  // another rank's expert: zeros, so h stays finite
            if (tid < R) m.out[p][slot0 * m.rows + r0 + tid] = 0.0f;
            return;
        }
    }
    const uint8_t* wr[R];
#pragma unroll
    for (int r = 0; r < R; ++r) wr[r] = m.w[p] + (int64_t(le) * m.rows + r0 + r) * m.stride;
    for (int c = 0; c < count; c += TM) {
        int64_t sl[TM];
        Act x[TM];
#pragma unroll
        for (int t = 0; t < TM; ++t) {
            const int i = c + t < count ? c + t : c;  // past the end: read slot c again
            sl[t] = m.offsets ? int64_t(m.slots[base + i]) : slot0;
            x[t] = act_row(m.xq, m.xds, m.n_in, m.per_token ? sl[t] / m.k : sl[t]);
        }
        float acc[R][TM];
        rows_dot<T, TM, R, kThreads, 2, typename Q8ExpertDot<T>::type>(wr, x, m.n_in, tid, acc);
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int t = 0; t < TM; ++t) {
                const float v = group_sum(acc[r][t]);
                if (lane == 0) part[g][r * TM + t] = v;
            }
        __syncthreads();
        if (tid < R * TM) {
            const int r = tid / TM, t = tid % TM;
            if (c + t < count) {
                float v = 0.0f;
#pragma unroll
                for (int i = 0; i < G; ++i) v += part[i][tid];
                if (m.weighted) v *= m.route[2 * sl[t] + 1];
                m.out[p][sl[t] * m.rows + r0 + r] = v;
            }
        }
        __syncthreads();  // part is written again by the next trip
    }
}

// grid (n_embd / R, n_tok); kDownGroups lane groups, group g on slots g, g + kDownGroups, ...
// of the token. y[t, o] = sum_j w_j down_{e_j}[o] . h[t k + j] over the slots held here.
template <uint32_t TypeId>
__global__ void __launch_bounds__(kDownGroups* kLaneGroup)
    k_moe_down_q8(const uint8_t* w, int64_t stride, int n_ff, int64_t n_embd, const int8_t* hq,
                  const float2* hds, const float* route, int k, int first, int64_t n_local,
                  float* y) {
    constexpr DType T = DType(TypeId);
    constexpr int R = kMoeR;
    __shared__ float part[kDownGroups][R];
    const int tid = int(threadIdx.x), g = tid / kLaneGroup, lane = tid % kLaneGroup;
    const int64_t o0 = int64_t(blockIdx.x) * R, t = blockIdx.y;
    grid_wait();
    grid_launch_dependents();
    float tot[R] = {};
    for (int j = g; j < k; j += kDownGroups) {  // uniform over the lane group
        const int64_t slot = t * k + j;
        const int le = slot_expert(route, slot, first, n_local);
        if (le < 0) continue;
        const float wgt = route[2 * slot + 1];
        const uint8_t* wr[R];
#pragma unroll
        for (int r = 0; r < R; ++r) wr[r] = w + (int64_t(le) * n_embd + o0 + r) * stride;
        const Act x[1] = {act_row(hq, hds, n_ff, slot)};
        float acc[R][1];
        rows_dot<T, 1, R, kLaneGroup, 2, typename Q8ExpertDot<T>::type>(wr, x, n_ff, lane, acc);
#pragma unroll
        for (int r = 0; r < R; ++r) tot[r] += wgt * acc[r][0];
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const float v = group_sum(tot[r]);
        if (lane == 0) part[g][r] = v;
    }
    __syncthreads();
    if (tid < R) {
        float v = 0.0f;
#pragma unroll
        for (int i = 0; i < kDownGroups; ++i) v += part[i][tid];
        y[t * n_embd + o0 + tid] = v;
    }
}

// One block: the slots held here grouped by expert (offsets [n_local + 1], slots). The order
// inside an expert's run follows the atomics; every slot's result is computed alone, so it
// does not change the output.
__global__ void __launch_bounds__(kListThreads)
    k_moe_lists(const float* route, int64_t n_slots, int k, int first, int64_t n_local,
                int* offsets, int* slots, int* tiles) {
    __shared__ int cursor[kMoeMaxExperts];
    const int tid = int(threadIdx.x);
    grid_wait();
    grid_launch_dependents();
    for (int64_t e = tid; e < n_local; e += kListThreads) cursor[e] = 0;
    __syncthreads();
    for (int64_t s = tid; s < n_slots; s += kListThreads) {
        const int le = slot_expert(route, s, first, n_local);
        if (le >= 0) atomicAdd(&cursor[le], 1);
    }
    __syncthreads();
    if (tid == 0) {
        int at = 0, n_tiles = 0;
        for (int64_t e = 0; e < n_local; ++e) {
            const int n = cursor[e];
            offsets[e] = at;
            cursor[e] = at;
            at += n;
            if (tiles)  // the matrix-unit path's tiles: 64 of the expert's slots each
                for (int s0 = 0; s0 < n; s0 += kMmaTileToks) {
                    tiles[1 + 2 * n_tiles] = int(e);
                    tiles[2 + 2 * n_tiles] = s0;
                    ++n_tiles;
                }
        }
        offsets[n_local] = at;
        if (tiles) tiles[0] = n_tiles;
    }
    __syncthreads();
    for (int64_t s = tid; s < n_slots; s += kListThreads) {
        const int le = slot_expert(route, s, first, n_local);
        if (le >= 0) slots[atomicAdd(&cursor[le], 1)] = int(s);
    }
}

// y[t, o] = sum over the token's slots held here of ys[t k + j, o] (already weighted), in slot
// order.
__global__ void k_moe_slot_sum(const float* ys, const float* route, int64_t n_tok, int k, int first,
                               int64_t n_local, int64_t n_embd, float* y) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    grid_wait();
    grid_launch_dependents();
    if (i >= n_tok * n_embd) return;
    const int64_t t = i / n_embd, o = i % n_embd;
    float v = 0.0f;
    for (int j = 0; j < k; ++j) {
        const int64_t slot = t * k + j;
        if (slot_expert(route, slot, first, n_local) >= 0) v += ys[slot * n_embd + o];
    }
    y[i] = v;
}

// Byte offsets of the path's pieces in the scratch (MoeFfnArgs::scratch).
struct Layout {
    int64_t hg, hu, xq, hq, ys, offsets, slots, tiles, end;
};

// Tiles of 64 slots the matrix-unit path may list: one partial tile per expert at most.
int64_t max_tiles(int64_t n_slots, int64_t n_local) {
    return (n_slots + kMmaTileToks - 1) / kMmaTileToks + n_local;
}
Layout layout(int64_t n_tok, int k, int64_t n_embd, int64_t n_ff, int64_t n_local) {
    const int64_t n_slots = n_tok * k;
    const bool prefill = n_tok > kMatvecMaxTokens;
    Layout l{};
    l.hg = 0;
    l.hu = l.hg + align_up(n_slots * n_ff * 4);
    l.xq = l.hu + align_up(n_slots * n_ff * 4);
    l.hq = l.xq + align_up(int64_t(q8_act_bytes(n_embd, n_tok)));
    l.ys = l.hq + align_up(int64_t(q8_act_bytes(n_ff, n_slots)));
    l.offsets = l.ys + (prefill ? align_up(n_slots * n_embd * 4) : 0);
    l.slots = l.offsets + (prefill ? align_up((n_local + 1) * 4) : 0);
    l.tiles = l.slots + (prefill ? align_up(n_slots * 4) : 0);
    l.end = l.tiles + (prefill ? align_up((1 + 2 * max_tiles(n_slots, n_local)) * 4) : 0);
    return l;
}

// A type the q8 matvec reads at all (rows of 2048 are whole groups of every layout).
bool q8_type(DType t) {
    return q8_matvec_supported(t, 8 * kQ8LayoutGroup, 1, 1);
}

void launch_rows(DType type, const MoeRows& m, int parts, unsigned grid_y, bool prefill,
                 hipStream_t s) {
    const dim3 grid(static_cast<unsigned>(parts * m.rows / kMoeR), grid_y),
        block(kMoeGroups * kLaneGroup);
    visit_q8_type(type, [&](auto P) {
        constexpr uint32_t id = type_id(decltype(P)::value);
        if (prefill)
            TANDEM_LAUNCH_OVERLAPPED((k_moe_rows_q8<id, kPrefillTM, kMoeGroups>), grid, block, 0, s,
                                     m);
        else
            TANDEM_LAUNCH_OVERLAPPED((k_moe_rows_q8<id, 1, kMoeGroups>), grid, block, 0, s, m);
    });
}

}  // namespace

bool moe_ffn_q8_supported(DType gate, DType up, DType down, int64_t n_embd, int64_t n_ff,
                          int64_t n_local) {
    return gate == up && q8_type(gate) && q8_type(down) && n_local <= kMoeMaxExperts &&
           q8_matvec_supported(gate, n_embd, 2 * n_ff, 1) &&
           q8_matvec_supported(down, n_ff, n_embd, 1) && n_ff % kMoeR == 0 && n_embd % kMoeR == 0;
}

uint64_t moe_ffn_q8_scratch_bytes(int64_t n_tok, int k, int64_t n_embd, int64_t n_ff,
                                  int64_t n_local) {
    return uint64_t(layout(n_tok, k, n_embd, n_ff, n_local).end);
}

namespace {

// Prefill's last launch (either path): a token's slots' weighted down rows ys summed into out.
void launch_slot_sum(const MoeFfnArgs& a, const float* ys, hipStream_t s) {
    const int64_t n = a.n_tok * a.n_embd;
    TANDEM_LAUNCH_OVERLAPPED(k_moe_slot_sum, dim3(static_cast<unsigned>((n + 255) / 256)),
                             dim3(256), 0, s, ys, a.route, a.n_tok, a.k, a.first_expert, a.n_local,
                             a.n_embd, a.out);
}

// Prefill on the matrix units (hip_moe_mma.hip), after k_moe_lists listed the tiles: gate and
// up of the tokens' f32 rows, the gated activation in f32, down of it (weighted), the slots'
// sum. False before anything is enqueued where a matrix's type or alignment is refused (the
// int8-dot kernels then run; the lists serve them as well).
bool moe_prefill_mma(const MoeFfnArgs& a, const Layout& l, uint8_t* base, hipStream_t s) {
    const int64_t n_slots = a.n_tok * a.k, tiles_max = max_tiles(n_slots, a.n_local);
    auto* hg = reinterpret_cast<float*>(base + l.hg);
    auto* hu = reinterpret_cast<float*>(base + l.hu);
    auto* ys = reinterpret_cast<float*>(base + l.ys);
    MoeMma gu{};
    gu.w[0] = static_cast<const uint8_t*>(a.gate);
    gu.w[1] = static_cast<const uint8_t*>(a.up);
    gu.out[0] = hg;
    gu.out[1] = hu;
    gu.rows = a.n_ff;
    gu.stride = static_cast<int64_t>(row_bytes(file_type(a.gate_type), uint64_t(a.n_embd)));
    gu.n_in = a.n_embd;
    gu.x = a.x;
    gu.per_token = 1;
    gu.k = a.k;
    gu.route = a.route;
    gu.offsets = reinterpret_cast<const int*>(base + l.offsets);
    gu.slots = reinterpret_cast<const int*>(base + l.slots);
    gu.tiles = reinterpret_cast<const int*>(base + l.tiles);
    MoeMma dn = gu;
    dn.w[0] = static_cast<const uint8_t*>(a.down);
    dn.w[1] = nullptr;
    dn.out[0] = ys;
    dn.out[1] = nullptr;
    dn.rows = a.n_embd;
    dn.stride = static_cast<int64_t>(row_bytes(file_type(a.down_type), uint64_t(a.n_ff)));
    dn.n_in = a.n_ff;
    dn.x = hg;
    dn.per_token = 0;
    dn.weighted = 1;
    // Both launches' conditions before the first: a refusal leaves nothing half done.
    const bool down_ok =
        mma_matmul_takes(file_type(a.down_type)) && a.n_ff % 32 == 0 && aligned(hg, 16);
    if (!down_ok || !launch_moe_mma(a.gate_type, gu, 2, tiles_max, s)) return false;
    launch_gated(a.act, hg, hu, n_slots * a.n_ff, hg, s);
    launch_require(launch_moe_mma(a.down_type, dn, 1, tiles_max, s), "moe_ffn",
                   "the down projection's matrix-unit launch refused after gate and up");
    launch_slot_sum(a, ys, s);
    return true;
}

}  // namespace

bool launch_moe_ffn_q8(const MoeFfnArgs& a, hipStream_t s) {
    if (!moe_ffn_q8_supported(a.gate_type, a.up_type, a.down_type, a.n_embd, a.n_ff, a.n_local))
        return false;
    const int64_t n_slots = a.n_tok * a.k;
    const bool prefill = a.n_tok > kMatvecMaxTokens;
    const Layout l = layout(a.n_tok, a.k, a.n_embd, a.n_ff, a.n_local);
    if (uint64_t(l.end) > a.scratch_floats * sizeof(float) || n_slots > kMaxGridY ||
        (prefill && a.n_local > kMaxGridY))
        return false;
    bool aligned = false;
    visit_q8_type(a.gate_type, [&](auto P) {
        aligned = q8_rows_aligned<decltype(P)::value>(a.gate, a.n_embd) &&
                  q8_rows_aligned<decltype(P)::value>(a.up, a.n_embd);
    });
    bool down_aligned = false;
    visit_q8_type(a.down_type, [&](auto P) {
        down_aligned = q8_rows_aligned<decltype(P)::value>(a.down, a.n_ff);
    });
    if (!aligned || !down_aligned) return false;
    auto* base = reinterpret_cast<uint8_t*>(a.scratch);
    auto* hg = reinterpret_cast<float*>(base + l.hg);
    auto* hu = reinterpret_cast<float*>(base + l.hu);
    auto* xq = reinterpret_cast<int8_t*>(base + l.xq);
    auto* hq = reinterpret_cast<int8_t*>(base + l.hq);
    const auto* xds = reinterpret_cast<const float2*>(xq + a.n_tok * a.n_embd);
    const auto* hds = reinterpret_cast<const float2*>(hq + n_slots * a.n_ff);
    int* offsets = prefill ? reinterpret_cast<int*>(base + l.offsets) : nullptr;
    int* slots = prefill ? reinterpret_cast<int*>(base + l.slots) : nullptr;
    int* tiles = prefill && a.mma ? reinterpret_cast<int*>(base + l.tiles) : nullptr;
    if (prefill)
        TANDEM_LAUNCH_OVERLAPPED(k_moe_lists, dim3(1), dim3(kListThreads), 0, s, a.route, n_slots,
                                 a.k, a.first_expert, a.n_local, offsets, slots, tiles);
    if (tiles && moe_prefill_mma(a, l, base, s)) return true;
    enqueue_quantize_q8(a.x, a.n_embd, a.n_tok, xq, s);
    const auto gate_stride =
        static_cast<int64_t>(row_bytes(file_type(a.gate_type), uint64_t(a.n_embd)));
    const auto down_stride =
        static_cast<int64_t>(row_bytes(file_type(a.down_type), uint64_t(a.n_ff)));
    MoeRows gu{};
    gu.w[0] = static_cast<const uint8_t*>(a.gate);
    gu.w[1] = static_cast<const uint8_t*>(a.up);
    gu.out[0] = hg;
    gu.out[1] = hu;
    gu.rows = a.n_ff;
    gu.stride = gate_stride;
    gu.n_in = int(a.n_embd);
    gu.xq = xq;
    gu.xds = xds;
    gu.per_token = 1;
    gu.route = a.route;
    gu.k = a.k;
    gu.first = a.first_expert;
    gu.n_local = a.n_local;
    gu.offsets = offsets;
    gu.slots = slots;
    const auto grid_y = static_cast<unsigned>(prefill ? a.n_local : n_slots);
    launch_rows(a.gate_type, gu, 2, grid_y, prefill, s);
    enqueue_gated_q8(a.act, hg, hu, a.n_ff, n_slots, hg, hq, s);
    if (!prefill) {
        const dim3 grid(static_cast<unsigned>(a.n_embd / kMoeR), static_cast<unsigned>(a.n_tok));
        visit_q8_type(a.down_type, [&](auto P) {
            TANDEM_LAUNCH_OVERLAPPED(
                (k_moe_down_q8<type_id(decltype(P)::value)>), grid, dim3(kDownGroups * kLaneGroup),
                0, s, static_cast<const uint8_t*>(a.down), down_stride, int(a.n_ff), a.n_embd, hq,
                hds, a.route, a.k, a.first_expert, a.n_local, a.out);
        });
        return true;
    }
    auto* ys = reinterpret_cast<float*>(base + l.ys);
    MoeRows dn = gu;
    dn.w[0] = static_cast<const uint8_t*>(a.down);
    dn.out[0] = ys;
    dn.rows = a.n_embd;
    dn.stride = down_stride;
    dn.n_in = int(a.n_ff);
    dn.xq = hq;
    dn.xds = hds;
    dn.per_token = 0;
    dn.weighted = 1;
    launch_rows(a.down_type, dn, 1, grid_y, true, s);
    launch_slot_sum(a, ys, s);
    return true;
}

}  // namespace tandem::hip

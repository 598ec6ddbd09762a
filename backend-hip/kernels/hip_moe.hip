// Mixture-of-experts kernels of the HIP backend: softmax top-k routing and the expert FFN over
// the experts this rank holds, with the CPU backend's semantics (core/src/backend/cpu).
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "hip_decode.h"
#include "hip_launch_overlap.h"
#include "hip_moe_q8.h"
#include "hip_ops.h"

namespace tandem::hip {
namespace {

constexpr int kMaxTopK = 32;
constexpr int kProjBlock = 128;

constexpr int kRouteGroups = 4;        // tokens per block, a 32-lane group each
constexpr int kRouteMaxExperts = 512;  // held in shared memory; more take k_moe_route_serial

// The (probability, expert) pair that wins: the larger probability, ties to the lower id.
__device__ inline void route_best(float& p, int& e) {
    for (int off = kLaneGroup / 2; off > 0; off >>= 1) {
        const float op = lane_xor(p, off, kLaneGroup);
        const int oe = lane_xor(e, off, kLaneGroup);
        if (op > p || (op == p && oe < e)) p = op, e = oe;
    }
}

// A 32-lane group per token: softmax over the router logits [n_tok, n_expert], then the k
// largest probabilities by repeated arg-max (ties to the lower expert id, as the CPU backend
// and torch.topk); route [n_tok, 2k] = (expert id, weight) pairs. Probabilities are formed as
// the CPU backend forms them (f32 exponentials, f64 sum, the quotient rounded to f32) so the
// chosen experts agree; only the f64 sum's order differs.
__global__ void __launch_bounds__(kRouteGroups* kLaneGroup)
    k_moe_route(const float* logits, int64_t n_tok, int64_t n_expert, int k, int normalize,
                float* route) {
    __shared__ float prob[kRouteGroups][kRouteMaxExperts];  // lane i's: experts i, i + 32, ...
    const int g = int(threadIdx.x) / kLaneGroup, lane = int(threadIdx.x) % kLaneGroup;
    const int64_t t = int64_t(blockIdx.x) * kRouteGroups + g;
    grid_wait();
    grid_launch_dependents();
    if (t >= n_tok) return;  // whole lane groups: no block barrier below
    const float* l = logits + t * n_expert;
    float mx = -INFINITY;
    for (int64_t e = lane; e < n_expert; e += kLaneGroup) mx = fmaxf(mx, l[e]);
    mx = group_max(mx);
    double sum = 0;
    for (int64_t e = lane; e < n_expert; e += kLaneGroup) sum += double(expf(l[e] - mx));
    sum = group_sum(sum);
    for (int64_t e = lane; e < n_expert; e += kLaneGroup)
        prob[g][e] = float(double(expf(l[e] - mx)) / sum);
    float wsum = 0.0f, my_p = 0.0f;  // lane j keeps pick j (k <= 32)
    int my_e = 0;
    for (int j = 0; j < k; ++j) {
        float bp = -1.0f;  // taken experts hold -1; probabilities are >= 0
        int be = INT_MAX;
        for (int64_t e = lane; e < n_expert; e += kLaneGroup) {
            const float p = prob[g][e];
            if (p > bp) bp = p, be = int(e);  // ascending ids: ties keep the lower
        }
        route_best(bp, be);  // every lane now holds the winner
        if (be == INT_MAX)
            be = 0;  // NaN probabilities only: an id, never an index past the end
        else if (lane == be % kLaneGroup)
            prob[g][be] = -1.0f;
        if (lane == j) my_p = bp, my_e = be;
        wsum += bp;
    }
    if (lane < k) {
        float* r = route + t * 2 * k + 2 * lane;
        r[0] = float(my_e);
        r[1] = normalize ? my_p / wsum : my_p;
    }
}

// One thread per token, for routers of more experts than k_moe_route holds.
__global__ void k_moe_route_serial(const float* logits, int64_t n_tok, int64_t n_expert, int k,
                                   int normalize, float* route) {
    const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= n_tok) return;
    const float* l = logits + t * n_expert;
    float mx = l[0];
    for (int64_t e = 1; e < n_expert; ++e) mx = fmaxf(mx, l[e]);
    double sum = 0;
    for (int64_t e = 0; e < n_expert; ++e) sum += double(expf(l[e] - mx));
    int chosen[kMaxTopK];
    float prob[kMaxTopK];
    float wsum = 0.0f;
    for (int j = 0; j < k; ++j) {
        int best = -1;
        float bp = 0.0f;
        for (int64_t e = 0; e < n_expert; ++e) {
            bool taken = false;
            for (int c = 0; c < j; ++c) taken = taken || chosen[c] == int(e);
            if (taken) continue;
            const float p = float(double(expf(l[e] - mx)) / sum);
            if (best < 0 || p > bp) best = int(e), bp = p;
        }
        chosen[j] = best;
        prob[j] = bp;
        wsum += bp;
    }
    float* r = route + t * 2 * k;
    for (int j = 0; j < k; ++j) {
        r[2 * j] = float(chosen[j]);
        r[2 * j + 1] = normalize ? prob[j] / wsum : prob[j];
    }
}

// grid (n_ff, n_tok * k); block kProjBlock. h[slot, f] = W_e[f, :] . x[t, :] for the expert e of
// the slot (zero when it is not held here). W [n_local][n_ff][n_embd] in type T.
template <uint32_t TypeId>
__global__ void k_moe_proj(const void* w, int64_t n_embd, int64_t row_stride, int64_t n_ff,
                           int64_t n_local, const float* x, const float* route, int k, int first,
                           float* h) {
    constexpr DType T = DType(TypeId);  // a number: see type_id() (hip_packed.h)
    __shared__ float sh[kProjBlock];
    const int64_t f = blockIdx.x, slot = blockIdx.y, t = slot / k;
    const int le = slot_expert(route, slot, first, n_local);
    float acc = 0.0f;
    if (le >= 0) {  // uniform over the block: the reduction below is reached by every thread
        const auto* row = static_cast<const uint8_t*>(w) + (int64_t(le) * n_ff + f) * row_stride;
        const float* xr = x + t * n_embd;
        for (int64_t i = threadIdx.x; i < n_embd; i += kProjBlock)
            acc += load_weight<T>(row, i) * xr[i];
    }
    acc = block_sum<kProjBlock>(acc, sh);
    if (threadIdx.x == 0) h[slot * n_ff + f] = acc;
}

// grid (n_embd, n_tok); block kProjBlock. y[t, o] = sum_j w_j * (down_e[o, :] . h[t*k + j, :])
// over the token's experts held here (the sum over slots stays in the block: no atomics).
template <uint32_t TypeId>
__global__ void k_moe_down(const void* w, int64_t n_ff, int64_t row_stride, int64_t n_embd,
                           int64_t n_local, const float* h, const float* route, int k, int first,
                           float* y) {
    constexpr DType T = DType(TypeId);  // a number: see type_id() (hip_packed.h)
    __shared__ float sh[kProjBlock];
    const int64_t o = blockIdx.x, t = blockIdx.y;
    float acc = 0.0f;
    for (int j = 0; j < k; ++j) {
        const int le = slot_expert(route, t * k + j, first, n_local);
        if (le < 0) continue;
        const float wgt = route[t * 2 * k + 2 * j + 1];
        const auto* row = static_cast<const uint8_t*>(w) + (int64_t(le) * n_embd + o) * row_stride;
        const float* hr = h + (t * k + j) * n_ff;
        float d = 0.0f;
        for (int64_t i = threadIdx.x; i < n_ff; i += kProjBlock)
            d += load_weight<T>(row, i) * hr[i];
        acc += wgt * d;
    }
    acc = block_sum<kProjBlock>(acc, sh);
    if (threadIdx.x == 0) y[t * n_embd + o] = acc;
}

void launch_proj(DType type, const void* w, int64_t n_embd, int64_t n_ff, int64_t n_local,
                 const float* x, const float* route, int64_t n_slots, int k, int first, float* h,
                 hipStream_t s) {
    const dim3 grid(static_cast<unsigned>(n_ff), static_cast<unsigned>(n_slots)), block(kProjBlock);
    const auto stride =
        static_cast<int64_t>(row_bytes(file_type(type), static_cast<uint64_t>(n_embd)));
    if (visit_packed(type, [&](auto P) {
            hipLaunchKernelGGL(k_moe_proj<type_id(decltype(P)::value)>, grid, block, 0, s, w,
                               n_embd, stride, n_ff, n_local, x, route, k, first, h);
        }))
        return;
    switch (type) {
#define TANDEM_CASE(T)                                                                          \
    case DType::T:                                                                              \
        hipLaunchKernelGGL(k_moe_proj<type_id(DType::T)>, grid, block, 0, s, w, n_embd, stride, \
                           n_ff, n_local, x, route, k, first, h);                               \
        break;
        TANDEM_HIP_WEIGHT_TYPES(TANDEM_CASE)
#undef TANDEM_CASE
        default:
            launch_require(false, "moe_ffn", "weight type " + std::string(dtype_name(type)));
    }
}

void launch_down(DType type, const void* w, int64_t n_ff, int64_t n_embd, int64_t n_local,
                 const float* h, const float* route, int64_t n_tok, int k, int first, float* y,
                 hipStream_t s) {
    const dim3 grid(static_cast<unsigned>(n_embd), static_cast<unsigned>(n_tok)), block(kProjBlock);
    const auto stride =
        static_cast<int64_t>(row_bytes(file_type(type), static_cast<uint64_t>(n_ff)));
    if (visit_packed(type, [&](auto P) {
            hipLaunchKernelGGL(k_moe_down<type_id(decltype(P)::value)>, grid, block, 0, s, w, n_ff,
                               stride, n_embd, n_local, h, route, k, first, y);
        }))
        return;
    switch (type) {
#define TANDEM_CASE(T)                                                                        \
    case DType::T:                                                                            \
        hipLaunchKernelGGL(k_moe_down<type_id(DType::T)>, grid, block, 0, s, w, n_ff, stride, \
                           n_embd, n_local, h, route, k, first, y);                           \
        break;
        TANDEM_HIP_WEIGHT_TYPES(TANDEM_CASE)
#undef TANDEM_CASE
        default:
            launch_require(false, "moe_ffn", "weight type " + std::string(dtype_name(type)));
    }
}

}  // namespace

int moe_max_top_k() {
    return kMaxTopK;
}

void launch_moe_route(const float* logits, int64_t n_tok, int64_t n_expert, int k, bool normalize,
                      float* route, hipStream_t s) {
    launch_require(logits && route, "moe_route", "null tensor");
    launch_require(k >= 1 && k <= kMaxTopK && k <= n_expert, "moe_route",
                   "k=" + std::to_string(k) + " must be 1.." + std::to_string(kMaxTopK) +
                       " and at most n_expert=" + std::to_string(n_expert));
    launch_require(n_tok >= 0 && n_tok <= kMaxGridX * 64, "moe_route",
                   std::to_string(n_tok) + " tokens");
    if (n_tok == 0) return;
    if (n_expert > kRouteMaxExperts) {
        hipLaunchKernelGGL(k_moe_route_serial, dim3(static_cast<unsigned>((n_tok + 63) / 64)),
                           dim3(64), 0, s, logits, n_tok, n_expert, k, normalize ? 1 : 0, route);
        return;
    }
    TANDEM_LAUNCH_OVERLAPPED(k_moe_route,
                             dim3(static_cast<unsigned>((n_tok + kRouteGroups - 1) / kRouteGroups)),
                             dim3(kRouteGroups * kLaneGroup), 0, s, logits, n_tok, n_expert, k,
                             normalize ? 1 : 0, route);
}

uint64_t moe_ffn_scratch_floats(int64_t n_tok, int k, int64_t n_embd, int64_t n_ff,
                                int64_t n_local) {
    const uint64_t element_wise = 2 * uint64_t(n_tok) * uint64_t(k) * uint64_t(n_ff);
    const uint64_t q8 = (moe_ffn_q8_scratch_bytes(n_tok, k, n_embd, n_ff, n_local) + 3) / 4;
    return std::max(element_wise, q8);
}

void launch_moe_ffn(const MoeFfnArgs& a, hipStream_t s) {
    launch_require(a.x && a.route && a.gate && a.up && a.down && a.out && a.scratch, "moe_ffn",
                   "null tensor");
    launch_require(a.k >= 1 && a.k <= kMaxTopK, "moe_ffn", "k=" + std::to_string(a.k));
    launch_require(a.n_embd > 0 && a.n_ff > 0 && a.n_local > 0, "moe_ffn", "empty expert weights");
    launch_require(a.n_embd <= kMaxGridX && a.n_ff <= kMaxGridX, "moe_ffn", "rows too many");
    launch_require(a.n_tok >= 0 && a.n_tok * a.k <= kMaxGridY, "moe_ffn",
                   std::to_string(a.n_tok) + " tokens x k=" + std::to_string(a.k) +
                       " slots exceed the grid (" + std::to_string(kMaxGridY) + ")");
    launch_require(a.act == 0 || a.act == 1, "moe_ffn", "activation " + std::to_string(a.act));
    launch_require(a.scratch_floats >= 2 * uint64_t(a.n_tok * a.k * a.n_ff), "moe_ffn",
                   "scratch too small");
    if (a.n_tok == 0) return;
    if (a.q8 && launch_moe_ffn_q8(a, s)) return;
    const int64_t n_slots = a.n_tok * a.k, nh = n_slots * a.n_ff;
    float* hg = a.scratch;  // [n_slots, n_ff]
    float* hu = a.scratch + nh;
    launch_proj(a.gate_type, a.gate, a.n_embd, a.n_ff, a.n_local, a.x, a.route, n_slots, a.k,
                a.first_expert, hg, s);
    launch_proj(a.up_type, a.up, a.n_embd, a.n_ff, a.n_local, a.x, a.route, n_slots, a.k,
                a.first_expert, hu, s);
    launch_gated(a.act, hg, hu, nh, hg, s);
    launch_down(a.down_type, a.down, a.n_ff, a.n_embd, a.n_local, hg, a.route, a.n_tok, a.k,
                a.first_expert, a.out, s);
}

}  // namespace tandem::hip

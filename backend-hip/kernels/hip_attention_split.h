#pragma once
// Split-K decode attention (flash-decoding), pass 1, latency first (as the Vulkan backend's
// attention_split.comp): block (split s, block of HB query heads of one GQA group, token t) of
// 128 threads attends its heads over the s-th share of the cached positions, so each K/V row is
// read once for those heads. A cluster of 8 consecutive lanes takes one position at a time (lane
// i holds head dims DPL*i .. DPL*i + DPL-1 of q, K and V: 16-byte loads), the score is summed
// across the cluster with three xor shuffles and every lane keeps the online softmax (m, l,
// acc) of its dims in registers: no barrier in the position loop. The 16 clusters merge once
// at the end through shared memory, all heads at once. Then the splits merge: in the last
// split block to finish (a ticket per head block), or in k_attention_combine (no tickets).
#include <cstdint>

#include "hip_attention_split_merge.h"
#include "hip_blocks.h"
#include "hip_decode.h"
#include "hip_launch_overlap.h"

namespace tandem::hip {

inline constexpr int kSplitThreads = kMergeThreads, kSplitCluster = 8;
inline constexpr int kSplitMinShare = 16;   // positions per split at least
inline constexpr int kSplitTickets = 8192;  // merge tickets (tokens x head blocks) at most

// Sum over the calling lane's cluster. Only the cluster is sure to be converged (the clusters of
// a warp leave the position loop at different trips), so the CUDA mask names just its lanes.
__device__ inline float cluster_sum(float v) {
#if defined(TANDEM_HIP_ON_CUDA)
    const unsigned mask = 0xFFu << (threadIdx.x % 32u & ~unsigned(kSplitCluster - 1));
#endif
#pragma unroll
    for (int off = 1; off < kSplitCluster; off <<= 1) {
#if defined(TANDEM_HIP_ON_CUDA)
        v += __shfl_xor_sync(mask, v, off, kSplitCluster);
#else
        v += __shfl_xor(v, off, kSplitCluster);
#endif
    }
    return v;
}

// DPL elements of a cache row from element e0 (16-byte aligned) into r.
template <int DPL, bool F16>
__device__ inline void load_dims(const void* c, int64_t e0, float* r) {
    if constexpr (F16) {
        const auto* p = reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(c) + e0);
#pragma unroll
        for (int i = 0; i < DPL / 8; ++i) {
            const uint4 w = p[i];
            const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                r[8 * i + 2 * j] = f16_fast(u[j] & 0xffffu);
                r[8 * i + 2 * j + 1] = f16_fast(u[j] >> 16);
            }
        }
    } else {
        const auto* p = reinterpret_cast<const float4*>(static_cast<const float*>(c) + e0);
#pragma unroll
        for (int i = 0; i < DPL / 4; ++i) {
            const float4 w = p[i];
            r[4 * i] = w.x, r[4 * i + 1] = w.y, r[4 * i + 2] = w.z, r[4 * i + 3] = w.w;
        }
    }
}

// Where a decode split block stands (grid (n_split, n_kv_head * ceil(group / HB), n_tokens)):
// its KV head, first query head and live heads (of HB), token, the number of splits with
// positions and its own run of positions [begin, end) (empty past n_active). The splits share
// the token's window evenly, kSplitMinShare positions each at least.
struct SplitRun {
    int64_t kvh, h0, t, begin, end;
    int nh, n_active;
};
template <int HB>
__device__ inline SplitRun split_run(int64_t n_head, int64_t n_kv_head, int64_t window,
                                     const int32_t* n_past) {
    const int split = int(blockIdx.x), n_split = int(gridDim.x);
    SplitRun r;
    const int64_t group = n_head / n_kv_head, blocks = (group + HB - 1) / HB;
    r.kvh = blockIdx.y / blocks;
    r.h0 = r.kvh * group + (blockIdx.y % blocks) * HB;
    r.nh = int(group - (r.h0 - r.kvh * group) < HB ? group - (r.h0 - r.kvh * group) : HB);
    r.t = blockIdx.z;
    const int64_t pos = int64_t(*n_past) + r.t;
    const int64_t lo = window > 0 && pos + 1 > window ? pos + 1 - window : 0;
    const int64_t len = pos + 1 - lo;
    int64_t share = (len + n_split - 1) / n_split;
    if (share < kSplitMinShare) share = kSplitMinShare;
    r.n_active = int((len + share - 1) / share);
    r.begin = lo + split * share < pos + 1 ? lo + split * share : pos + 1;
    r.end = r.begin + share < pos + 1 ? r.begin + share : pos + 1;
    return r;
}

// grid (n_split, n_kv_head * ceil(group / HB), n_tokens); head_dim = 8 * DPL.
// tickets null: every split writes its partial (empty ones m = -inf) for k_attention_combine.
// tickets (kSplitTickets counters, zero, indexed by token and head block): only the splits with
// positions run; a lone split writes the output itself, else each writes its partial, takes a
// ticket, and the last one merges the partials of its heads (no combine launch: 3.8 us a layer of
// an 8B decode on an H200, docs/hip.md) and sets the counter back to zero. out / q8 as
// k_attention_combine's.
template <int DPL, int HB, bool F16>
__global__ void __launch_bounds__(kSplitThreads)
    k_attention_split(const float* q, int64_t n_head, int64_t n_kv_head, int64_t window,
                      float scale, float softcap, const void* kc, const void* vc,
                      const int32_t* n_past, float* part_ml, float* part_acc, int* tickets,
                      float* out, int8_t* q8s, float2* q8d) {
    constexpr int hd = 8 * DPL, NCL = kSplitThreads / kSplitCluster;
    static_assert(HB * NCL <= kSplitThreads && HB * kLaneGroup <= kSplitThreads &&
                  (HB * NCL) % kLaneGroup == 0 && hd % kLaneGroup == 0);
    __shared__ float cm[HB][NCL], cw[HB][NCL], cl_sum[HB][NCL];
    __shared__ float cacc[HB][NCL][hd];   // the clusters' accumulators
    __shared__ float hm[HB], hl[HB];      // per head: the block's max and sum
    __shared__ float sw[HB][kLaneGroup];  // the last block: the splits' weights e^(m_s - M)
    __shared__ int last;
    grid_wait();
    grid_launch_dependents();
    const int tid = int(threadIdx.x), cl = tid / kSplitCluster, ln = tid % kSplitCluster;
    const int d0 = ln * DPL, split = int(blockIdx.x), n_split = int(gridDim.x);
    const SplitRun run = split_run<HB>(n_head, n_kv_head, window, n_past);
    if (tickets && split >= run.n_active) return;
    const int64_t kvh = run.kvh, h0 = run.h0, t = run.t, begin = run.begin, end = run.end;
    const int nh = run.nh, n_active = run.n_active;
    const int64_t kv_width = n_kv_head * hd;

    float qr[HB][DPL], acc[HB][DPL], m[HB], l[HB];
#pragma unroll
    for (int g = 0; g < HB; ++g) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
        const float* qh = q + (t * n_head + h0 + (g < nh ? g : nh - 1)) * hd + d0;
#pragma unroll
        for (int i = 0; i < DPL; ++i) {
            qr[g][i] = qh[i];
            acc[g][i] = 0.0f;
        }
    }
    // Clusters take positions begin + cl, begin + cl + NCL, ...: a cluster's 8 lanes are all in
    // the loop or all out of it, so the shuffles see their whole cluster.
    for (int64_t j = begin + cl; j < end; j += NCL) {
        const int64_t kb = j * kv_width + kvh * hd + d0;
        float kr[DPL], vr[DPL];
        load_dims<DPL, F16>(kc, kb, kr);
        load_dims<DPL, F16>(vc, kb, vr);
#pragma unroll
        for (int g = 0; g < HB; ++g) {
            float s = 0.0f;
#pragma unroll
            for (int i = 0; i < DPL; ++i) s += qr[g][i] * kr[i];
            s = cluster_sum(s) * scale;
            if (softcap > 0) s = softcap * tanhf(s / softcap);
            const float m_new = fmaxf(m[g], s);
            const float f = expf(m[g] - m_new), e = expf(s - m_new);
            m[g] = m_new;
            l[g] = l[g] * f + e;
#pragma unroll
            for (int i = 0; i < DPL; ++i) acc[g][i] = acc[g][i] * f + e * vr[i];
        }
    }
    // Merge the clusters, every head at once: M = max m, L = sum l e^(m - M), acc = sum acc
    // e^(m - M) (clusters without positions weigh nothing; a split without any gives M = -inf).
#pragma unroll
    for (int g = 0; g < HB; ++g) {
        if (ln == 0) cm[g][cl] = m[g], cl_sum[g][cl] = l[g];
#pragma unroll
        for (int i = 0; i < DPL; ++i) cacc[g][cl][d0 + i] = acc[g][i];
    }
    __syncthreads();
    if (tid < HB * NCL) {  // thread (head g, cluster c): whole lane groups, NCL lanes a head
        const int g = tid / NCL, c = tid % NCL;
        float M = -INFINITY;
#pragma unroll
        for (int k = 0; k < NCL; ++k) M = fmaxf(M, cm[g][k]);
        const float w = cm[g][c] == -INFINITY ? 0.0f : expf(cm[g][c] - M);
        cw[g][c] = w;
        float L = cl_sum[g][c] * w;
#pragma unroll
        for (int off = NCL / 2; off > 0; off >>= 1) L += lane_xor(L, off, NCL);
        if (c == 0) hm[g] = M, hl[g] = L;
    }
    __syncthreads();
    // Thread tid takes (head, dim) pairs tid, tid + 128, ...: a lane group holds 32 consecutive
    // dims of one head (a q8 block of the output).
    constexpr int kPairs = HB * hd / kSplitThreads;
    static_assert(kPairs * kSplitThreads == HB * hd);
    float a[kPairs];
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
        const int idx = tid + k * kSplitThreads, g = idx / hd, d = idx % hd;
        float v = 0.0f;
#pragma unroll
        for (int c = 0; c < NCL; ++c) v += cacc[g][c][d] * cw[g][c];
        a[k] = v;
    }
    finish_split_block<HB, hd>(a, hm, hl, t * n_head + h0, nh, split, n_split, n_active, part_ml,
                               part_acc, tickets ? tickets + t * gridDim.y + blockIdx.y : nullptr,
                               last, out, q8s, q8d, sw, hl);
}

}  // namespace tandem::hip

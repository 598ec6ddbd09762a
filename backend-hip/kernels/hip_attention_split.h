#pragma once
// Split-K decode attention (flash-decoding), pass 1, latency first (as the Vulkan backend's
// attention_split.comp): block (split s, block of HB query heads of one GQA group, token t) of
// 128 threads attends its heads over the s-th share of the cached positions, so each K/V row is
// read once for those heads. A cluster of 8 consecutive lanes takes one position at a time (lane
// i holds head dims DPL*i .. DPL*i + DPL-1 of q, K and V: 16-byte loads), the score is summed
// across the cluster with three xor shuffles and every lane keeps the online softmax (m, l,
// acc) of its dims in registers: no barrier in the position loop. The 16 clusters merge once
// at the end through shared memory. Writes per (token, head, split) the unnormalised partial
// (acc[head_dim], m, l); empty shares write m = -inf. The last split block of a (token, head
// block) to finish merges them (a ticket counter per (token, head block)): no second launch,
// whose fixed cost was ~40 % of the decode attention at short contexts (H200, docs/hip.md).
#include <cstdint>

#include "hip_blocks.h"
#include "hip_decode.h"

namespace tandem::hip {

inline constexpr int kSplitThreads = 128, kSplitCluster = 8;
inline constexpr int kMaxSplitsCombined = 64;  // attention_combine_row's shared weights
inline constexpr int kSplitMinShare = 16;      // positions per split at least

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

// Merges the n_split partial softmaxes of row r (token t, head h: t * n_head + h), by the whole
// block of Threads (a multiple of 32): out = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M),
// M = max_s m_s; empty runs (m_s = -inf) weigh nothing. The run holding the token's own
// position is never empty, so M is finite. The weights e^(m_s - M) are computed once per split
// (shared), then every thread sums its dims over the splits with its loads independent. q8 (or
// null; hd % 32 == 0, rows of a multiple of 256 values: hip_q8_layout.h): the output is also
// left as q8 activations of the [n_tokens, n_head * hd] rows for the next matmul. The partials
// are read volatile: other blocks wrote them during this launch.
template <int Threads>
__device__ inline void attention_combine_row(int64_t r, int64_t hd, int n_split,
                                             const float* part_ml, const float* part_acc,
                                             float* out, int8_t* q8s, float2* q8d) {
    __shared__ float wt[kMaxSplitsCombined];
    __shared__ float inv_l;
    const volatile float* ml = part_ml + 2 * r * n_split;
    if (threadIdx.x < 32) {  // one warp (or half a wave64) finds M and L
        float M = -INFINITY;
        for (int s = int(threadIdx.x); s < n_split; s += 32) M = fmaxf(M, ml[2 * s]);
        M = group_max(M);
        float L = 0.0f;
        for (int s = int(threadIdx.x); s < n_split; s += 32) {
            const float m = ml[2 * s];
            const float e = m != -INFINITY ? expf(m - M) : 0.0f;
            wt[s] = e;
            L += ml[2 * s + 1] * e;
        }
        L = group_sum(L);
        if (threadIdx.x == 0) inv_l = 1.0f / L;
    }
    __syncthreads();
    const int64_t n = (hd + Threads - 1) / Threads * Threads;  // every lane of a group reaches q8
    for (int64_t i = threadIdx.x; i < n; i += Threads) {
        float v = 0.0f;
        if (i < hd) {
            const volatile float* a = part_acc + r * n_split * hd + i;
#pragma unroll 8
            for (int s = 0; s < n_split; ++s)
                if (wt[s] != 0.0f) v += a[int64_t(s) * hd] * wt[s];
            v *= inv_l;
            out[r * hd + i] = v;
        }
        if (q8s) q8_store_group(v, r * hd + i, i < hd, q8s, q8d);
    }
    __syncthreads();  // wt and inv_l are rewritten for the next row
}

// grid (n_split, n_kv_head * ceil(group / HB), n_tokens); head_dim = 8 * DPL. tickets
// [n_tokens, gridDim.y], zero between launches (the merging block puts its back to zero).
template <int DPL, int HB, bool F16>
__global__ void __launch_bounds__(kSplitThreads)
    k_attention_split(const float* q, int64_t n_head, int64_t n_kv_head, int64_t window,
                      float scale, float softcap, const void* kc, const void* vc,
                      const int32_t* n_past, float* part_ml, float* part_acc, unsigned* tickets,
                      float* out, int8_t* q8s, float2* q8d) {
    constexpr int hd = 8 * DPL, NCL = kSplitThreads / kSplitCluster;
    __shared__ float cm[NCL * HB], cl_sum[NCL * HB];
    __shared__ float cacc[NCL * hd];  // one head's accumulators, per cluster
    const int tid = int(threadIdx.x), cl = tid / kSplitCluster, ln = tid % kSplitCluster;
    const int d0 = ln * DPL, split = int(blockIdx.x), n_split = int(gridDim.x);
    const int64_t group = n_head / n_kv_head, blocks = (group + HB - 1) / HB;
    const int64_t kvh = blockIdx.y / blocks, h0 = kvh * group + (blockIdx.y % blocks) * HB;
    const int nh = int(group - (h0 - kvh * group) < HB ? group - (h0 - kvh * group) : HB);
    const int64_t t = blockIdx.z, pos = int64_t(*n_past) + t;
    const int64_t lo = window > 0 && pos + 1 > window ? pos + 1 - window : 0;
    const int64_t len = pos + 1 - lo;
    int64_t share = (len + n_split - 1) / n_split;
    if (share < kSplitMinShare) share = kSplitMinShare;
    const int64_t begin = lo + split * share < pos + 1 ? lo + split * share : pos + 1;
    const int64_t end = begin + share < pos + 1 ? begin + share : pos + 1;
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
    // Merge the clusters: M = max m, L = sum l e^(m - M), acc = sum acc e^(m - M).
    if (ln == 0)
#pragma unroll
        for (int g = 0; g < HB; ++g) {
            cm[cl * HB + g] = m[g];
            cl_sum[cl * HB + g] = l[g];
        }
    __syncthreads();
#pragma unroll
    for (int g = 0; g < HB; ++g) {
        if (g >= nh) continue;  // uniform over the block: its barriers are reached by all
        float M = -INFINITY;
        for (int c = 0; c < NCL; ++c) M = fmaxf(M, cm[c * HB + g]);
        // Clusters without positions weigh nothing (and a share without any gives M = -inf).
        const float f = m[g] == -INFINITY ? 0.0f : expf(m[g] - M);
#pragma unroll
        for (int i = 0; i < DPL; ++i) cacc[cl * hd + d0 + i] = acc[g][i] * f;
        __syncthreads();
        const int64_t row = (t * n_head + h0 + g) * n_split + split;
        for (int d = tid; d < hd; d += kSplitThreads) {
            float a = 0.0f;
            for (int c = 0; c < NCL; ++c) a += cacc[c * hd + d];
            part_acc[row * hd + d] = a;
        }
        if (tid == 0) {
            float L = 0.0f;
            for (int c = 0; c < NCL; ++c)
                if (cm[c * HB + g] != -INFINITY) L += cl_sum[c * HB + g] * expf(cm[c * HB + g] - M);
            part_ml[2 * row] = M;
            part_ml[2 * row + 1] = L;
        }
        __syncthreads();  // cacc is rewritten for the next head
    }
    // The last of the n_split blocks of this (token, head block) merges its heads.
    __shared__ bool last;
    __threadfence();  // this block's partials are visible before its ticket is
    const int64_t ticket = t * gridDim.y + blockIdx.y;
    if (tid == 0) last = atomicAdd(&tickets[ticket], 1u) == unsigned(n_split - 1);
    __syncthreads();
    if (!last) return;
    __threadfence();  // the other blocks' partials, read after their tickets
    for (int g = 0; g < nh; ++g)
        attention_combine_row<kSplitThreads>(t * n_head + h0 + g, hd, n_split, part_ml, part_acc,
                                             out, q8s, q8d);
    if (tid == 0) tickets[ticket] = 0;  // ready for the next launch (graphs replay this one)
}

}  // namespace tandem::hip

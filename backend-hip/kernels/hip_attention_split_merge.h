#pragma once
// The last split block's merge of a head block's partial softmaxes, shared by the decode
// attention kernels that take merge tickets (k_attention_split, k_attention_split_mma): HB query
// heads of head_dim HD, their partials as k_attention_combine reads them, summed in its order
// with its arithmetic (the same bits as the combine launch).
#include <cstdint>

#include "hip_decode.h"

namespace tandem::hip {

inline constexpr int kMergeThreads = 128;  // the calling block's threads

// Coherent load of what another block of this grid wrote (before a __threadfence and a ticket):
// from L2, past this SM's L1.
__device__ inline float load_l2(const float* p) {
#if defined(TANDEM_HIP_ON_CUDA)
    return __ldcg(p);
#else
    return *static_cast<const volatile float*>(p);
#endif
}

__device__ inline float4 load_l2_4(const float* p) {  // p 16-byte aligned
#if defined(TANDEM_HIP_ON_CUDA)
    return __ldcg(reinterpret_cast<const float4*>(p));
#else
    return make_float4(load_l2(p), load_l2(p + 1), load_l2(p + 2), load_l2(p + 3));
#endif
}

// After a block's partials are written: whether it is the last of the n_active splits of its
// head block to finish, which merges (threadFenceReduction's pattern: every writer fences, one
// thread takes the ticket, the taker reads past L1). The counter goes back to zero for the next
// launch. Every thread calls it; last: the block's shared flag.
__device__ inline bool last_split_block(int* ticket, int n_active, int& last) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(ticket, 1) == n_active - 1;
        if (last) atomicExch(ticket, 0);
    }
    __syncthreads();
    if (!last) return false;
    __threadfence();
    return true;
}

// Called by every thread of the block that took the last ticket (last_split_block): heads
// head0 .. head0 + nh - 1 (output rows), n_active splits with positions out of n_split rows of
// partials a head. sw / rl: the block's shared scratch.
//
// Thread tid takes 4 consecutive dims of one head (16-byte loads), kMergeThreads quads a pass.
// Every trip to L2 here is on the step's critical path, so the loads go out ahead of their use:
// the first two chunks of kChunk splits' partials with the splits' (m, l) pairs, then each
// chunk's loads two chunks before it is added (five dependent trips were two: H200, 8B at a
// 512-token context, 13.06 -> 12.26 us a call; docs/hip.md, session 36). Loads past the last
// split with positions read the last one again (weight 0): no branch between them. At 32
// splits a load-add chain was 32 L2 trips (4000 positions 402 tok/s against 428 with the
// combine launch; 8 scalar loads a pair at once 420, 32 at once 360: docs/hip.md).
template <int HB, int HD>
__device__ inline void merge_split_partials(int64_t head0, int nh, int n_split, int n_active,
                                            const float* part_ml, const float* part_acc, float* out,
                                            int8_t* q8s, float2* q8d, float (&sw)[HB][kLaneGroup],
                                            float (&rl)[HB]) {
    constexpr int kQuads = HB * HD / 4, kChunk = 8;
    constexpr int kPasses = (kQuads + kMergeThreads - 1) / kMergeThreads;
    static_assert(kQuads % kLaneGroup == 0);
    const int tid = int(threadIdx.x);
    // The live heads' quads, in whole lane groups (q8_store4 and the shuffles want all 32
    // lanes; quads of heads past nh load head 0's and store nothing): a block of 16 heads with a
    // GQA group of 4 sums a quarter of them.
    const int quads = (nh * (HD / 4) + kLaneGroup - 1) / kLaneGroup * kLaneGroup;
    const int heads = (quads + HD / 4 - 1) / (HD / 4);  // nh, or the head those quads end in
    auto load_chunk = [&](int idx, int s0, float4(&x)[kChunk]) {
        const int g = idx / (HD / 4), e0 = 4 * (idx % (HD / 4));
        const float* pa = part_acc + (head0 + (g < nh ? g : 0)) * n_split * HD + e0;
#pragma unroll
        for (int j = 0; j < kChunk; ++j) {
            const int sj = s0 + j < n_active ? s0 + j : n_active - 1;
            x[j] = load_l2_4(pa + int64_t(sj) * HD);
        }
    };
    float4 xa[kChunk], xb[kChunk];
    if (tid < quads) {
        load_chunk(tid, 0, xa);
        load_chunk(tid, kChunk, xb);
    }
    for (int p = tid; p < heads * kLaneGroup; p += kMergeThreads) {  // lane group: a head's splits
        const int hg = p / kLaneGroup, s = p % kLaneGroup;
        const int64_t row = (head0 + (hg < nh ? hg : 0)) * n_split + s;
        const bool live = s < n_active;
        const float ms = live ? load_l2(part_ml + 2 * row) : -INFINITY;
        const float ls = live ? load_l2(part_ml + 2 * row + 1) : 0.0f;
        const float M = group_max(ms);
        const float w = ms == -INFINITY ? 0.0f : expf(ms - M);
        const float L = group_sum(ls * w);
        sw[hg][s] = w;
        if (s == 0) rl[hg] = 1.0f / L;
    }
    __syncthreads();
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
        const int idx = tid + pass * kMergeThreads;
        if (idx >= quads) return;
        if (pass > 0) {
            load_chunk(idx, 0, xa);
            load_chunk(idx, kChunk, xb);
        }
        const int g = idx / (HD / 4), e0 = 4 * (idx % (HD / 4));
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        auto add_chunk = [&](int s0, const float4(&x)[kChunk]) {
#pragma unroll
            for (int j = 0; j < kChunk; ++j) {
                const float w = sw[g][s0 + j];  // 0 past n_active
                v.x += x[j].x * w, v.y += x[j].y * w, v.z += x[j].z * w, v.w += x[j].w * w;
            }
        };
        // n_active <= kLaneGroup (32) splits: at most four chunks, the last two loaded after
        // the first two are in.
        add_chunk(0, xa);
        if (n_active > 2 * kChunk) load_chunk(idx, 2 * kChunk, xa);
        if (n_active > kChunk) add_chunk(kChunk, xb);
        if (n_active > 3 * kChunk) load_chunk(idx, 3 * kChunk, xb);
        if (n_active > 2 * kChunk) add_chunk(2 * kChunk, xa);
        if (n_active > 3 * kChunk) add_chunk(3 * kChunk, xb);
        const float inv = rl[g];
        const float4 o = make_float4(v.x * inv, v.y * inv, v.z * inv, v.w * inv);
        const int64_t i0 = (head0 + g) * HD + e0;
        if (g < nh) *reinterpret_cast<float4*>(out + i0) = o;
        if (q8s) q8_store4(o, i0 / 4, g < nh, q8s, q8d);
    }
}

// A split block's end, shared by the split kernels once they hold their sums: a[k] is the
// unnormalised output of pair tid + k * kMergeThreads (head idx / HD, dim idx % HD: a lane group
// holds 32 consecutive dims of one head, a q8 block), bm / bl the heads' max and sum. With
// tickets (ticket: this head block's counter) the only split with positions writes the output
// itself (k_attention_combine's arithmetic: the same bits); otherwise the block writes its
// partial and (m, l) pairs, and with tickets the last of the head block's splits to finish
// merges them. sw / rl: the merge's shared scratch (rl may be bl: the merge writes it after
// bl is read); last: the block's shared flag.
template <int HB, int HD>
__device__ inline void finish_split_block(const float (&a)[HB * HD / kMergeThreads],
                                          const float* bm, const float* bl, int64_t head0, int nh,
                                          int split, int n_split, int n_active, float* part_ml,
                                          float* part_acc, int* ticket, int& last, float* out,
                                          int8_t* q8s, float2* q8d, float (&sw)[HB][kLaneGroup],
                                          float (&rl)[HB]) {
    constexpr int kPairs = HB * HD / kMergeThreads;
    static_assert(kPairs * kMergeThreads == HB * HD);
    const int tid = int(threadIdx.x);
    if (ticket && n_active == 1) {  // the only split: the output itself
#pragma unroll
        for (int k = 0; k < kPairs; ++k) {
            const int idx = tid + k * kMergeThreads, g = idx / HD, d = idx % HD;
            const float v = a[k] * (1.0f / bl[g]);  // as k_attention_combine: same bits
            const int64_t i = (head0 + g) * HD + d;
            if (g < nh) out[i] = v;
            if (q8s) q8_store_group(v, i, g < nh, q8s, q8d);
        }
        return;
    }
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
        const int idx = tid + k * kMergeThreads, g = idx / HD, d = idx % HD;
        if (g < nh) part_acc[((head0 + g) * n_split + split) * HD + d] = a[k];
    }
    if (tid < nh) {
        const int64_t row = (head0 + tid) * n_split + split;
        part_ml[2 * row] = bm[tid];
        part_ml[2 * row + 1] = bl[tid];
    }
    if (!ticket || !last_split_block(ticket, n_active, last)) return;
    merge_split_partials<HB, HD>(head0, nh, n_split, n_active, part_ml, part_acc, out, q8s, q8d, sw,
                                 rl);
}

}  // namespace tandem::hip

#pragma once
// Prefill attention in tiles (flash attention without matrix units; the Vulkan backend's
// attention_flash.comp): a block of 256 threads takes 32 query rows of one KV head, a row being
// (token t, query head g of the GQA group), row r = t * group + g within the KV head, and walks
// the cached positions those rows see in tiles of BC, each tile of K and V read into shared
// memory once (as f32) for all 32 rows. k_attention, one block per (token, head), reads every
// K/V row once per row: at 4096 tokens of an 8B model that, not the matmuls, held the Vulkan
// prefill (30 % faster there with this design).
// A cluster of 8 consecutive lanes owns a row: lane i holds dims 32k + 4i .. 32k + 4i + 3 of q
// and of the output, so the 8 lanes' 16-byte shared loads of one K/V row are 128 adjacent bytes
// and the clusters of a warp read the same row (a broadcast). A score is summed over its cluster
// with three xor shuffles (cluster_sum). Scores go 16 positions at a time into registers, then
// one max, one rescale of the accumulators and 16 exps: the online softmax per block of 16.
// Causal per row (position <= n_past + t), sliding window, softcap; scale applied to q.
// Clusters of 8 divide warps of 32 and wavefronts of 64 alike. Needs head_dim 64 / 128 / 256,
// 16-byte aligned cache rows, q and output (float4 loads and stores; the launcher checks these).
#include <cstdint>

#include "hip_attention_split.h"
#include "hip_launch_overlap.h"

namespace tandem::hip {

inline constexpr int kFlashThreads = 256;
inline constexpr int kFlashRows = kFlashThreads / kSplitCluster;  // query rows per block
inline constexpr int kFlashSub = 16;                              // positions per softmax block
inline constexpr int kFlashSharedBytes = 48 * 1024;               // static shared memory, at most

// Positions per K/V tile: 32 where both f32 tiles fit the static shared memory (head_dim <= 128),
// else 16.
template <int HeadDim>
inline constexpr int kFlashTile = 2 * 32 * int(sizeof(float)) * HeadDim <= kFlashSharedBytes ? 32
                                                                                             : 16;

// grid (ceil(n_tokens * group / 32), n_kv_head), block kFlashThreads; head_dim = 8 * DPL.
// n_past is read from device memory, so a replayed step graph attends at the new position.
template <int DPL, bool F16>
__global__ void __launch_bounds__(kFlashThreads)
    k_attention_flash(const float* q, int64_t n_tokens, int64_t n_head, int64_t n_kv_head,
                      int64_t window, float scale, float softcap, const void* kc, const void* vc,
                      const int32_t* n_past, float* out) {
    constexpr int hd = 8 * DPL, hd4 = hd / 4, NQ = DPL / 4, BC = kFlashTile<hd>;
    constexpr int kPieces = BC * hd / 8;  // 8-value pieces of a K (or V) tile
    static_assert(hd % 32 == 0 && BC % kFlashSub == 0 && kPieces % kFlashThreads == 0 &&
                  2 * BC * hd * int(sizeof(float)) <= kFlashSharedBytes);
    __shared__ float4 ks[BC * hd4];  // [position][head_dim / 4] of the current tile
    __shared__ float4 vs[BC * hd4];
    grid_wait();
    grid_launch_dependents();
    const int tid = int(threadIdx.x), cl = tid / kSplitCluster, ln = tid % kSplitCluster;
    const int64_t group = n_head / n_kv_head, kvh = blockIdx.y;
    const int64_t r0 = int64_t(blockIdx.x) * kFlashRows, row = r0 + cl;  // row = t * group + g
    const int64_t t = row / group, h = kvh * group + row % group;
    const bool live = t < n_tokens;
    const int64_t np = *n_past;
    const int64_t t_first = r0 / group, t_end = (r0 + kFlashRows - 1) / group;
    const int64_t hi = np + (t_end < n_tokens - 1 ? t_end : n_tokens - 1);  // last position seen
    const int64_t pos = np + t;  // this row's own position
    const int64_t lo = window > 0 && np + t_first + 1 > window ? np + t_first + 1 - window : 0;
    const int64_t row_lo = window > 0 && pos + 1 > window ? pos + 1 - window : 0;
    const int64_t kv_width = n_kv_head * hd;

    float qr[DPL], acc[DPL], m = -INFINITY, l = 0.0f;
#pragma unroll
    for (int i = 0; i < NQ; ++i) {
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (live) v = *reinterpret_cast<const float4*>(q + (t * n_head + h) * hd + 32 * i + 4 * ln);
        qr[4 * i] = v.x * scale, qr[4 * i + 1] = v.y * scale;
        qr[4 * i + 2] = v.z * scale, qr[4 * i + 3] = v.w * scale;
    }
#pragma unroll
    for (int i = 0; i < DPL; ++i) acc[i] = 0.0f;

    for (int64_t base = lo; base <= hi; base += BC) {
        // The tile's K and V rows as f32; positions past hi read as zeros (never used: a zero V
        // times a zero weight, where garbage could be a NaN).
#pragma unroll
        for (int k = 0; k < kPieces / kFlashThreads; ++k) {
            const int e = tid + k * kFlashThreads, j = e / (hd / 8), c = e % (hd / 8);
            float kr[8] = {}, vr[8] = {};
            if (base + j <= hi) {
                const int64_t at = (base + j) * kv_width + kvh * hd + 8 * c;
                load_dims<8, F16>(kc, at, kr);
                load_dims<8, F16>(vc, at, vr);
            }
            ks[j * hd4 + 2 * c] = make_float4(kr[0], kr[1], kr[2], kr[3]);
            ks[j * hd4 + 2 * c + 1] = make_float4(kr[4], kr[5], kr[6], kr[7]);
            vs[j * hd4 + 2 * c] = make_float4(vr[0], vr[1], vr[2], vr[3]);
            vs[j * hd4 + 2 * c + 1] = make_float4(vr[4], vr[5], vr[6], vr[7]);
        }
        __syncthreads();
        // The row's positions in this tile: [row_lo, pos] within [base, base + BC). The bounds
        // are the row's, so whole clusters skip or loop together: their shuffles never see a
        // lane outside the loop. Every block of 16 holds at least one of the positions.
        const int64_t first = base > row_lo ? base : row_lo;
        const int64_t last = base + BC - 1 < pos ? base + BC - 1 : pos;
        if (live && first <= last) {
            const int j0 = int(first - base), j1 = int(last - base);  // in the tile
            for (int sb = j0 & ~(kFlashSub - 1); sb <= j1; sb += kFlashSub) {
                float s[kFlashSub], mx = -INFINITY;
#pragma unroll
                for (int j = 0; j < kFlashSub; ++j) {
                    const float4* kp = ks + (sb + j) * hd4 + ln;
                    float d = 0.0f;
#pragma unroll
                    for (int i = 0; i < NQ; ++i) {
                        const float4 k4 = kp[8 * i];
                        d += qr[4 * i] * k4.x + qr[4 * i + 1] * k4.y + qr[4 * i + 2] * k4.z +
                             qr[4 * i + 3] * k4.w;
                    }
                    d = cluster_sum(d);
                    if (softcap > 0) d = softcap * tanhf(d / softcap);
                    s[j] = sb + j >= j0 && sb + j <= j1 ? d : -INFINITY;
                    mx = fmaxf(mx, s[j]);
                }
                const float m_new = fmaxf(m, mx), f = expf(m - m_new);  // m = -inf: f = 0
                l *= f;
#pragma unroll
                for (int i = 0; i < DPL; ++i) acc[i] *= f;
#pragma unroll
                for (int j = 0; j < kFlashSub; ++j) {
                    const float e = expf(s[j] - m_new);  // 0 outside the row's positions
                    l += e;
                    const float4* vp = vs + (sb + j) * hd4 + ln;
#pragma unroll
                    for (int i = 0; i < NQ; ++i) {
                        const float4 v4 = vp[8 * i];
                        acc[4 * i] += e * v4.x, acc[4 * i + 1] += e * v4.y;
                        acc[4 * i + 2] += e * v4.z, acc[4 * i + 3] += e * v4.w;
                    }
                }
                m = m_new;
            }
        }
        __syncthreads();  // the tile is rewritten next
    }
    if (!live) return;
    const float inv = 1.0f / l;  // the row's own position is always seen: l > 0
#pragma unroll
    for (int i = 0; i < NQ; ++i)
        *reinterpret_cast<float4*>(out + (t * n_head + h) * hd + 32 * i + 4 * ln) = make_float4(
            acc[4 * i] * inv, acc[4 * i + 1] * inv, acc[4 * i + 2] * inv, acc[4 * i + 3] * inv);
}

}  // namespace tandem::hip

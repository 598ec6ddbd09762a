#pragma once
// Split-K decode attention on the matrix units (hip_mma.h): k_attention_split's grid, splits and
// merge, a block taking HB query heads of one GQA group (rows of the 16-row fragments; the rest
// zero) and its waves tiles of 16 cached positions each, both products (S = Q K^T, O += P V) on
// 16 x 16 x 16 f16 fragments. k_attention_split spends ~55 dependent instructions a position
// and head on its dot, shuffles, exponentials and rescale; here a tile of 16 positions for all
// heads is 2 x head_dim / 16 fragment products and one rescale, so a wave keeps a tile's K/V
// loads in flight instead of waiting on each position's chain (H200, 8B at 16384 positions:
// 55.5 -> 28.4 us a call, docs/hip.md session 37). HB = 4, as k_attention_split's blocks, runs
// faster than 16 (each K / V row read once for a GQA group of up to 16) at every context
// measured: more blocks, and a merge of fewer heads a block (Qwen2.5-7B's group of 7, session
// 37); TANDEM_HIP_SPLIT_MMA_HEADS=16 takes 16.
//
// Waves work alone in the position loop (no block barrier): each has its own K and V tiles
// ([16][HD] as in the cache; V's fragments by transposing loads), reads q's fragments from the
// block's shared copy, and keeps head_dim / 16 accumulators and the next tile's loads in
// registers; two (wave32) or four (wave64) lanes a row take the online softmax
// of the tile through shared memory. The waves merge once at the end (shared memory), then the
// splits as k_attention_split's. q and P are rounded to f16 (the sums stay f32), as the prefill
// on the matrix units: f16 cache, head_dim 64 or 128, 16-byte aligned cache rows and q.
#include <cstdint>

#include "hip_attention_split.h"
#include "hip_attention_split_merge.h"
#include "hip_decode.h"
#include "hip_launch_overlap.h"
#include "hip_mma.h"

namespace tandem::hip {

inline constexpr int kSplitMmaRows = 16;  // the fragments' rows: query heads a block at most
inline constexpr int kSplitMmaTile = 16;  // positions a wave's tile

// Orders one wave's shared-memory stores before its lanes' loads of them (and the loads before
// later stores): the position loop has no block barrier.
__device__ inline void wave_sync() {
#if defined(TANDEM_HIP_ON_CUDA)
    __syncwarp();
#else
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#endif
}

// grid (n_split, n_kv_head * ceil(group / HB), n_tokens), block kSplitThreads; HB (4 or 16)
// query heads of a GQA group a block; tickets, part_ml, part_acc, out and q8 as
// k_attention_split's.
template <int HD, int HB>
__global__ void __launch_bounds__(kSplitThreads)
    k_attention_split_mma(const float* q, int64_t n_head, int64_t n_kv_head, int64_t window,
                          float scale, float softcap, const uint16_t* kc, const uint16_t* vc,
                          const int32_t* n_past, float* part_ml, float* part_acc, int* tickets,
                          float* out, int8_t* q8s, float2* q8d) {
    grid_wait();
    grid_launch_dependents();
#if TANDEM_MMA_KIND != 0
    constexpr int R = kSplitMmaRows, BC = kSplitMmaTile, HF = HD / 16;
    constexpr int NW = kSplitThreads / kMmaWave;       // waves a block
    constexpr int LDK = HD + 8;                        // halves a q / K / V row
    constexpr int LDS = BC + 4, LDP = BC + 8;          // floats an S row, halves a P row
    constexpr int LDC = HD + 8;                        // floats a row of a wave's accumulators
    constexpr int kWaveHalves = 2 * BC * LDK;          // a wave's K and V tiles
    constexpr int kLoads = BC * HD / 8 / kMmaWave;     // 16-byte K (and V) loads a lane a tile
    constexpr int LPR = kMmaWave / R, PPL = BC / LPR;  // softmax lanes a row, positions a lane
    // q first, then the waves' tiles; S (floats) and P (halves) of a wave's tile go where its K
    // rows were (read by then); the waves' accumulators at the end where all of it was, then
    // the merge's weights.
    static_assert(R == 16 && BC == 16 && HB <= R && HD % 32 == 0 && BC * HD / 8 % kMmaWave == 0);
    constexpr int kHalves = R * LDK + NW * kWaveHalves;
    static_assert(2 * R * LDS + R * LDP <= BC * LDK && 2 * NW * HB * LDC <= kHalves &&
                  2 * HB * kLaneGroup + 2 * HB <= kHalves);
    __shared__ __align__(16) uint16_t sm[kHalves];
    __shared__ float sf[NW][R];             // a wave's rows' rescale factors for the tile
    __shared__ float wm[NW][R], wl[NW][R];  // the waves' (m, l) a row
    __shared__ float cw[NW][HB], hm[HB], hl[HB];
    __shared__ int last;
    const int tid = int(threadIdx.x), wave = tid / kMmaWave, lane = tid % kMmaWave;
    const int split = int(blockIdx.x), n_split = int(gridDim.x);
    const SplitRun run = split_run<HB>(n_head, n_kv_head, window, n_past);
    if (tickets && split >= run.n_active) return;
    const int64_t kvh = run.kvh, h0 = run.h0, t = run.t, begin = run.begin, end = run.end;
    const int nh = run.nh, n_active = run.n_active;
    const int64_t kv_width = n_kv_head * HD;
    const int64_t head0 = t * n_head + h0;  // output row of head 0 of the block

    uint16_t* const qs = sm;                                 // [R][LDK] q (f16)
    uint16_t* const ks = sm + R * LDK + wave * kWaveHalves;  // [BC][LDK] K rows
    uint16_t* const vs = ks + BC * LDK;                      // [BC][LDK] V rows
    float* const ss = reinterpret_cast<float*>(ks);          // [R][LDS] S, after the product
    uint16_t* const sp = ks + 2 * R * LDS;                   // [R][LDP] P (f16)
    // A tile's loads, all at once, a row's 16-byte pieces on consecutive lanes (positions past
    // the split: zeros, weight 0 below).
    uint4 kw[kLoads], vw[kLoads];
    auto load_tile = [&](int64_t base) {
#pragma unroll
        for (int i = 0; i < kLoads; ++i) {
            const int e = lane + i * kMmaWave, j = e / (HD / 8), c = e % (HD / 8);
            const int64_t at = ((base + j) * kv_width + kvh * HD) / 8 + c;
            const bool in = base + j < end;
            kw[i] = in ? reinterpret_cast<const uint4*>(kc)[at] : make_uint4(0u, 0u, 0u, 0u);
            vw[i] = in ? reinterpret_cast<const uint4*>(vc)[at] : make_uint4(0u, 0u, 0u, 0u);
        }
    };
    // The wave's first tile goes out before q is staged (neither waits on the other), and each
    // later tile's while the one before is multiplied.
    int64_t base = begin + int64_t(BC) * wave;
    if (base < end) load_tile(base);
    // q rows (scaled, as f16; rows past the block's heads zero), read as A fragments a tile.
    for (int e = tid; e < R * HD / 8; e += kSplitThreads) {
        const int r = e / (HD / 8), c = e % (HD / 8);
        uint4 w = make_uint4(0u, 0u, 0u, 0u);
        if (r < nh) {
            const auto* p = reinterpret_cast<const float4*>(q + (head0 + r) * HD + 8 * c);
            const float4 a = p[0], b = p[1];
            const float v[8] = {a.x * scale, a.y * scale, a.z * scale, a.w * scale,
                                b.x * scale, b.y * scale, b.z * scale, b.w * scale};
            w = pack8_half(v);
        }
        *reinterpret_cast<uint4*>(qs + r * LDK + 8 * c) = w;
    }
    MmaAcc o[HF];
#pragma unroll
    for (int i = 0; i < HF; ++i) mma_zero(o[i]);
    __syncthreads();

    const int sr = lane / LPR, part = lane % LPR;  // softmax: row, share of the tile
    float m = -1e30f, l = 0.0f;  // row sr's running max and sum (the same in its LPR lanes)
    for (; base < end; base += int64_t(BC) * NW) {
        wave_sync();  // the last tile's P and V read
#pragma unroll
        for (int i = 0; i < kLoads; ++i) {
            const int e = lane + i * kMmaWave, j = e / (HD / 8), c = e % (HD / 8);
            *reinterpret_cast<uint4*>(ks + j * LDK + 8 * c) = kw[i];
            *reinterpret_cast<uint4*>(vs + j * LDK + 8 * c) = vw[i];
        }
        if (base + int64_t(BC) * NW < end) load_tile(base + int64_t(BC) * NW);
        wave_sync();
        // S = q K^T over head_dim in two chains of products (half the dependent latency).
        MmaAcc s[2];
        mma_zero(s[0]);
        mma_zero(s[1]);
#pragma unroll
        for (int i = 0; i < HF; ++i) {
            MmaA qa;
            mma_load_a(qa, qs + 16 * i, LDK, lane);
            MmaB kb;  // B(d, j) = K[j][16i + d]: the K rows are [n][k]
            mma_load_b(kb, ks + 16 * i, LDK, lane);
            mma_run(s[i % 2], qa, kb);
        }
        wave_sync();  // K read before S takes its place
#pragma unroll
        for (int e = 0; e < kMmaAccItems; ++e)
            ss[mma_acc_m(lane, e) * LDS + mma_acc_n(lane, e)] = s[0].v[e] + s[1].v[e];
        wave_sync();
        {
            float sv[PPL], mx = -1e30f;
#pragma unroll
            for (int j = 0; j < PPL; ++j) {
                float d = ss[sr * LDS + part * PPL + j];
                if (softcap > 0) d = softcap * tanhf(d / softcap);
                sv[j] = base + part * PPL + j < end ? d : -1e30f;
                mx = fmaxf(mx, sv[j]);
            }
#pragma unroll
            for (int off = 1; off < LPR; off <<= 1) mx = fmaxf(mx, lane_xor(mx, off, LPR));
            const float m_new = fmaxf(m, mx), fac = expf(m - m_new);
            float sum = 0.0f, p[PPL];
#pragma unroll
            for (int j = 0; j < PPL; ++j) {
                p[j] = sv[j] > -1e30f ? expf(sv[j] - m_new) : 0.0f;
                sum += p[j];
            }
#pragma unroll
            for (int off = 1; off < LPR; off <<= 1) sum += lane_xor(sum, off, LPR);
            l = l * fac + sum;
            m = m_new;
#pragma unroll
            for (int j = 0; j < PPL; j += 2)
                *reinterpret_cast<uint32_t*>(sp + sr * LDP + part * PPL + j) =
                    pack_half2(p[j], p[j + 1]);
            if (part == 0) sf[wave][sr] = fac;
        }
        wave_sync();
        MmaA pa;  // P[row][position]
        mma_load_a(pa, sp, LDP, lane);
#pragma unroll
        for (int i = 0; i < HF; ++i) {
#pragma unroll
            for (int e = 0; e < kMmaAccItems; ++e) o[i].v[e] *= sf[wave][mma_acc_m(lane, e)];
            MmaB vb;  // B(j, d) = V[j][16i + d]: the V rows are [k][n]
            mma_load_b_kn(vb, vs + 16 * i, LDK, lane);
            mma_run(o[i], pa, vb);
        }
    }
    // The waves merge, the live rows at once: M = max m, L = sum l e^(m - M), acc = sum acc
    // e^(m - M) (waves without positions weigh nothing; a split without any gives M = -inf).
    if (part == 0) wm[wave][sr] = l > 0.0f ? m : -INFINITY, wl[wave][sr] = l;
    __syncthreads();  // every wave's tiles done: the accumulators take their place
    float* const cacc = reinterpret_cast<float*>(sm);  // [NW][HB][LDC]: rows past nh unused
#pragma unroll
    for (int i = 0; i < HF; ++i)
#pragma unroll
        for (int e = 0; e < kMmaAccItems; ++e)
            if (mma_acc_m(lane, e) < nh)
                cacc[(wave * HB + mma_acc_m(lane, e)) * LDC + 16 * i + mma_acc_n(lane, e)] =
                    o[i].v[e];
    if (tid < HB) {
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < NW; ++w) M = fmaxf(M, wm[w][tid]);
        float L = 0.0f;
#pragma unroll
        for (int w = 0; w < NW; ++w) {
            const float x = wm[w][tid] == -INFINITY ? 0.0f : expf(wm[w][tid] - M);
            cw[w][tid] = x;
            L += wl[w][tid] * x;
        }
        hm[tid] = M, hl[tid] = L;
    }
    __syncthreads();
    // Thread tid takes (row, dim) pairs tid, tid + 128, ...: a lane group holds 32 consecutive
    // dims of one head (a q8 block of the output); pairs of rows past nh (whole lane groups)
    // are skipped.
    constexpr int kPairs = HB * HD / kSplitThreads;
    static_assert(kPairs * kSplitThreads == HB * HD);
    float a[kPairs];
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
        const int idx = tid + k * kSplitThreads, g = idx / HD, d = idx % HD;
        float v = 0.0f;
        if (g < nh)
#pragma unroll
            for (int w = 0; w < NW; ++w) v += cacc[(w * HB + g) * LDC + d] * cw[w][g];
        a[k] = v;
    }
    // The merge's weights go where the accumulators were (written after the ticket's barriers).
    auto& sw = *reinterpret_cast<float(*)[HB][kLaneGroup]>(sm);
    auto& rl = *reinterpret_cast<float(*)[HB]>(reinterpret_cast<float*>(sm) + HB * kLaneGroup);
    finish_split_block<HB, HD>(a, hm, hl, head0, nh, split, n_split, n_active, part_ml, part_acc,
                               tickets ? tickets + t * gridDim.y + blockIdx.y : nullptr, last, out,
                               q8s, q8d, sw, rl);
#endif
}

}  // namespace tandem::hip
